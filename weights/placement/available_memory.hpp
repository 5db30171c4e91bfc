// How much memory the system can still give without swapping, for refusing a
// copy that cannot fit before it starts (a sparse file's apparent size can
// be far more than its blocks, and a copy allocates the apparent size).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/diagnostic.hpp"

namespace rootspan::weights {

// MemAvailable of /proc/meminfo in bytes; where that is missing, sysinfo's
// free and buffer memory. nullopt when neither can be read.
std::optional<std::uint64_t> available_memory();

// Refuses, before anything is allocated, a copy of `total` bytes into host
// memory when more than `available` bytes (as available_memory gave) would
// be needed. `file` is the file that gives most of them (`bytes`, its
// tensors' apparent size). Error: ROOTSPAN_ERR_OUT_OF_MEMORY, operation
// `operation`, naming the file, the sizes, the memory available and the
// `strategy` that copies ("read", "direct", or "mmap" for packed components).
Result<void> check_copy_fits(const std::string &file, std::uint64_t bytes, std::uint64_t total, std::uint64_t available,
                             std::string_view strategy, std::string operation);

}  // namespace rootspan::weights
