// Warming zero-copy roots: a cold mapping faults its pages in one readahead
// window at a time, so a first pass over a freshly mapped checkpoint runs at
// a fraction of the storage's speed. warm_mapped_ranges reads the ranges in
// before the load hands them out: a few threads take them in chunks, each
// queueing readahead of its chunk (MADV_WILLNEED) and then populating it
// (MADV_POPULATE_READ, Linux 5.14), keeping many reads in flight. Where the
// kernel lacks MADV_POPULATE_READ the readahead alone is what is done. Where a
// file shrank, populate stops at the first page past its end (EFAULT rather
// than SIGBUS), leaving the rest of that chunk unread, and the load's own
// checks report the file.
//
// Every page populated stays resident, holes of a sparse file included (12
// GiB apparent with 4 KB on disk is 12 GiB of memory), so the pages are
// weighed against the memory available before any is read, as a copy is
// (available_memory.hpp), and the load can stop the workers (its progress
// callback, Ctrl-C) while they read.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/diagnostic.hpp"

namespace rootspan::weights {

struct WarmLimits {
  // The memory the system can still give (available_memory()); nullopt:
  // not weighed.
  std::optional<std::uint64_t> available;
  // Called on the calling thread while the workers read, every
  // poll_interval; an error (the load's progress
  // callback cancelling) stops the workers, and is returned.
  std::function<Result<void>()> poll;
  std::chrono::milliseconds poll_interval{50};
};

// Returns the bytes populated (the whole pages covering the ranges, each page once). Fails with
// ROOTSPAN_ERR_OUT_OF_MEMORY (operation `operation`), reading nothing, when
// the pages exceed limits.available, naming both; with poll's error when it
// stops the warming (the pages read so far stay read). `threads` workers
// read while this thread polls; with none (0, or none could be started) this
// thread reads, polling after each chunk.
Result<std::uint64_t> warm_mapped_ranges(const std::vector<std::span<const std::byte>> &ranges,
                                         const WarmLimits &limits, const std::string &operation,
                                         std::size_t threads = 8);

}  // namespace rootspan::weights
