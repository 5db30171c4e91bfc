#include "weights/placement/warm_mapping.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
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

// The whole pages covering the ranges, each page once and in address order,
// in chunks: ranges that share or touch pages are merged first, so that a
// checkpoint of thousands of small tensors side by side in one mapping is
// read in large requests, not one small request a tensor, and a page two
// tensors share is neither read nor counted twice. Mappings the kernel placed
// back to back merge too; madvise spans adjacent mappings.
std::vector<PageRange> chunks_of(const std::vector<std::span<const std::byte>> &ranges) {
  const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  std::vector<PageRange> pages;
  pages.reserve(ranges.size());
  for (const auto &range : ranges) {
    if (range.empty()) continue;
    const auto begin = reinterpret_cast<std::uintptr_t>(range.data()) & ~(page - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(range.data()) + range.size() + page - 1) & ~(page - 1);
    pages.push_back({begin, end});
  }
  std::sort(pages.begin(), pages.end(), [](const PageRange &a, const PageRange &b) { return a.begin < b.begin; });
  std::vector<PageRange> merged;
  for (const PageRange &range : pages) {
    if (!merged.empty() && range.begin <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, range.end);
    } else {
      merged.push_back(range);
    }
  }
  std::vector<PageRange> chunks;
  for (const PageRange &range : merged) {
    for (std::uintptr_t at = range.begin; at < range.end; at += kChunk)
      chunks.push_back({at, std::min<std::uintptr_t>(range.end, at + kChunk)});
  }
  return chunks;
}

}  // namespace

Result<std::uint64_t> warm_mapped_ranges(const std::vector<std::span<const std::byte>> &ranges,
                                         const WarmLimits &limits, const std::string &operation, std::size_t threads) {
  const std::vector<PageRange> chunks = chunks_of(ranges);
  std::uint64_t pages_bytes = 0;
  for (const PageRange &chunk : chunks) pages_bytes += chunk.end - chunk.begin;
  if (limits.available && pages_bytes > *limits.available) {
    return make_error(ROOTSPAN_ERR_OUT_OF_MEMORY, operation,
                      "populate would read " + std::to_string(pages_bytes) +
                          " bytes of mapped files into memory (every page stays resident, a sparse file's holes "
                          "included), but only " +
                          std::to_string(*limits.available) +
                          " bytes are available (MemAvailable); load without populate (pages then fault in when "
                          "touched), or load fewer components",
                      *limits.available, pages_bytes);
  }
  std::atomic<std::size_t> next{0};
  std::atomic<std::uint64_t> populated{0};
  std::atomic<bool> stop{false};  // a kernel before 5.14, or the poll said so
  std::mutex mutex;
  std::condition_variable ended;
  std::size_t running = 0;
  // One chunk; false when none is left or the warming stops.
  auto one_chunk = [&] {
    std::size_t i = 0;
    if (stop.load(std::memory_order_relaxed) || (i = next.fetch_add(1)) >= chunks.size()) return false;
    const PageRange &chunk = chunks[i];
    // Readahead of the whole chunk first: populating alone would fault it
    // in one readahead window (read_ahead_kb) at a time.
    (void)::madvise(reinterpret_cast<void *>(chunk.begin), chunk.end - chunk.begin, MADV_WILLNEED);
    if (::madvise(reinterpret_cast<void *>(chunk.begin), chunk.end - chunk.begin, MADV_POPULATE_READ) == 0) {
      populated.fetch_add(chunk.end - chunk.begin, std::memory_order_relaxed);
    } else if (errno == EINVAL) {
      stop.store(true);  // a kernel before 5.14: the readahead is all
    }
    return true;
  };
  auto work = [&] {
    while (one_chunk()) {
    }
    const std::lock_guard lock(mutex);
    --running;
    ended.notify_all();
  };
  std::vector<std::thread> workers;
  const std::size_t count = std::min(threads, chunks.size());
  for (std::size_t i = 0; i < count; ++i) {
    {
      const std::lock_guard lock(mutex);
      ++running;
    }
    try {
      workers.push_back(start_masked_thread(work));
    } catch (const std::system_error &) {
      const std::lock_guard lock(mutex);
      --running;
      break;  // fewer threads: the others' chunks are taken by those running
    }
  }
  std::optional<Diagnostic> stopped;
  const auto polled = [&] {
    if (stopped || !limits.poll) return;
    if (auto answer = limits.poll(); !answer) {
      stopped = answer.error();
      stop.store(true);
    }
  };
  if (workers.empty()) {
    // No thread could be started: this one reads, polling between chunks.
    while (one_chunk()) polled();
  } else {
    // This thread only polls: the progress callback runs on the loading thread.
    std::unique_lock lock(mutex);
    while (!ended.wait_for(lock, limits.poll_interval, [&] { return running == 0; })) {
      lock.unlock();
      polled();
      lock.lock();
    }
  }
  for (std::thread &worker : workers) worker.join();
  if (stopped) return *stopped;
  return populated.load();
}

}  // namespace rootspan::weights
