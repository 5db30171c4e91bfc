#include "weights/placement/prefault.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <system_error>

#include "core/masked_thread.hpp"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older C libraries lack the name
#endif

namespace rootspan::weights {

namespace {

// The step the range is populated in: one huge page, so that the thread
// checks where the reader is often and a step is never split.
constexpr std::uint64_t kStep = 2ull << 20;

}  // namespace

Prefault::Prefault(std::byte *data, std::uint64_t length) : data_(data), length_(length) {
  if (data == nullptr || length < kMinimumBytes) return;
  try {
    thread_ = start_masked_thread([this] {
      populate_from_the_end();
      finished_.store(true, std::memory_order_release);
    });
  } catch (const std::system_error &) {
    // No thread to be had: the reader pays its own faults.
  }
}

Prefault::~Prefault() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void Prefault::populate_from_the_end() {
  const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(data_);
  // madvise takes whole pages: only those wholly inside the range.
  const std::uintptr_t first = (begin + page - 1) & ~(page - 1);
  std::uintptr_t end = (begin + length_) & ~(page - 1);
  while (end > first && !stop_.load(std::memory_order_relaxed)) {
    const std::uintptr_t reader = begin + reader_at_.load(std::memory_order_relaxed);
    if (end <= reader) return;  // met the reader: the rest is filled
    // Steps on huge page boundaries, so that each populates one huge page.
    std::uintptr_t start = end > kStep ? (end - 1) & ~(kStep - 1) : 0;
    start = std::max({start, first, reader & ~(page - 1)});
    if (::madvise(data_ + (start - begin), end - start, MADV_POPULATE_WRITE) != 0) return;
    end = start;
  }
}

}  // namespace rootspan::weights
