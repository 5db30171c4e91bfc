#include "core/span_derivation.hpp"

#include <string>

namespace rootspan {

Failure span_derivation_failure(SpanRefusal refusal, const Extent &root, std::uint64_t offset, std::uint64_t length) {
  switch (refusal) {
    case SpanRefusal::kRootEndOverflows:
      return make_error(ROOTSPAN_ERR_RANGE_OVERFLOW, "span_derive", "root end overflows 64 bits");
    case SpanRefusal::kRelativeEndOverflows:
      return make_error(
          ROOTSPAN_ERR_RANGE_OVERFLOW, "span_derive",
          "relative offset " + std::to_string(offset) + " + length " + std::to_string(length) + " overflows 64 bits");
    case SpanRefusal::kOffsetOverflows:
      return make_error(ROOTSPAN_ERR_OFFSET_OVERFLOW, "span_derive",
                        "root offset " + std::to_string(root.offset) + " + relative offset " + std::to_string(offset) +
                            " overflows 64 bits");
    case SpanRefusal::kOutsideRoot:
      break;
  }
  const std::uint64_t end = offset + length;  // does not overflow: that was checked first
  return make_error(ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT, "span_derive",
                    "range ends at " + std::to_string(end) + ", past the root's length " + std::to_string(root.length),
                    root.length, end);
}

}  // namespace rootspan
