// Root: one provider allocation, uniquely owned, validated at import
// (docs/concepts.md, L9). Everything that touches its bytes locks `mutex`, and
// only it: roots never share a lock on the claim path.
#pragma once

#include <functional>
#include <memory>
#include <mutex>

#include "claims.hpp"
#include "extent.hpp"
#include "provider.hpp"

namespace rootspan {

class Context;

struct Root {
  Context *context = nullptr;
  std::shared_ptr<Provider> provider;  // keeps the provider and its library alive (L8)
  rootspan_provider_allocation allocation{};
  std::uint64_t id = 0;
  Extent extent;
  rootspan_dtype dtype = ROOTSPAN_DTYPE_NONE;
  bool read_only = false;

  // For a root over a file mapping: fails (Io) when the file no longer
  // covers [offset, offset + length) of the allocation. Checked before each
  // mapping, so that a truncated file refuses a mapping instead of faulting.
  std::function<Result<void>(std::uint64_t offset, std::uint64_t length)> backing_check;

  mutable std::mutex mutex;
  ClaimBook claims;  // guarded by mutex

  bool host_accessible() const { return allocation.host_base != nullptr && provider->table().map_read != nullptr; }
  Requested request(std::uint64_t offset, std::uint64_t length) const {
    return Requested::root_range(id, extent.key, offset, length);
  }
};

inline std::uint64_t Claim::relative_offset() const { return span.offset - root->extent.offset; }

// What the caller asked of an allocation, checked against what came back.
struct AllocationExpectation {
  std::uint64_t byte_length = 0;
  std::uint64_t alignment = 1;
  rootspan_dtype dtype = ROOTSPAN_DTYPE_NONE;
};

// L9 checks of a provider allocation, in order: key halves non-zero, extent
// (RangeOverflow, InvalidAlignment, MisalignedOffset), domain granted, length
// as requested (LengthMismatch), alignment at least the requested one, host
// pointer meeting the claimed alignment (Misaligned), whole elements for a
// typed root (DTypeMismatch).
Result<void> validate_allocation(const Provider &provider, const rootspan_provider_allocation &allocation,
                                 const AllocationExpectation &expected);

}  // namespace rootspan
