// RetainedRegion: a bounds-checked subrange of stable host memory that keeps
// its owner alive (docs/weight-schema.md). It is what a zero-copy read-only host root
// holds on to: the file mapping lives as long as any region of it does, even
// after the checkpoint, the payload and the loader are gone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "core/diagnostic.hpp"
#include "weights/files/stable_host_memory.hpp"

namespace rootspan::weights {

class RetainedRegion {
 public:
  // The region [offset, offset + length) of `owner`. Checked in this order,
  // each failure with its own cause (operation "retain_region"):
  //   no owner                               -> ROOTSPAN_ERR_INVALID_ARGUMENT
  //   offset + length overflows 64 bits      -> ROOTSPAN_ERR_RANGE_OVERFLOW
  //   length is zero                         -> ROOTSPAN_ERR_INVALID_ARGUMENT
  //   the range ends past the owner's bytes  -> ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT
  //                                             (expected: owner size, actual: end)
  static Result<RetainedRegion> make(std::shared_ptr<const StableHostMemory> owner, std::uint64_t offset,
                                     std::uint64_t length);

  // The retained bytes: always inside owner_bytes(), never empty.
  std::span<const std::byte> bytes() const noexcept;
  // The whole owner, so a backend can prove that a page-aligned view around
  // bytes() stays inside what is retained.
  std::span<const std::byte> owner_bytes() const noexcept { return owner_->stable_bytes(); }
  std::uint64_t offset() const noexcept { return offset_; }
  std::uint64_t length() const noexcept { return length_; }
  const std::shared_ptr<const StableHostMemory> &owner() const noexcept { return owner_; }

 private:
  RetainedRegion(std::shared_ptr<const StableHostMemory> owner, std::uint64_t offset, std::uint64_t length)
      : owner_(std::move(owner)), offset_(offset), length_(length) {}

  std::shared_ptr<const StableHostMemory> owner_;
  std::uint64_t offset_ = 0;
  std::uint64_t length_ = 0;
};

// Proves that `region` carries the very bytes that were validated: the same
// address and the same length (docs/weight-schema.md), so a backend cannot retain a
// different range, or a different copy, than the one checked against the
// schema. Fails with ROOTSPAN_ERR_INVALID_PAYLOAD, operation "load_component";
// `what` names the segment or payload in the cause, and is called only then
// (a load checks thousands of segments that pass).
Result<void> check_retained_identity(std::span<const std::byte> validated, const RetainedRegion &region,
                                     const std::function<std::string()> &what);
inline Result<void> check_retained_identity(std::span<const std::byte> validated, const RetainedRegion &region,
                                            std::string_view what) {
  return check_retained_identity(validated, region, [what] { return std::string(what); });
}

}  // namespace rootspan::weights
