#include "replacing_write.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace rootspan::cli {

namespace {

// The process's umask, read without changing it for long.
mode_t current_umask() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}

std::string failed(const std::string &step, int error) { return step + ": " + std::strerror(error); }

}  // namespace

std::string write_replacing(const std::string &path, std::string_view text) {
  const std::filesystem::path target(path);
  const std::filesystem::path folder = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  // Hidden, in the same folder (so that the rename stays on one file system).
  const std::string pattern = (folder / ("." + target.filename().string() + ".XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);  // O_CREAT | O_EXCL, mode 0600
  if (fd < 0) return failed("cannot create a new file in " + folder.string(), errno);
  const std::string temporary(name.data());
  const auto give_up = [&](const std::string &step) {
    const int error = errno;
    ::close(fd);
    ::unlink(temporary.c_str());
    return failed(step, error);
  };
  if (::fchmod(fd, 0666 & ~current_umask()) != 0) return give_up("cannot set the mode of " + temporary);
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return give_up("cannot write " + temporary);
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    return failed("cannot write " + temporary, error);
  }
  // rename replaces whatever `path` names, a link included, and follows none.
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    return failed("cannot rename " + temporary + " to " + path, error);
  }
  return "";
}

}  // namespace rootspan::cli
