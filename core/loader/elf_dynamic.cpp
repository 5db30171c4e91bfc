#include "core/loader/elf_dynamic.hpp"

#include <elf.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rootspan {

namespace {

Diagnostic malformed(const std::string &who, const std::string &what) {
  Diagnostic d = make_error(ROOTSPAN_ERR_PLUGIN_REJECTED, "load_plugin", who + ": malformed dynamic section: " + what);
  d.policy = "L4";
  return d;
}

// Reads n bytes at offset, all of them or an error.
Result<void> read_exactly(int fd, void *out, std::size_t n, std::uint64_t offset, std::uint64_t file_size,
                          const std::string &who, const char *what) {
  if (offset > file_size || n > file_size - offset) {
    return malformed(who, std::string(what) + " lies outside the file (offset " + std::to_string(offset) + ", " +
                              std::to_string(n) + " bytes, file " + std::to_string(file_size) + " bytes)");
  }
  std::size_t done = 0;
  while (done < n) {
    ssize_t got = ::pread(fd, static_cast<char *>(out) + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      Diagnostic d =
          make_error(ROOTSPAN_ERR_IO, "load_plugin",
                     who + ": cannot read " + what + ": " + (got < 0 ? std::strerror(errno) : "end of file"));
      d.policy = "L4";
      return d;
    }
    done += static_cast<std::size_t>(got);
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace

Result<ElfDynamic> read_elf_dynamic(int fd, const std::string &who) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Diagnostic d = make_error(ROOTSPAN_ERR_IO, "load_plugin", who + ": fstat failed: " + std::strerror(errno));
    d.policy = "L4";
    return d;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);

  ElfW(Ehdr) header{};
  BOOST_OUTCOME_TRY(read_exactly(fd, &header, sizeof header, 0, size, who, "the ELF header"));
  if (header.e_phnum == 0) return ElfDynamic{};
  if (header.e_phentsize != sizeof(ElfW(Phdr))) {
    return malformed(who, "program header size " + std::to_string(header.e_phentsize) + " (expected " +
                              std::to_string(sizeof(ElfW(Phdr))) + ")");
  }
  if (header.e_phnum > kMaxElfProgramHeaders) {
    return malformed(who, std::to_string(header.e_phnum) + " program headers (expected at most " +
                              std::to_string(kMaxElfProgramHeaders) + ")");
  }
  std::vector<ElfW(Phdr)> segments(header.e_phnum);
  BOOST_OUTCOME_TRY(read_exactly(fd, segments.data(), segments.size() * sizeof(ElfW(Phdr)), header.e_phoff, size, who,
                                 "the program headers"));

  const ElfW(Phdr) *dynamic = nullptr;
  for (const auto &segment : segments) {
    if (segment.p_type == PT_DYNAMIC) dynamic = &segment;
  }
  if (dynamic == nullptr) return ElfDynamic{};
  const std::size_t count = dynamic->p_filesz / sizeof(ElfW(Dyn));
  if (count > kMaxElfDynamicEntries) {
    return malformed(who, std::to_string(count) + " dynamic entries (expected at most " +
                              std::to_string(kMaxElfDynamicEntries) + ")");
  }
  std::vector<ElfW(Dyn)> entries(count);
  BOOST_OUTCOME_TRY(
      read_exactly(fd, entries.data(), count * sizeof(ElfW(Dyn)), dynamic->p_offset, size, who, "PT_DYNAMIC"));

  std::uint64_t strtab_address = 0, strtab_size = 0;
  bool has_strtab = false;
  std::vector<std::uint64_t> needed;
  std::optional<std::uint64_t> runpath, rpath, soname;
  for (const auto &entry : entries) {
    if (entry.d_tag == DT_NULL) break;
    switch (entry.d_tag) {
      case DT_NEEDED:
        needed.push_back(entry.d_un.d_val);
        break;
      case DT_RUNPATH:
        runpath = entry.d_un.d_val;
        break;
      case DT_RPATH:
        rpath = entry.d_un.d_val;
        break;
      case DT_SONAME:
        soname = entry.d_un.d_val;
        break;
      case DT_STRTAB:
        strtab_address = entry.d_un.d_ptr;
        has_strtab = true;
        break;
      case DT_STRSZ:
        strtab_size = entry.d_un.d_val;
        break;
      default:
        break;
    }
  }
  if (needed.empty() && !runpath && !rpath && !soname) return ElfDynamic{};
  if (!has_strtab) return malformed(who, "DT_NEEDED, DT_RUNPATH or DT_RPATH without DT_STRTAB");
  if (strtab_size == 0 || strtab_size > kMaxElfStringTableBytes) {
    return malformed(who, "DT_STRSZ " + std::to_string(strtab_size) + " (expected 1 to " +
                              std::to_string(kMaxElfStringTableBytes) + ")");
  }
  // DT_STRTAB is an address: the loadable segment holding it gives its offset.
  std::optional<std::uint64_t> strtab_offset;
  for (const auto &segment : segments) {
    if (segment.p_type == PT_LOAD && strtab_address >= segment.p_vaddr &&
        strtab_address - segment.p_vaddr < segment.p_filesz) {
      strtab_offset = segment.p_offset + (strtab_address - segment.p_vaddr);
      break;
    }
  }
  if (!strtab_offset) {
    return malformed(who, "DT_STRTAB address " + std::to_string(strtab_address) + " is in no loadable segment");
  }
  std::string strings(strtab_size, '\0');
  BOOST_OUTCOME_TRY(read_exactly(fd, strings.data(), strings.size(), *strtab_offset, size, who, "the string table"));

  auto string_at = [&](std::uint64_t offset, const char *tag) -> Result<std::string> {
    if (offset >= strings.size()) {
      return malformed(who, std::string(tag) + " string offset " + std::to_string(offset) +
                                " is outside the string table (" + std::to_string(strings.size()) + " bytes)");
    }
    const std::size_t end = strings.find('\0', offset);
    if (end == std::string::npos) return malformed(who, std::string(tag) + " string is not NUL-terminated");
    return strings.substr(offset, end - offset);
  };
  ElfDynamic out;
  for (std::uint64_t offset : needed) {
    auto name = string_at(offset, "DT_NEEDED");
    if (!name) return name.error();
    out.needed.push_back(std::move(name).value());
  }
  if (runpath) {
    auto text = string_at(*runpath, "DT_RUNPATH");
    if (!text) return text.error();
    out.runpath = std::move(text).value();
  }
  if (rpath) {
    auto text = string_at(*rpath, "DT_RPATH");
    if (!text) return text.error();
    out.rpath = std::move(text).value();
  }
  if (soname) {
    auto text = string_at(*soname, "DT_SONAME");
    if (!text) return text.error();
    out.soname = std::move(text).value();
  }
  return out;
}

}  // namespace rootspan
