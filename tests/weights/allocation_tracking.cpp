#include "allocation_tracking.hpp"

#include <cstdlib>
#include <new>

namespace rootspan::testing {
std::atomic<std::size_t> largest_allocation{0};
thread_local bool failing_allocations = false;
}  // namespace rootspan::testing

namespace {
void record(std::size_t size) {
  auto &largest = rootspan::testing::largest_allocation;
  std::size_t seen = largest.load(std::memory_order_relaxed);
  while (size > seen && !largest.compare_exchange_weak(seen, size, std::memory_order_relaxed)) {
  }
}
}  // namespace

// Every unaligned form, so that whatever allocates, malloc and free are the
// pair: libstdc++'s array and nothrow forms call the plain ones, but under
// AddressSanitizer its own forms stand in for them, and a nothrow new there
// (simdjson's parser makes its buffers so) freed by the delete below would be
// reported as a mismatch.
void *operator new(std::size_t size) {
  record(size);
  if (rootspan::testing::failing_allocations) throw std::bad_alloc();
  if (void *p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void *operator new(std::size_t size, const std::nothrow_t &) noexcept {
  record(size);
  if (rootspan::testing::failing_allocations) return nullptr;
  return std::malloc(size == 0 ? 1 : size);
}
void *operator new[](std::size_t size) { return ::operator new(size); }
void *operator new[](std::size_t size, const std::nothrow_t &) noexcept { return ::operator new(size, std::nothrow); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { std::free(p); }
