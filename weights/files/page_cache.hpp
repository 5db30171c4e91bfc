// How much of a file the page cache holds: a sample of its pages, asked of
// the kernel with mincore(2) over a read-only mapping that is never touched
// (mapping a file reads nothing; mincore faults nothing in). The `auto`
// strategy reads a mostly cold checkpoint in ahead, many reads in flight,
// instead of leaving its pages to fault in one readahead window at a time
// (weights/placement/read_strategy.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace rootspan::weights {

// The share, in [0, 1], of `samples` pages spread evenly over the first
// `size` bytes of the open file `fd` that are in the page cache (every page
// when the file has fewer). nullopt when it cannot be told: an empty file,
// or a file that cannot be mapped. Each sample is one mincore call, about a
// microsecond: 64 pages tell a cold file from a warm one well enough.
std::optional<double> page_cache_resident_share(int fd, std::uint64_t size, std::size_t samples = 64) noexcept;

}  // namespace rootspan::weights
