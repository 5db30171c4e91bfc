// Span derivation (docs/concepts.md): a range relative to a root becomes a span
// bound to that root, with its derived alignment.
#pragma once

#include <cstdint>

#include "core/diagnostic.hpp"
#include "core/extent.hpp"
#include "core/span.hpp"

namespace rootspan {

// Checks, in order: root end overflow and relative end overflow
// (RangeOverflow); absolute offset overflow (OffsetOverflow); outside the root
// (OutsideRootExtent). Derived alignment is the root's when the relative
// offset is 0, else min(root alignment, lowest set bit of the offset).
Result<Span> derive_span(std::uint64_t root_id, const Extent &root, std::uint64_t offset, std::uint64_t length);

}  // namespace rootspan
