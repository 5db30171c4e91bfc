#include "allocation_counter.hpp"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>

// glibc's own allocator entry points: the interposed functions below count a
// call and pass it on to them.
extern "C" {
void *__libc_malloc(std::size_t size);
void *__libc_calloc(std::size_t count, std::size_t size);
void *__libc_realloc(void *pointer, std::size_t size);
void *__libc_memalign(std::size_t alignment, std::size_t size);
void __libc_free(void *pointer);
}

namespace {
std::atomic<std::uint64_t> allocations{0};
void count() { allocations.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

namespace rootspan::bench {
std::uint64_t heap_allocations() { return allocations.load(std::memory_order_relaxed); }
}  // namespace rootspan::bench

// Defined in the executable, these replace the C library's for every object
// of the process (ELF symbol interposition), so an allocation in librootspan
// or a plugin library is counted too.
extern "C" {
void *malloc(std::size_t size) {
  count();
  return __libc_malloc(size);
}
void *calloc(std::size_t n, std::size_t size) {
  count();
  return __libc_calloc(n, size);
}
void *realloc(void *pointer, std::size_t size) {
  count();
  return __libc_realloc(pointer, size);
}
void free(void *pointer) { __libc_free(pointer); }
void *memalign(std::size_t alignment, std::size_t size) {
  count();
  return __libc_memalign(alignment, size);
}
void *aligned_alloc(std::size_t alignment, std::size_t size) {
  count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void **out, std::size_t alignment, std::size_t size) {
  if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
  count();
  void *pointer = __libc_memalign(alignment, size);
  if (pointer == nullptr) return ENOMEM;
  *out = pointer;
  return 0;
}
}
