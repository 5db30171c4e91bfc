#include "core/loader/trusted_path.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace rootspan {

namespace {

namespace fs = std::filesystem;

std::string mode_text(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

bool trusted_owner(uid_t owner) { return owner == 0 || owner == ::geteuid(); }

std::string expected_owner() {
  const uid_t self = ::geteuid();
  return self == 0 ? std::string("root") : "root or " + describe_owner(self);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

TrustViolation violation(const fs::path &offending, const fs::path &checked, const struct stat &st,
                         std::string problem) {
  TrustViolation v;
  v.offending = offending;
  v.checked = checked;
  v.owner = st.st_uid;
  v.mode = st.st_mode;
  v.problem = std::move(problem);
  return v;
}

TrustViolation unreadable(const fs::path &offending, const fs::path &checked, const std::string &what, int err) {
  TrustViolation v;
  v.offending = offending;
  v.checked = checked;
  v.problem = "cannot be checked (" + what + ": " + std::strerror(err) + ")";
  return v;
}

// One component: its owner, and its write bits. above_target: a folder above
// the file or folder being checked, where a sticky bit makes others' write
// permission harmless.
std::optional<TrustViolation> judge(const fs::path &component, const fs::path &checked, const struct stat &st,
                                    bool above_target) {
  if (!trusted_owner(st.st_uid)) return violation(component, checked, st, "owned by " + describe_owner(st.st_uid));
  const bool sticky_folder = above_target && S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX);
  if ((st.st_mode & S_IWOTH) && !sticky_folder) return violation(component, checked, st, "world-writable");
  if ((st.st_mode & S_IWGRP) && !sticky_folder) return violation(component, checked, st, "group-writable");
  return std::nullopt;
}

// The path the kernel knows the descriptor's file by.
std::optional<fs::path> real_path_of(int fd) {
  std::error_code ec;
  fs::path real = fs::read_symlink("/proc/self/fd/" + std::to_string(fd), ec);
  if (ec || !real.is_absolute()) return std::nullopt;  // a memfd, a socket, a deleted file ...
  return real;
}

}  // namespace

std::string describe_owner(uid_t uid) {
  std::string text = "uid " + std::to_string(uid);
  struct passwd entry {};
  struct passwd *found = nullptr;
  std::vector<char> buffer(4096);
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) {
    text += " (" + std::string(found->pw_name) + ")";
  }
  return text;
}

std::string TrustViolation::describe() const {
  std::string text = offending.string() + " ";
  if (checked != offending && !checked.empty()) text = "folder " + text;
  text += problem;
  if (problem.rfind("cannot be checked", 0) != 0 && !checked.empty()) {
    text += " (expected owner " + expected_owner() + " and no write permission for group or others" +
            (checked != offending ? " unless the folder is sticky" : "") + ", actual owner " + describe_owner(owner) +
            ", mode " + mode_text(mode) + ")";
  }
  if (checked != offending && !checked.empty()) text += ", above " + checked.string();
  return text;
}

std::optional<TrustViolation> find_trust_violation(int fd) {
  struct stat target {};
  if (::fstat(fd, &target) != 0) return unreadable("descriptor " + std::to_string(fd), {}, "fstat", errno);
  auto real = real_path_of(fd);
  if (!real || real->string().find(" (deleted)") != std::string::npos) {
    TrustViolation v = violation("descriptor " + std::to_string(fd), {}, target, "has no path in the file system");
    v.problem += " (expected a file reachable from /)";
    return v;
  }
  const fs::path checked = *real;

  // Walk from "/" without following links: the kernel's path for the
  // descriptor has none, so a link met here means a folder was swapped.
  Fd folder(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (folder.get() < 0) return unreadable("/", checked, "open", errno);
  struct stat st {};
  if (::fstat(folder.get(), &st) != 0) return unreadable("/", checked, "fstat", errno);
  fs::path walked = "/";
  std::vector<fs::path> components;
  for (const fs::path &part : checked.relative_path()) components.push_back(part);
  if (components.empty()) {
    if (st.st_dev != target.st_dev || st.st_ino != target.st_ino) {
      return violation(walked, checked, target, "changed while it was being checked");
    }
    return judge(walked, checked, st, false);
  }
  if (auto v = judge(walked, checked, st, true)) return v;

  for (std::size_t i = 0; i < components.size(); ++i) {
    const bool last = i + 1 == components.size();
    walked /= components[i];
    Fd next(::openat(folder.get(), components[i].c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0) return unreadable(walked, checked, "open", errno);
    if (::fstat(next.get(), &st) != 0) return unreadable(walked, checked, "fstat", errno);
    if (!last && !S_ISDIR(st.st_mode)) {
      return violation(walked, checked, st, "is not a folder (it changed while the path was being checked)");
    }
    if (auto v = judge(walked, checked, st, !last)) return v;
    if (last && (st.st_dev != target.st_dev || st.st_ino != target.st_ino)) {
      return violation(walked, checked, st,
                       "is no longer the file that was opened (it was replaced while being checked)");
    }
    folder.reset(::dup(next.get()));
    if (folder.get() < 0) return unreadable(walked, checked, "dup", errno);
  }
  return std::nullopt;
}

std::optional<TrustViolation> find_trust_violation(const fs::path &path) {
  // O_PATH: a FIFO or a device is not opened for real, only named.
  Fd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (fd.get() < 0) return unreadable(path, path, "open", errno);
  return find_trust_violation(fd.get());
}

}  // namespace rootspan
