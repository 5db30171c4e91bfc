// Plugin file checks, policy L4 (DESIGN 4): everything about a plugin library
// file is checked before any of its code runs, on one open descriptor:
//   - the file exists and opens (a bare name is first found in the dynamic
//     loader's search directories, never in the current directory, L2);
//   - fstat: a regular file, not world-writable;
//   - ELF header: magic, class and byte order of this process, ET_DYN, and
//     this build's machine (EM_X86_64, EM_AARCH64);
//   - when the manifest gives one, the SHA-256 of the file's bytes.
// The descriptor stays open in CheckedLibrary and is the one the loader loads
// (through /proc/self/fd/N), so the file cannot be swapped between check and
// load. Every failure is ROOTSPAN_ERR_PLUGIN_REJECTED (ROOTSPAN_ERR_IO for a
// read error), operation "load_plugin", policy "L4".
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/manifest.hpp"

namespace rootspan {

// An owned file descriptor, closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd &&other) noexcept : fd_(other.release()) {}
  UniqueFd &operator=(UniqueFd &&other) noexcept;
  UniqueFd(const UniqueFd &) = delete;
  UniqueFd &operator=(const UniqueFd &) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A plugin file that passed L4, held open.
struct CheckedLibrary {
  UniqueFd fd;
  std::filesystem::path path;         // the file that was opened (found, when a bare name was given)
  std::string requested;              // the path or bare name as asked for, for messages
  std::optional<std::string> sha256;  // the digest, when one was checked
  std::string context;                // "manifest F entry N \"name\"" or "", prefixed to messages
  dev_t device = 0;
  ino_t inode = 0;
  std::uint64_t size = 0;

  // "/proc/self/fd/N": the name under which the loader opens this very file.
  std::string descriptor_path() const;
};

// Runs the L4 checks on path (absolute, or a bare file name for the system
// search) and, when sha256 is given (64 lowercase hex digits), compares it
// with the digest of the opened file.
Result<CheckedLibrary> check_plugin_file(const std::filesystem::path &path,
                                         std::optional<std::string> sha256 = std::nullopt);

// The same for a manifest entry: its resolved library and sha256. Messages (of
// this check and of the later load) start with the entry's description, so
// they name the manifest file, the entry index and its name.
Result<CheckedLibrary> check_plugin_file(const ManifestEntry &entry);

// The directories dlopen searches for a bare name, in its order: DT_RPATH,
// LD_LIBRARY_PATH (ignored by the loader for set-uid programs), DT_RUNPATH and
// the system directories, as the dynamic loader reports them
// (dlinfo RTLD_DI_SERINFO). Relative entries are dropped: they would resolve
// against the current directory. /etc/ld.so.cache is not consulted.
std::vector<std::filesystem::path> library_search_dirs();

// The first dir/name of library_search_dirs() that exists, or nullopt.
std::optional<std::filesystem::path> find_in_library_search_dirs(std::string_view name);

// The lowercase hex SHA-256 of the whole file behind fd, read with pread from
// offset 0 (the descriptor's offset is untouched).
Result<std::string> sha256_of_descriptor(int fd, const std::filesystem::path &for_messages);

}  // namespace rootspan
