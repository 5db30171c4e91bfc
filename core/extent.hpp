// Identity and extent rules (docs/concepts.md): allocation keys, extent validation
// in its stated order, and the process-wide root id counter.
#pragma once

#include <cstdint>

#include "diagnostic.hpp"

namespace rootspan {

// (key, byte offset, byte length, guaranteed alignment).
struct Extent {
  Key key;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint64_t alignment = 1;
};

inline bool is_power_of_two(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Checks, in order: offset + length overflow (RangeOverflow), alignment zero or
// not a power of two (InvalidAlignment), offset not a multiple of alignment
// (MisalignedOffset). Zero length is allowed. The Diagnostic's operation and
// request are left for the caller to fill.
Result<void> validate_extent(const Extent &extent);

// Both halves of a key are non-zero (InvalidKey otherwise).
Result<void> validate_key(Key key);

// A fresh, never reused, non-zero root id. Fails with RootIdExhausted instead
// of wrapping.
Result<std::uint64_t> next_root_id();

namespace testing {
// Moves the process-wide counter (tests reach exhaustion with it).
void set_next_root_id(std::uint64_t next);
}  // namespace testing

}  // namespace rootspan
