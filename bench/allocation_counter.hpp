// Heap allocations made by the whole process (every thread, librootspan and
// plugins included): the benchmark program interposes malloc and its family,
// which operator new calls, and counts each call.
#pragma once

#include <cstdint>

namespace rootspan::bench {

std::uint64_t heap_allocations();

}  // namespace rootspan::bench
