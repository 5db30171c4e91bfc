#include "allocation_tracking.hpp"

#include <cstdlib>
#include <new>

namespace rootspan::testing {
std::atomic<std::size_t> largest_allocation{0};
}  // namespace rootspan::testing

namespace {
void record(std::size_t size) {
  auto &largest = rootspan::testing::largest_allocation;
  std::size_t seen = largest.load(std::memory_order_relaxed);
  while (size > seen && !largest.compare_exchange_weak(seen, size, std::memory_order_relaxed)) {
  }
}
}  // namespace

// The plain forms; the array and nothrow forms of libstdc++ call these.
void *operator new(std::size_t size) {
  record(size);
  if (void *p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
