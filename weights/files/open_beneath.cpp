#include "weights/files/open_beneath.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <utility>
#include <vector>

#include "core/text/quoting.hpp"
#include "weights/files/portable_path.hpp"

namespace rootspan::weights {

namespace {

namespace fs = std::filesystem;

// As many links as the kernel follows in one path before ELOOP.
constexpr int kMaxLinks = 40;

class Descriptor {
 public:
  Descriptor() = default;
  explicit Descriptor(int fd) : fd_(fd) {}
  Descriptor(Descriptor &&other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Descriptor &operator=(Descriptor &&other) noexcept {
    if (this != &other) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Descriptor(const Descriptor &) = delete;
  Descriptor &operator=(const Descriptor &) = delete;
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

int open_at(int dir, const char *name, int flags) {
  int fd = -1;
  do {
    fd = ::openat(dir, name, flags);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

// openat2 beneath `dir`; -1 with errno ENOSYS where the kernel lacks it.
int open_beneath_kernel(int dir, const char *name) {
#ifdef SYS_openat2
  open_how how{};
  how.flags = static_cast<std::uint64_t>(kInputOpenFlags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  long fd = -1;
  do {
    fd = ::syscall(SYS_openat2, dir, name, &how, sizeof how);
  } while (fd < 0 && errno == EINTR);
  return static_cast<int>(fd);
#else
  (void)dir;
  (void)name;
  errno = ENOSYS;
  return -1;
#endif
}

std::string folder_list(std::span<const fs::path> folders) {
  std::string out;
  for (const auto &folder : folders) out += (out.empty() ? "" : ", ") + quoted_text(folder.string());
  return out;
}

struct Opener {
  const fs::path &folder;
  std::string_view name;
  std::span<const fs::path> trusted;
  rootspan_status code;
  std::string operation;
  std::string_view subject;

  std::string named() const { return quoted_text(subject) + ": file name " + quoted_text(name); }

  Diagnostic io_error(const std::string &what, int error) const {
    return make_error(ROOTSPAN_ERR_IO, operation, named() + ": " + what + ": " + std::strerror(error));
  }

  Diagnostic escapes(const fs::path &target) const {
    return make_error(code, operation,
                      named() + " leads out of the checkpoint's trusted folders (" + folder_list(trusted) +
                          ") through a symbolic link, to " + quoted_text(target.string()) + "; copy the file into " +
                          quoted_text(folder.string()) +
                          ", or pass the folder that really holds the checkpoint's files");
  }

  // The trusted folder `path` lies in, or trusted.size().
  std::size_t holder_of(const fs::path &path) const {
    for (std::size_t i = 0; i < trusted.size(); ++i) {
      if (lies_inside(path, trusted[i])) return i;
    }
    return trusted.size();
  }

  // Goes on at absolute, normal `target`: from the descriptor of the trusted
  // folder that holds it, else from "/" (a link may pass through folders
  // outside on its way back in; only the file itself must lie inside).
  Result<void> reroot(const std::vector<Descriptor> &roots, const fs::path &target, Descriptor &at, fs::path &at_path,
                      std::deque<std::string> &rest) const {
    const std::size_t holder = holder_of(target);
    const fs::path base = holder < trusted.size() ? trusted[holder] : fs::path("/");
    Descriptor next(holder < trusted.size() ? ::fcntl(roots[holder].get(), F_DUPFD_CLOEXEC, 0)
                                            : open_at(AT_FDCWD, "/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (next.get() < 0) return io_error("cannot open " + quoted_text(base.string()), errno);
    rest.clear();
    for (const auto &part : target.lexically_relative(base)) {
      if (part != "." && !part.empty()) rest.push_back(part.string());
    }
    at = std::move(next);
    at_path = base;
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  }

  // The O_NOFOLLOW walk: `at` is a descriptor of `at_path` (a real folder),
  // `rest` the components still to open. Every link is resolved here, so
  // the kernel never follows one; inside a trusted folder the walk always
  // goes on from that folder's descriptor.
  Result<int> walk(const std::vector<Descriptor> &roots, Descriptor at, fs::path at_path,
                   std::deque<std::string> rest) const {
    int links = 0;
    while (!rest.empty()) {
      std::string component = std::move(rest.front());
      rest.pop_front();
      if (component == "..") {
        const fs::path up = at_path.parent_path();
        BOOST_OUTCOME_TRY(reroot(roots, rest.empty() ? up : up / join(rest), at, at_path, rest));
        continue;
      }
      const fs::path here = at_path / component;
      if (holder_of(at_path) == trusted.size() && holder_of(here) < trusted.size()) {
        // Entering a trusted folder from outside: go on from its descriptor.
        BOOST_OUTCOME_TRY(reroot(roots, rest.empty() ? here : here / join(rest), at, at_path, rest));
        continue;
      }
      const bool last = rest.empty();
      char target[PATH_MAX + 1];
      const ssize_t length = ::readlinkat(at.get(), component.c_str(), target, PATH_MAX);
      if (length >= 0) {
        if (++links > kMaxLinks) {
          return make_error(code, operation,
                            named() + " passes more than " + std::to_string(kMaxLinks) +
                                " symbolic links; replace the links with the files they should lead to");
        }
        fs::path next = fs::path(std::string(target, static_cast<std::size_t>(length)));
        if (next.is_relative()) next = at_path / next;
        if (!rest.empty()) next /= join(rest);
        next = next.lexically_normal();
        BOOST_OUTCOME_TRY(reroot(roots, next, at, at_path, rest));
        if (rest.empty()) return make_error(code, operation, named() + " leads to a folder, not a file");
        continue;
      }
      if (errno != EINVAL && errno != ENOENT) return io_error("cannot read " + quoted_text(here.string()), errno);
      if (last) {
        if (holder_of(here) == trusted.size()) return escapes(here);
        const int fd = open_at(at.get(), component.c_str(), kInputOpenFlags | O_NOFOLLOW);
        // ELOOP: it became a link after it was read as a file.
        if (fd < 0) return io_error("cannot open " + quoted_text(here.string()), errno);
        return fd;
      }
      Descriptor next(open_at(at.get(), component.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (next.get() < 0) return io_error("cannot open folder " + quoted_text(here.string()), errno);
      at = std::move(next);
      at_path = here;
    }
    return make_error(code, operation, named() + " names no file");
  }

  // Where the opened `fd` really lies, as the kernel tells it, which must be
  // inside a trusted folder, and lead back to the same file (device and
  // inode). Every branch ends here: both open a folder by path (the start
  // folder, and the fallback every trusted folder), and a folder swapped for
  // a link between the check by name and that open would lead the walk, or
  // openat2 beneath it, into a folder never trusted; only the file's own
  // location shows that.
  Result<fs::path> located_inside(int fd) const {
    std::error_code error;
    const fs::path real = fs::read_symlink("/proc/self/fd/" + std::to_string(fd), error);
    if (error || real.empty() || real.is_relative()) {
      return io_error("cannot tell where the opened file lies (/proc/self/fd/" + std::to_string(fd) + ")",
                      error ? error.value() : ENOENT);
    }
    if (holder_of(real) == trusted.size()) return escapes(real);
    struct stat opened {
    }, named_there{};
    if (::fstat(fd, &opened) != 0) return io_error("cannot stat the opened file " + quoted_text(real.string()), errno);
    if (::stat(real.c_str(), &named_there) != 0 || opened.st_dev != named_there.st_dev ||
        opened.st_ino != named_there.st_ino) {
      return make_error(code, operation,
                        named() + " was opened as " + quoted_text(real.string()) +
                            ", which does not lead back to it (device:inode " + identity(opened) + ", but that path " +
                            (named_there.st_ino == 0 ? std::string("cannot be read") : "is " + identity(named_there)) +
                            "; a deleted file, or one moved during the open)");
    }
    return real;
  }

  static std::string identity(const struct stat &s) {
    return std::to_string(s.st_dev) + ":" + std::to_string(s.st_ino);
  }

  static fs::path join(const std::deque<std::string> &parts) {
    fs::path out;
    for (const auto &part : parts) out /= part;
    return out;
  }
};

}  // namespace

Result<std::shared_ptr<const InputFile>> open_beneath(const fs::path &folder, std::string_view name,
                                                      std::span<const fs::path> trusted, rootspan_status code,
                                                      std::string operation, std::string_view subject) {
  if (auto portable = check_portable_name(name, code, operation, subject); !portable) return portable.error();
  const Opener opener{folder, name, trusted, code, operation, subject};
  const std::string name_text(name);
  const fs::path shown = folder / name_text;

  Descriptor start(open_at(AT_FDCWD, folder.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (start.get() < 0) return opener.io_error("cannot open the folder " + quoted_text(folder.string()), errno);

  int fd = open_beneath_kernel(start.get(), name_text.c_str());
  if (fd < 0 && (errno == EXDEV || errno == ENOSYS || errno == EPERM)) {
    // EXDEV: a link leads out of `folder` (maybe into another trusted one);
    // ENOSYS/EPERM: no openat2 here, or a seccomp filter refuses it.
    std::vector<Descriptor> roots;
    for (const auto &root : trusted) {
      Descriptor opened(open_at(AT_FDCWD, root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (opened.get() < 0) {
        return opener.io_error("cannot open the trusted folder " + quoted_text(root.string()), errno);
      }
      roots.push_back(std::move(opened));
    }
    // Where `folder` really is, from its descriptor.
    std::error_code error;
    const fs::path real = fs::read_symlink("/proc/self/fd/" + std::to_string(start.get()), error);
    const fs::path start_path = error ? fs::canonical(folder, error) : real;
    if (error) return opener.io_error("cannot resolve the folder " + quoted_text(folder.string()), error.value());
    std::deque<std::string> rest;
    for (const auto &part : fs::path(name_text)) rest.push_back(part.string());
    auto walked = opener.walk(roots, std::move(start), start_path, std::move(rest));
    if (!walked) return walked.error();
    fd = walked.value();
  } else if (fd < 0) {
    const int error = errno;
    if (error == ELOOP) {
      return make_error(code, operation,
                        opener.named() + " cannot be resolved (" + quoted_text(shown.string()) + "): " +
                            std::strerror(error) + "; replace the symbolic links with the files they should lead to");
    }
    return opener.io_error("cannot open " + quoted_text(shown.string()), error);
  }
  Descriptor opened(fd);
  auto real = opener.located_inside(opened.get());
  if (!real) return real.error();
  auto file = InputFile::adopt(opened.release(), real.value(), std::move(operation), code);
  if (!file) return file.error();
  return std::make_shared<const InputFile>(std::move(file).value());
}

}  // namespace rootspan::weights
