// The dynamic section of a shared object, read from an open descriptor with
// <elf.h> (never by the dynamic loader, which would run the file's code): the
// libraries it needs and where it asks for them to be searched. Used by L4
// to check a plugin's dependencies before the plugin is loaded.
//
// The file must already have passed check_elf_header (this process's class,
// byte order and machine). Every offset and size is checked against the
// file's size; a malformed table is refused, never read out of bounds.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/diagnostic.hpp"

namespace rootspan {

struct ElfDynamic {
  std::vector<std::string> needed;     // DT_NEEDED, in order
  std::optional<std::string> runpath;  // DT_RUNPATH, as written (':'-separated)
  std::optional<std::string> rpath;    // DT_RPATH, as written
  std::optional<std::string> soname;   // DT_SONAME
};

// Limits that keep a hostile file from costing memory.
inline constexpr std::size_t kMaxElfProgramHeaders = 4096;
inline constexpr std::size_t kMaxElfDynamicEntries = 1u << 16;
inline constexpr std::size_t kMaxElfStringTableBytes = 16u << 20;

// Reads the PT_DYNAMIC segment of the file behind fd (pread, offset
// untouched). A file without one needs nothing. Errors are
// ROOTSPAN_ERR_PLUGIN_REJECTED, operation "load_plugin", policy L4, starting
// with who.
Result<ElfDynamic> read_elf_dynamic(int fd, const std::string &who);

}  // namespace rootspan
