// Plugin file checks, policy L4 (docs/loader-policies.md): everything about a plugin library
// file is checked before any of its code runs, on one open descriptor:
//   - the file exists and opens (a bare name is first found in the dynamic
//     loader's search directories, never in the current directory, L2);
//   - fstat: a regular file;
//   - the trust rule (core/loader/trusted_path.hpp): the file and every folder above
//     it owned by root or the effective user, not group- or world-writable;
//   - ELF header: magic, class and byte order of this process, ET_DYN, and
//     this build's machine (EM_X86_64, EM_AARCH64);
//   - when the manifest gives one, the SHA-256 of the file's bytes: the bytes
//     are first copied into a memfd that is then sealed against any change,
//     the memfd is hashed, and the memfd is what is loaded;
//   - its dependencies (core/loader/plugin_dependencies.hpp), each under the same
//     checks on its own descriptor.
// The descriptor stays open in CheckedLibrary and is the one the loader loads
// (through /proc/self/fd/N), so the file cannot be swapped between check and
// load. Every failure is ROOTSPAN_ERR_PLUGIN_REJECTED (ROOTSPAN_ERR_IO for a
// read error), operation "load_plugin", policy "L4".
#pragma once

#include <sys/types.h>

#include <fcntl.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/loader/manifest.hpp"

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

// A pinned library is copied into memory before it is hashed: at most this many bytes.
inline constexpr std::uint64_t kMaxPinnedLibraryBytes = std::uint64_t{1} << 30;
// The seals of that copy: no write, no shrinking, no growing, no change of seals.
inline constexpr int kPinSeals = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

// A plugin file that passed L4, held open.
struct CheckedLibrary {
  UniqueFd fd;                        // the file itself, or its sealed memfd copy when pinned
  std::filesystem::path path;         // the file that was opened (found, when a bare name was given)
  std::filesystem::path real_path;    // the opened file's path with every link resolved ($ORIGIN's base)
  std::string requested;              // the path or bare name as asked for, for messages
  std::optional<std::string> sha256;  // the digest, when one was checked
  std::string context;                // "manifest F entry N \"name\"" or "", prefixed to messages
  dev_t device = 0;
  ino_t inode = 0;
  std::uint64_t size = 0;
  // What the library needs from its own RUNPATH/RPATH folders, checked the
  // same way, in the order to load them (a dependency before what needs it).
  std::vector<CheckedLibrary> dependencies;
  std::string needed_as;  // for a dependency: its DT_NEEDED name

  // "/proc/self/fd/N": the name under which the loader opens this very file.
  std::string descriptor_path() const;
};

// Runs the L4 checks on path (absolute, or a bare file name for the system
// search) and, when sha256 is given (64 lowercase hex digits), compares it
// with the digest of the opened file.
Result<CheckedLibrary> check_plugin_file(const std::filesystem::path &path,
                                         const std::optional<std::string> &sha256 = std::nullopt);

// The same for a manifest entry: its resolved library and sha256. Messages (of
// this check and of the later load) start with the entry's description, so
// they name the manifest file, the entry index and its name.
Result<CheckedLibrary> check_plugin_file(const ManifestEntry &entry);

// Opens lib.path (absolute) for the checks below, without blocking on a FIFO.
Result<void> open_library(CheckedLibrary &lib, const std::string &who);

// The checks of one opened library file, the plugin or a dependency: regular
// file, the trust rule, the pin (replacing lib.fd by the sealed copy), the
// ELF header. who starts every message.
Result<void> check_library_descriptor(CheckedLibrary &lib, const std::optional<std::string> &sha256,
                                      const std::string &who);

// The ELF header of fd against this process (magic, class, byte order,
// ET_DYN, machine); nullopt when it matches.
std::optional<Diagnostic> check_elf_header(int fd, const std::string &who, std::uint64_t size);

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
