#include "core/loader/plugin_file_check.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/sha256.hpp"

#include "core/loader/plugin_dependencies.hpp"
#include "core/loader/trusted_path.hpp"

namespace rootspan {

namespace {

namespace fs = std::filesystem;

constexpr const char *kOperation = "load_plugin";

// What this process can load: its own ELF class, byte order and machine.
constexpr unsigned char kElfClass = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
constexpr unsigned char kElfData = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
#if defined(__x86_64__)
constexpr std::uint16_t kElfMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr std::uint16_t kElfMachine = EM_AARCH64;
#elif defined(__i386__)
constexpr std::uint16_t kElfMachine = EM_386;
#elif defined(__arm__)
constexpr std::uint16_t kElfMachine = EM_ARM;
#elif defined(__powerpc64__)
constexpr std::uint16_t kElfMachine = EM_PPC64;
#elif defined(__riscv)
constexpr std::uint16_t kElfMachine = EM_RISCV;
#elif defined(__s390x__)
constexpr std::uint16_t kElfMachine = EM_S390;
#else
#error "plugin_file_check.cpp: add this machine's EM_* constant (policy L4 checks e_machine)"
#endif
constexpr std::size_t kElfHeaderSize = kElfClass == ELFCLASS64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);

std::string class_name(unsigned c) {
  switch (c) {
    case ELFCLASS32:
      return "ELFCLASS32";
    case ELFCLASS64:
      return "ELFCLASS64";
    default:
      return "class " + std::to_string(c);
  }
}

std::string data_name(unsigned d) {
  switch (d) {
    case ELFDATA2LSB:
      return "little-endian";
    case ELFDATA2MSB:
      return "big-endian";
    default:
      return "byte order " + std::to_string(d);
  }
}

std::string type_name(unsigned t) {
  switch (t) {
    case ET_REL:
      return "ET_REL (object file)";
    case ET_EXEC:
      return "ET_EXEC (executable)";
    case ET_DYN:
      return "ET_DYN (shared object)";
    case ET_CORE:
      return "ET_CORE (core file)";
    default:
      return "e_type " + std::to_string(t);
  }
}

std::string machine_name(unsigned m) {
  switch (m) {
    case EM_386:
      return "EM_386";
    case EM_X86_64:
      return "EM_X86_64";
    case EM_AARCH64:
      return "EM_AARCH64";
    case EM_ARM:
      return "EM_ARM";
    case EM_PPC64:
      return "EM_PPC64";
    case EM_RISCV:
      return "EM_RISCV";
    case EM_S390:
      return "EM_S390";
    default:
      return "e_machine " + std::to_string(m);
  }
}

std::string hex(const unsigned char *bytes, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Names the file as asked for and, when different, as found.
std::string subject(const std::string &context, const std::string &requested, const fs::path &path) {
  std::string s = (context.empty() ? "" : context + ": ") + "plugin " + requested;
  if (path.string() != requested) s += " (" + path.string() + ")";
  return s;
}

Diagnostic rejected(const std::string &subject, const std::string &cause) {
  Diagnostic d = make_error(ROOTSPAN_ERR_PLUGIN_REJECTED, kOperation, subject + ": " + cause);
  d.policy = "L4";
  return d;
}

Diagnostic rejected(const std::string &subject, const std::string &cause, std::uint64_t expected,
                    std::uint64_t actual) {
  Diagnostic d = rejected(subject, cause);
  d.values = std::make_pair(expected, actual);
  return d;
}

// Reads exactly n bytes at offset, or fewer at end of file.
ssize_t pread_full(int fd, void *buffer, std::size_t n, off_t offset) {
  std::size_t done = 0;
  while (done < n) {
    ssize_t got = ::pread(fd, static_cast<char *>(buffer) + done, n - done, offset + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return static_cast<ssize_t>(done);
}

}  // namespace

std::optional<Diagnostic> check_elf_header(int fd, const std::string &who, std::uint64_t size) {
  unsigned char header[kElfHeaderSize] = {};
  ssize_t got = pread_full(fd, header, sizeof header, 0);
  if (got < 0) {
    int err = errno;
    Diagnostic d = rejected(who, std::string("cannot read the ELF header: ") + std::strerror(err));
    d.code = ROOTSPAN_ERR_IO;
    return d;
  }
  if (static_cast<std::size_t>(got) < SELFMAG || std::memcmp(header, ELFMAG, SELFMAG) != 0) {
    return rejected(who, "not an ELF file (expected magic 7f454c46, actual " +
                             hex(header, std::min<std::size_t>(SELFMAG, static_cast<std::size_t>(got))) + ")");
  }
  if (header[EI_CLASS] != kElfClass) {
    return rejected(who,
                    "ELF class does not match this process (expected " + class_name(kElfClass) + ", actual " +
                        class_name(header[EI_CLASS]) + ")",
                    kElfClass, header[EI_CLASS]);
  }
  if (header[EI_DATA] != kElfData) {
    return rejected(who,
                    "ELF byte order does not match this process (expected " + data_name(kElfData) + ", actual " +
                        data_name(header[EI_DATA]) + ")",
                    kElfData, header[EI_DATA]);
  }
  if (static_cast<std::size_t>(got) < sizeof header) {
    return rejected(who,
                    "truncated ELF header (expected at least " + std::to_string(sizeof header) + " bytes, actual " +
                        std::to_string(size) + ")",
                    sizeof header, size);
  }
  // e_type and e_machine sit at the same offsets in both classes, in the
  // file's byte order, which was just checked to be ours.
  std::uint16_t type = 0, machine = 0;
  std::memcpy(&type, header + offsetof(Elf64_Ehdr, e_type), sizeof type);
  std::memcpy(&machine, header + offsetof(Elf64_Ehdr, e_machine), sizeof machine);
  if (type != ET_DYN) {
    return rejected(who, "not a shared object (expected " + type_name(ET_DYN) + ", actual " + type_name(type) + ")",
                    ET_DYN, type);
  }
  if (machine != kElfMachine) {
    return rejected(
        who,
        "built for another machine (expected " + machine_name(kElfMachine) + ", actual " + machine_name(machine) + ")",
        kElfMachine, machine);
  }
  return std::nullopt;
}

UniqueFd &UniqueFd::operator=(UniqueFd &&other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string CheckedLibrary::descriptor_path() const { return "/proc/self/fd/" + std::to_string(fd.get()); }

std::vector<fs::path> library_search_dirs() {
  // Ask about the object this code is linked into (librootspan.so, or the
  // program that links the core statically): its own DT_RPATH/DT_RUNPATH is
  // what dlopen uses when called from here. In glibc a link_map is a handle.
  static const int anchor = 0;
  Dl_info info{};
  link_map *self = nullptr;
  std::vector<fs::path> dirs;
  if (::dladdr1(&anchor, &info, reinterpret_cast<void **>(&self), RTLD_DL_LINKMAP) == 0 || self == nullptr) {
    return dirs;
  }
  Dl_serinfo size{};
  if (::dlinfo(self, RTLD_DI_SERINFOSIZE, &size) != 0 || size.dls_size < sizeof(Dl_serinfo)) return dirs;
  // Dl_serinfo is followed by its strings: dls_size bytes, aligned for the struct.
  std::unique_ptr<std::max_align_t[]> storage(
      new std::max_align_t[(size.dls_size + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t)]);
  auto *serinfo = reinterpret_cast<Dl_serinfo *>(storage.get());
  serinfo->dls_size = size.dls_size;
  serinfo->dls_cnt = size.dls_cnt;
  if (::dlinfo(self, RTLD_DI_SERINFO, serinfo) != 0) return dirs;
  for (unsigned i = 0; i < serinfo->dls_cnt; ++i) {
    fs::path dir = serinfo->dls_serpath[i].dls_name;
    if (dir.is_absolute()) dirs.push_back(dir);  // "." or "lib" would mean the current directory (L2)
  }
  return dirs;
}

std::optional<fs::path> find_in_library_search_dirs(std::string_view name) {
  for (const auto &dir : library_search_dirs()) {
    fs::path candidate = dir / std::string(name);
    std::error_code ec;
    if (fs::exists(candidate, ec)) return candidate;
  }
  return std::nullopt;
}

namespace {

Result<std::string> hash_descriptor(int fd, const std::string &who) {
  Sha256 sha;
  constexpr std::size_t kChunk = 1 << 18;
  std::unique_ptr<std::byte[]> buffer(new std::byte[kChunk]);
  off_t offset = 0;
  for (;;) {
    ssize_t got = ::pread(fd, buffer.get(), kChunk, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int err = errno;
      Diagnostic d = rejected(who, std::string("read error while hashing: ") + std::strerror(err));
      d.code = ROOTSPAN_ERR_IO;
      return d;
    }
    if (got == 0) break;
    sha.update({buffer.get(), static_cast<std::size_t>(got)});
    offset += got;
  }
  return sha.hex_digest();
}

std::string search_dirs_text() {
  std::string text;
  for (const auto &dir : library_search_dirs()) text += (text.empty() ? "" : ":") + dir.string();
  return text;
}

}  // namespace

Result<std::string> sha256_of_descriptor(int fd, const fs::path &for_messages) {
  return hash_descriptor(fd, "plugin " + for_messages.string());
}

Result<void> open_library(CheckedLibrary &lib, const std::string &who) {
  // O_NONBLOCK: opening a FIFO must not block; it is refused below anyway.
  lib.fd.reset(::open(lib.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!lib.fd) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return rejected(who,
                      std::string("does not exist (expected a library file, actual open: ") + std::strerror(err) + ")");
    }
    return rejected(who, std::string("cannot be opened: ") + std::strerror(err));
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

namespace {

// The file's bytes, read from fd until its end, in a new memfd that is then
// sealed: from here on nobody, this process included, can change them.
Result<UniqueFd> sealed_copy(int fd, const std::string &who) {
  auto io_error = [&](const std::string &what) {
    int err = errno;
    Diagnostic d = rejected(who, "cannot make a sealed copy (" + what + ": " + std::strerror(err) + ")");
    d.code = ROOTSPAN_ERR_IO;
    return d;
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error("fstat");
  if (static_cast<std::uint64_t>(st.st_size) > kMaxPinnedLibraryBytes) {
    return rejected(who,
                    "too large to pin (expected at most " + std::to_string(kMaxPinnedLibraryBytes) + " bytes, actual " +
                        std::to_string(st.st_size) + ")",
                    kMaxPinnedLibraryBytes, static_cast<std::uint64_t>(st.st_size));
  }
  UniqueFd copy(::memfd_create("rootspan-pinned-library", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!copy) return io_error("memfd_create");
  constexpr std::size_t kChunk = 1 << 18;
  std::unique_ptr<char[]> buffer(new char[kChunk]);
  std::uint64_t copied = 0;
  for (;;) {
    ssize_t got = ::pread(fd, buffer.get(), kChunk, static_cast<off_t>(copied));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return io_error("read");
    if (got == 0) break;
    if (copied + static_cast<std::uint64_t>(got) > kMaxPinnedLibraryBytes) {
      return rejected(who,
                      "too large to pin (expected at most " + std::to_string(kMaxPinnedLibraryBytes) +
                          " bytes, actual more: it grew while being copied)",
                      kMaxPinnedLibraryBytes, copied + static_cast<std::uint64_t>(got));
    }
    for (ssize_t done = 0; done < got;) {
      ssize_t put = ::write(copy.get(), buffer.get() + done, static_cast<std::size_t>(got - done));
      if (put < 0 && errno == EINTR) continue;
      if (put < 0) return io_error("write");
      done += put;
    }
    copied += static_cast<std::uint64_t>(got);
  }
  if (::fcntl(copy.get(), F_ADD_SEALS, kPinSeals) != 0) return io_error("F_ADD_SEALS");
  return copy;
}

}  // namespace

Result<void> check_library_descriptor(CheckedLibrary &lib, const std::optional<std::string> &sha256,
                                      const std::string &who) {
  struct stat st {};
  if (::fstat(lib.fd.get(), &st) != 0) {
    int err = errno;
    Diagnostic d = rejected(who, std::string("fstat failed: ") + std::strerror(err));
    d.code = ROOTSPAN_ERR_IO;
    return d;
  }
  if (!S_ISREG(st.st_mode)) {
    return rejected(who, "not a regular file (expected a regular file, actual " + file_kind(st.st_mode) + ")");
  }
  // The trust rule: nobody but root or this user can change the file or a
  // folder above it, so what is checked below stays what is loaded.
  if (auto violation = find_trust_violation(lib.fd.get())) {
    Diagnostic d = rejected(who, "not trusted: " + violation->describe());
    if (violation->owner == 0 || violation->owner == ::geteuid()) {
      d.values = std::make_pair(std::uint64_t{violation->mode & 07755u}, std::uint64_t{violation->mode & 07777u});
    } else {
      d.values = std::make_pair(std::uint64_t{::geteuid()}, std::uint64_t{violation->owner});
    }
    return d;
  }
  std::error_code ec;
  lib.real_path = fs::read_symlink(lib.descriptor_path(), ec);
  if (ec) lib.real_path = lib.path;
  lib.device = st.st_dev;
  lib.inode = st.st_ino;
  lib.size = static_cast<std::uint64_t>(st.st_size);

  if (sha256) {
    // Pinned: the bytes are copied once into a sealed memfd, hashed there and
    // loaded from there, so a writer of the file cannot change what runs
    // after the digest was taken.
    auto copy = sealed_copy(lib.fd.get(), who);
    if (!copy) return copy.error();
    lib.fd = std::move(copy).value();
    struct stat sealed {};
    if (::fstat(lib.fd.get(), &sealed) == 0) lib.size = static_cast<std::uint64_t>(sealed.st_size);
    auto actual = hash_descriptor(lib.fd.get(), who);
    if (!actual) return actual.error();
    if (actual.value() != *sha256) {
      return rejected(who, "sha256 does not match (expected " + *sha256 + ", actual " + actual.value() + ")");
    }
    lib.sha256 = std::move(actual).value();
  }
  if (auto error = check_elf_header(lib.fd.get(), who, lib.size)) return *error;
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

namespace {

Result<CheckedLibrary> check(const fs::path &path, const std::optional<std::string> &sha256,
                             const std::map<std::string, std::string> &dependency_pins, std::string context) {
  CheckedLibrary lib;
  lib.requested = path.string();
  lib.path = path;
  lib.context = std::move(context);

  if (path.empty()) return rejected(subject(lib.context, "\"\"", path), "empty path (expected a library file)");
  if (!path.has_parent_path()) {
    // A bare name: where dlopen would look, minus the current directory (L2).
    auto found = find_in_library_search_dirs(path.native());
    if (!found) {
      return rejected(
          subject(lib.context, lib.requested, path),
          "does not exist in the library search directories (expected a file in one of " + search_dirs_text() + ")");
    }
    lib.path = *found;
  } else if (!path.is_absolute()) {
    return rejected(subject(lib.context, lib.requested, path),
                    "relative path (expected an absolute path or a bare file name; the current directory is never "
                    "searched, L2)");
  }
  const std::string who = subject(lib.context, lib.requested, lib.path);

  BOOST_OUTCOME_TRY(open_library(lib, who));
  BOOST_OUTCOME_TRY(check_library_descriptor(lib, sha256, who));
  // L4 covers what the plugin brings with it: its own dependencies.
  auto dependencies = check_plugin_dependencies(lib, dependency_pins, who);
  if (!dependencies) return dependencies.error();
  lib.dependencies = std::move(dependencies).value();
  return lib;
}

}  // namespace

Result<CheckedLibrary> check_plugin_file(const ManifestEntry &entry) {
  return check(entry.library_path, entry.sha256, entry.dependencies_sha256, entry.describe());
}

Result<CheckedLibrary> check_plugin_file(const fs::path &path, const std::optional<std::string> &sha256) {
  return check(path, sha256, {}, "");
}

}  // namespace rootspan
