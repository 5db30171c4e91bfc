#include "core/span_derivation.hpp"

#include <string>

namespace rootspan {

Failure span_derivation_failure(const Extent &root, std::uint64_t offset, std::uint64_t length) {
  std::uint64_t root_end = 0;
  if (__builtin_add_overflow(root.offset, root.length, &root_end)) {
    return make_error(ROOTSPAN_ERR_RANGE_OVERFLOW, "span_derive", "root end overflows 64 bits");
  }
  std::uint64_t relative_end = 0;
  if (__builtin_add_overflow(offset, length, &relative_end)) {
    return make_error(
        ROOTSPAN_ERR_RANGE_OVERFLOW, "span_derive",
        "relative offset " + std::to_string(offset) + " + length " + std::to_string(length) + " overflows 64 bits");
  }
  std::uint64_t absolute = 0;
  if (__builtin_add_overflow(root.offset, offset, &absolute)) {
    return make_error(ROOTSPAN_ERR_OFFSET_OVERFLOW, "span_derive",
                      "root offset " + std::to_string(root.offset) + " + relative offset " + std::to_string(offset) +
                          " overflows 64 bits");
  }
  // The only check left: the range ends past the root.
  return make_error(
      ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT, "span_derive",
      "range ends at " + std::to_string(relative_end) + ", past the root's length " + std::to_string(root.length),
      root.length, relative_end);
}

}  // namespace rootspan
