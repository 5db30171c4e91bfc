#include "root.hpp"

#include <string>

#include "dtype.hpp"

namespace rootspan {

namespace {
std::string str(std::uint64_t v) { return std::to_string(v); }
}  // namespace

Result<void> validate_allocation(const Provider &provider, const rootspan_provider_allocation &allocation,
                                 const AllocationExpectation &expected) {
  const Key key{allocation.key.domain, allocation.key.local};
  BOOST_OUTCOME_TRY(validate_key(key));
  BOOST_OUTCOME_TRY(validate_extent({key, allocation.byte_offset, allocation.byte_length, allocation.alignment}));
  if (!provider.owns_domain(key.domain)) {
    return make_error(
        ROOTSPAN_ERR_DOMAIN_NOT_GRANTED, "",
        "provider '" + provider.name() + "' reported domain " + str(key.domain) + ", which it was not granted");
  }
  if (allocation.byte_length != expected.byte_length) {
    return make_error(ROOTSPAN_ERR_LENGTH_MISMATCH, "",
                      "provider '" + provider.name() + "' returned " + str(allocation.byte_length) +
                          " bytes for a request of " + str(expected.byte_length),
                      expected.byte_length, allocation.byte_length);
  }
  if (allocation.alignment < expected.alignment) {
    return make_error(ROOTSPAN_ERR_MISALIGNED, "",
                      "provider '" + provider.name() + "' guarantees alignment " + str(allocation.alignment) +
                          ", less than the requested " + str(expected.alignment),
                      expected.alignment, allocation.alignment);
  }
  if (allocation.host_base != nullptr) {
    const auto address = reinterpret_cast<std::uintptr_t>(allocation.host_base) + allocation.byte_offset;
    if (address % allocation.alignment != 0) {
      return make_error(ROOTSPAN_ERR_MISALIGNED, "",
                        "provider '" + provider.name() + "' claims alignment " + str(allocation.alignment) +
                            " but its host pointer is " + str(address % allocation.alignment) +
                            " bytes past an aligned address",
                        0, address % allocation.alignment);
    }
  }
  if (expected.dtype != ROOTSPAN_DTYPE_NONE) {
    const std::uint64_t size = dtype_size(expected.dtype);
    if (size == 0 || allocation.byte_length % size != 0) {
      return make_error(ROOTSPAN_ERR_DTYPE_MISMATCH, "",
                        std::string("a typed root of ") + dtype_name(expected.dtype) + " needs a whole number of " +
                            str(size) + "-byte elements; length is " + str(allocation.byte_length),
                        0, size == 0 ? allocation.byte_length : allocation.byte_length % size);
    }
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace rootspan
