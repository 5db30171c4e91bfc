// Warming zero-copy roots: a cold mapping faults its pages in one readahead
// window at a time, so a first pass over a freshly mapped checkpoint runs at
// a fraction of the storage's speed. warm_mapped_ranges reads the ranges in
// before the load hands them out: a few threads take them in chunks, each
// queueing readahead of its chunk (MADV_WILLNEED) and then populating it
// (MADV_POPULATE_READ, Linux 5.14), keeping many reads in flight. Where the
// kernel lacks MADV_POPULATE_READ the readahead alone is what is done. A range
// whose file shrank is left as it is (populate fails with EFAULT rather than
// raising SIGBUS), so the load's own checks report it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rootspan::weights {

// Returns the bytes populated (whole pages within the ranges).
std::uint64_t warm_mapped_ranges(const std::vector<std::span<const std::byte>> &ranges, std::size_t threads = 8);

}  // namespace rootspan::weights
