// Largest single heap allocation since reset: the test executable replaces
// the global operator new to record it, so tests can show that opening a
// checkpoint allocates for its header, never for its data.
#pragma once

#include <atomic>
#include <cstddef>

namespace rootspan::testing {

extern std::atomic<std::size_t> largest_allocation;

inline void reset_largest_allocation() { largest_allocation.store(0); }

}  // namespace rootspan::testing
