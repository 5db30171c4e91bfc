// Span derivation (docs/concepts.md): a range relative to a root becomes a span
// bound to that root, with its derived alignment.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/diagnostic.hpp"
#include "core/extent.hpp"
#include "core/span.hpp"

namespace rootspan {

// The rule a range breaks, for span_derivation_failure to word.
enum class SpanRefusal {
  kRootEndOverflows,      // root offset + root length (RangeOverflow)
  kRelativeEndOverflows,  // offset + length (RangeOverflow)
  kOffsetOverflows,       // root offset + offset (OffsetOverflow)
  kOutsideRoot,           // the range ends past the root (OutsideRootExtent)
};

// The Diagnostic of `refusal` for (offset, length); out of line, as only a
// failure builds a message.
Failure span_derivation_failure(SpanRefusal refusal, const Extent &root, std::uint64_t offset, std::uint64_t length);

// Checks, in this order, the rules of SpanRefusal. Derived alignment is the
// root's when the relative offset is 0, else min(root alignment, lowest set
// bit of the offset). Inline, as every claim and mapping takes this path.
inline Result<Span> derive_span(std::uint64_t root_id, const Extent &root, std::uint64_t offset, std::uint64_t length) {
  std::uint64_t root_end = 0;
  std::uint64_t relative_end = 0;
  std::uint64_t absolute = 0;
  if (__builtin_add_overflow(root.offset, root.length, &root_end)) [[unlikely]] {
    return span_derivation_failure(SpanRefusal::kRootEndOverflows, root, offset, length);
  }
  if (__builtin_add_overflow(offset, length, &relative_end)) [[unlikely]] {
    return span_derivation_failure(SpanRefusal::kRelativeEndOverflows, root, offset, length);
  }
  if (__builtin_add_overflow(root.offset, offset, &absolute)) [[unlikely]] {
    return span_derivation_failure(SpanRefusal::kOffsetOverflows, root, offset, length);
  }
  if (relative_end > root.length) [[unlikely]] {
    return span_derivation_failure(SpanRefusal::kOutsideRoot, root, offset, length);
  }
  // The lowest set bit of the offset bounds the alignment of what starts there.
  const std::uint64_t alignment = offset == 0 ? root.alignment : std::min(root.alignment, offset & (~offset + 1));
  return Span{root_id, absolute, length, alignment};
}

}  // namespace rootspan
