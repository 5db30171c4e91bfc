#include "weights/files/retained_region.hpp"

#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "weights/files/checked_math.hpp"

namespace rootspan::weights {

namespace outcome = BOOST_OUTCOME_V2_NAMESPACE;

namespace {

std::string range_text(std::uint64_t offset, std::uint64_t end) {
  return "[" + std::to_string(offset) + "," + std::to_string(end) + ")";
}

std::string address_text(const void *pointer) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%p", pointer);
  return buffer;
}

}  // namespace

Result<RetainedRegion> RetainedRegion::make(std::shared_ptr<const StableHostMemory> owner, std::uint64_t offset,
                                            std::uint64_t length) {
  if (!owner) {
    return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, "retain_region", "a retained region needs an owner");
  }
  const auto end = checked_add(offset, length);
  if (!end) {
    return make_error(ROOTSPAN_ERR_RANGE_OVERFLOW, "retain_region",
                      "offset " + std::to_string(offset) + " + length " + std::to_string(length) + " overflows 64 bits",
                      std::numeric_limits<std::uint64_t>::max() - offset, length);
  }
  Diagnostic error;
  if (length == 0) {
    error = make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, "retain_region",
                       "a retained region must not be empty (length 0 at offset " + std::to_string(offset) + ")", 1, 0);
  } else if (const std::uint64_t size = owner->stable_bytes().size(); *end > size) {
    error = make_error(
        ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT, "retain_region",
        "range " + range_text(offset, *end) + " ends past its owner's " + std::to_string(size) + " bytes", size, *end);
  } else {
    return RetainedRegion(std::move(owner), offset, length);
  }
  error.requested = Requested::range(offset, length);
  return error;
}

std::span<const std::byte> RetainedRegion::bytes() const noexcept {
  return owner_->stable_bytes().subspan(static_cast<std::size_t>(offset_), static_cast<std::size_t>(length_));
}

Result<void> check_retained_identity(std::span<const std::byte> validated, const RetainedRegion &region,
                                     const std::function<std::string()> &what) {
  const auto retained = region.bytes();
  if (retained.size() != validated.size()) {
    return make_error(ROOTSPAN_ERR_INVALID_PAYLOAD, "load_component",
                      what() + ": retained host-memory region differs from its validated bytes: length " +
                          std::to_string(retained.size()) + " instead of " + std::to_string(validated.size()),
                      validated.size(), retained.size());
  }
  if (retained.data() != validated.data()) {
    return make_error(ROOTSPAN_ERR_INVALID_PAYLOAD, "load_component",
                      what() + ": retained host-memory region differs from its validated bytes: address " +
                          address_text(retained.data()) + " instead of " + address_text(validated.data()),
                      reinterpret_cast<std::uintptr_t>(validated.data()),
                      reinterpret_cast<std::uintptr_t>(retained.data()));
  }
  return outcome::success();
}

}  // namespace rootspan::weights
