// A span: a range bound to one root (docs/concepts.md). How a range relative
// to a root becomes one is span_derivation.hpp.
#pragma once

#include <cstdint>

namespace rootspan {

struct Span {
  std::uint64_t root_id = 0;
  std::uint64_t offset = 0;  // absolute byte offset in the allocation
  std::uint64_t length = 0;
  std::uint64_t alignment = 1;
  std::uint64_t end() const { return offset + length; }
};

// Empty spans overlap nothing; spans of different roots never overlap.
inline bool spans_overlap(const Span &a, const Span &b) {
  return a.root_id == b.root_id && a.length != 0 && b.length != 0 && a.offset < b.end() && b.offset < a.end();
}

}  // namespace rootspan
