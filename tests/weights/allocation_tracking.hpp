// The test executable's global operator new: it records the largest single
// heap allocation since reset, so that tests can show that opening a
// checkpoint allocates for its header, never for its data; and, while a
// FailingAllocations lives on a thread, it fails there (std::bad_alloc), so
// that tests can show what a call does when the core cannot allocate.
#pragma once

#include <atomic>
#include <cstddef>

namespace rootspan::testing {

extern std::atomic<std::size_t> largest_allocation;

inline void reset_largest_allocation() { largest_allocation.store(0); }

extern thread_local bool failing_allocations;

// The unaligned operator new and new[] fail on this thread while one lives
// (their nothrow forms return null): scope it to the one call under test,
// since the test's own code allocates too.
class FailingAllocations {
 public:
  FailingAllocations() { failing_allocations = true; }
  ~FailingAllocations() { failing_allocations = false; }
  FailingAllocations(const FailingAllocations &) = delete;
  FailingAllocations &operator=(const FailingAllocations &) = delete;
};

}  // namespace rootspan::testing
