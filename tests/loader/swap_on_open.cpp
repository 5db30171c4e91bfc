// The open()/openat() wrappers behind swap_on_open.hpp. They are defined in
// the test executable, so they take precedence over the C library's for every
// caller in the process, including the statically linked core; each forwards
// to the next definition (the C library's, or a sanitizer's interceptor).
// Both the plain and the 64-bit names are defined, whichever the core's build
// uses, so _FILE_OFFSET_BITS must not rename them here.
#undef _FILE_OFFSET_BITS
#include "swap_on_open.hpp"

#include <dlfcn.h>
#include <fcntl.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace rootspan::testing {
namespace {

std::mutex hook_mutex;
std::string armed_path;
std::string armed_replacement;
bool swapped = false;

using open_fn = int (*)(const char *, int, ...);
using openat_fn = int (*)(int, const char *, int, ...);

void after_open(const char *path, int flags, int fd) {
  if (fd < 0 || (flags & O_PATH) != 0 || path == nullptr) return;
  std::lock_guard lock(hook_mutex);
  if (armed_path.empty() || armed_path != path) return;
  const std::string original = armed_path + ".orig";
  if (std::rename(armed_path.c_str(), original.c_str()) == 0 &&
      std::rename(armed_replacement.c_str(), armed_path.c_str()) == 0) {
    swapped = true;
  }
  armed_path.clear();
}

mode_t mode_argument(int flags, va_list args) {
  return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE ? static_cast<mode_t>(va_arg(args, int)) : 0;
}

template <typename Fn>
Fn next(const char *name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
}

}  // namespace

bool swap_on_next_open(const std::string &path, const std::string &replacement) {
  std::lock_guard lock(hook_mutex);
  if (!armed_path.empty()) return false;
  armed_path = path;
  armed_replacement = replacement;
  swapped = false;
  return true;
}

bool swap_happened() {
  std::lock_guard lock(hook_mutex);
  return swapped;
}

void disarm_swap_on_open() {
  std::lock_guard lock(hook_mutex);
  armed_path.clear();
}

}  // namespace rootspan::testing

using rootspan::testing::after_open;
using rootspan::testing::mode_argument;
using rootspan::testing::next;
using rootspan::testing::open_fn;
using rootspan::testing::openat_fn;

extern "C" int open(const char *path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_argument(flags, args);
  va_end(args);
  static const auto real = next<open_fn>("open");
  const int fd = real(path, flags, mode);
  after_open(path, flags, fd);
  return fd;
}

extern "C" int open64(const char *path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_argument(flags, args);
  va_end(args);
  static const auto real = next<open_fn>("open64");
  const int fd = real(path, flags, mode);
  after_open(path, flags, fd);
  return fd;
}

extern "C" int openat(int dir, const char *path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_argument(flags, args);
  va_end(args);
  static const auto real = next<openat_fn>("openat");
  const int fd = real(dir, path, flags, mode);
  if (dir == AT_FDCWD || path[0] == '/') after_open(path, flags, fd);  // path is nonnull, as for openat(2)
  return fd;
}

extern "C" int openat64(int dir, const char *path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_argument(flags, args);
  va_end(args);
  static const auto real = next<openat_fn>("openat64");
  const int fd = real(dir, path, flags, mode);
  if (dir == AT_FDCWD || path[0] == '/') after_open(path, flags, fd);  // path is nonnull, as for openat(2)
  return fd;
}
