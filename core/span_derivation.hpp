// Span derivation (docs/concepts.md): a range relative to a root becomes a span
// bound to that root, with its derived alignment.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/diagnostic.hpp"
#include "core/extent.hpp"
#include "core/span.hpp"

namespace rootspan {

// The Diagnostic of the first check of derive_span that (offset, length) fails.
Failure span_derivation_failure(const Extent &root, std::uint64_t offset, std::uint64_t length);

// Checks, in order: root end overflow and relative end overflow
// (RangeOverflow); absolute offset overflow (OffsetOverflow); outside the root
// (OutsideRootExtent). Derived alignment is the root's when the relative
// offset is 0, else min(root alignment, lowest set bit of the offset).
// Inline, as every claim and mapping takes this path; only a failure builds a
// message, in span_derivation_failure.
inline Result<Span> derive_span(std::uint64_t root_id, const Extent &root, std::uint64_t offset, std::uint64_t length) {
  std::uint64_t root_end = 0;
  std::uint64_t relative_end = 0;
  std::uint64_t absolute = 0;
  if (__builtin_add_overflow(root.offset, root.length, &root_end) ||
      __builtin_add_overflow(offset, length, &relative_end) || __builtin_add_overflow(root.offset, offset, &absolute) ||
      relative_end > root.length) [[unlikely]] {
    return span_derivation_failure(root, offset, length);
  }
  // The lowest set bit of the offset bounds the alignment of what starts there.
  const std::uint64_t alignment = offset == 0 ? root.alignment : std::min(root.alignment, offset & (~offset + 1));
  return Span{root_id, absolute, length, alignment};
}

}  // namespace rootspan
