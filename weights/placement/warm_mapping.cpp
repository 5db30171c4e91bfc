#include "weights/placement/warm_mapping.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <system_error>
#include <thread>

#include "core/masked_thread.hpp"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14; older C libraries lack the name
#endif

namespace rootspan::weights {

namespace {

// A chunk small enough that eight threads spread over a few hundred MiB,
// large enough that each call keeps the device's queue full.
constexpr std::uint64_t kChunk = 8ull << 20;

struct PageRange {
  std::uintptr_t begin;
  std::uintptr_t end;
};

}  // namespace

std::uint64_t warm_mapped_ranges(const std::vector<std::span<const std::byte>> &ranges, std::size_t threads) {
  const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  // Whole pages covering each range (a mapping's pages are the file's).
  std::vector<PageRange> chunks;
  for (const auto &range : ranges) {
    if (range.empty()) continue;
    const auto begin = reinterpret_cast<std::uintptr_t>(range.data()) & ~(page - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(range.data()) + range.size() + page - 1) & ~(page - 1);
    for (std::uintptr_t at = begin; at < end; at += kChunk)
      chunks.push_back({at, std::min<std::uintptr_t>(end, at + kChunk)});
  }
  std::atomic<std::size_t> next{0};
  std::atomic<std::uint64_t> populated{0};
  std::atomic<bool> refused{false};
  auto work = [&] {
    for (std::size_t i; !refused.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < chunks.size();) {
      const PageRange &chunk = chunks[i];
      // Readahead of the whole chunk first: populating alone would fault it
      // in one readahead window (read_ahead_kb) at a time.
      (void)::madvise(reinterpret_cast<void *>(chunk.begin), chunk.end - chunk.begin, MADV_WILLNEED);
      if (::madvise(reinterpret_cast<void *>(chunk.begin), chunk.end - chunk.begin, MADV_POPULATE_READ) == 0) {
        populated.fetch_add(chunk.end - chunk.begin, std::memory_order_relaxed);
      } else if (errno == EINVAL) {
        refused.store(true);  // a kernel before 5.14: the readahead is all
      }
    }
  };
  std::vector<std::thread> workers;
  const std::size_t count = std::min(threads, chunks.size());
  for (std::size_t i = 1; i < count; ++i) {
    try {
      workers.push_back(start_masked_thread(work));
    } catch (const std::system_error &) {
      break;  // fewer threads: the others' chunks are taken by those running
    }
  }
  work();
  for (std::thread &worker : workers) worker.join();
  return populated.load();
}

}  // namespace rootspan::weights
