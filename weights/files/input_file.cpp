#include "weights/files/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include "core/text/quoting.hpp"

namespace rootspan::weights {

namespace outcome = BOOST_OUTCOME_V2_NAMESPACE;

InputFile::InputFile(std::filesystem::path path, int fd, std::uint64_t size, std::string operation)
    : path_(std::move(path)), fd_(fd), size_(size), operation_(std::move(operation)) {}

InputFile::InputFile(InputFile &&other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      operation_(std::move(other.operation_)) {}

InputFile &InputFile::operator=(InputFile &&other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    operation_ = std::move(other.operation_);
  }
  return *this;
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// What a file that is not a regular file is, for causes.
const char *file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a file";
}

}  // namespace

Result<InputFile> InputFile::open(const std::filesystem::path &path, std::string operation,
                                  rootspan_status not_regular) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), kInputOpenFlags);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int error = errno;
    return make_error(ROOTSPAN_ERR_IO, std::move(operation),
                      quoted_text(path.string()) + ": cannot open: " + std::strerror(error));
  }
  return adopt(fd, path, std::move(operation), not_regular);
}

Result<InputFile> InputFile::adopt(int fd, const std::filesystem::path &path, std::string operation,
                                   rootspan_status not_regular) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    return make_error(ROOTSPAN_ERR_IO, std::move(operation),
                      quoted_text(path.string()) + ": cannot stat: " + std::strerror(error));
  }
  // A directory, FIFO or device has no stable size to check offsets against.
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return make_error(not_regular, std::move(operation),
                      quoted_text(path.string()) + ": not a regular file (it is " + file_kind(info.st_mode) + ")");
  }
  return InputFile(path, fd, static_cast<std::uint64_t>(info.st_size), std::move(operation));
}

Result<void> InputFile::read_exact(std::span<std::byte> into, std::uint64_t offset) const {
  std::size_t done = 0;
  while (done < into.size()) {
    const ssize_t got = ::pread(fd_, into.data() + done, into.size() - done, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      return make_error(ROOTSPAN_ERR_IO, operation_,
                        quoted_text(path_.string()) + ": read of " + std::to_string(into.size()) + " bytes at offset " +
                            std::to_string(offset) + " failed: " + std::strerror(error));
    }
    if (got == 0) {
      return make_error(ROOTSPAN_ERR_IO, operation_,
                        quoted_text(path_.string()) + ": file ended early (truncated since it was opened?): read " +
                            std::to_string(done) + " of " + std::to_string(into.size()) + " bytes at offset " +
                            std::to_string(offset),
                        into.size(), done);
    }
    done += static_cast<std::size_t>(got);
  }
  return outcome::success();
}

Result<std::uint64_t> InputFile::current_size() const {
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    const int error = errno;
    return make_error(ROOTSPAN_ERR_IO, operation_,
                      quoted_text(path_.string()) + ": cannot stat: " + std::strerror(error));
  }
  return static_cast<std::uint64_t>(info.st_size);
}

std::filesystem::path InputFile::real_path() const {
  std::error_code error;
  auto real = std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd_), error);
  if (error || real.empty() || !real.is_absolute()) return path_;
  return real;
}

Result<std::string> read_whole_file(const InputFile &file, std::uint64_t max_bytes, rootspan_status too_large_code,
                                    std::string operation) {
  const std::uint64_t size = file.size();
  if (size > max_bytes) {
    return make_error(too_large_code, std::move(operation),
                      quoted_text(file.path().string()) + ": file is " + std::to_string(size) +
                          " bytes, more than the limit of " + std::to_string(max_bytes),
                      max_bytes, size);
  }
  std::string text(static_cast<std::size_t>(size), '\0');
  auto read = file.read_exact(std::as_writable_bytes(std::span(text)), 0);
  if (!read) return read.error();
  return text;
}

Result<std::string> read_whole_file(const std::filesystem::path &path, std::uint64_t max_bytes,
                                    rootspan_status too_large_code, std::string operation) {
  auto file = InputFile::open(path, operation, too_large_code);
  if (!file) return file.error();
  return read_whole_file(file.value(), max_bytes, too_large_code, std::move(operation));
}

}  // namespace rootspan::weights
