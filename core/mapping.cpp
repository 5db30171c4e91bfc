// Mappings (docs/concepts.md): host views of a claimed range, validated every time
// on what the provider returned (L9).
//
// Every claim -> map -> unmap -> release takes this path, so the checks are
// kept apart from their messages: each check names the rule a request or a
// provider's answer breaks (a Refusal), and only a refusal builds a message,
// in a function of its own that the success path never enters.
#include <bit>
#include <string>
#include <utility>

#include "core/mapping.hpp"
#include "dtype.hpp"

namespace rootspan {

namespace {

std::string str(std::uint64_t v) { return std::to_string(v); }

// x % d without a 64-bit division when d is a power of two, as every element
// size and alignment is: the divisions were the largest cost of a mapping.
std::uint64_t remainder(std::uint64_t x, std::uint64_t d) { return d != 0 && (d & (d - 1)) == 0 ? x & (d - 1) : x % d; }

// The rule a mapping breaks; kNone when it breaks none.
enum class Refusal {
  kNone,
  // The request, checked before the provider is asked:
  kRangeOverflow,    // offset + length overflows 64 bits
  kPastClaim,        // the range ends past the claim
  kReadOnlyRoot,     // map_write on a read-only root
  kSharedClaim,      // map_write needs an exclusive claim
  kUnknownDtype,     // not a rootspan_dtype
  kDtypeCannotView,  // a typed root viewed as another type
  kNoWholeBytes,     // a sub-byte type has no byte size
  kPartialElement,   // the length is not whole elements
  kNotElementAligned,
  kNoHostAccess,  // the provider has no hook, or the root no host address
  kSplitClaim,    // checked under the root's lock: map the children instead
  // The provider's answer (L9), checked before it is handed out:
  kLengthMismatch,
  kMisalignedPointer,
  kAwayFromAllocation,  // not host_base + offset: copies through it would miss the allocation
};

// One request to map_range and what its checks derive from it.
struct Request {
  const Claim &claim;
  rootspan_dtype dtype;
  std::uint64_t offset;  // relative to the claim
  std::uint64_t length;
  bool write;
  bool overflowed = false;     // offset + length, or the offset relative to the root, overflows
  std::uint64_t relative = 0;  // the offset relative to the root
  std::uint64_t element = 0;   // bytes per element of the view
  std::uint64_t grain = 0;     // the range must start and end on this

  const Root &root() const { return *claim.root; }
  const char *operation() const { return write ? "map_write" : "map_read"; }
};

// The request's checks, in the order they are reported.
Refusal check_request(Request &r) {
  const Root &root = r.root();
  std::uint64_t end = 0;
  r.overflowed = __builtin_add_overflow(r.claim.relative_offset(), r.offset, &r.relative) ||
                 __builtin_add_overflow(r.offset, r.length, &end);
  if (r.overflowed) return Refusal::kRangeOverflow;
  if (end > r.claim.span.length) return Refusal::kPastClaim;
  if (r.write && root.read_only) return Refusal::kReadOnlyRoot;
  if (r.write && r.claim.mode != ROOTSPAN_CLAIM_EXCLUSIVE) return Refusal::kSharedClaim;
  // The element type rule: typed roots take the same type or its complex/real
  // partner; untyped roots take any whole-byte type whose size divides the span.
  if (!dtype_is_known(r.dtype)) return Refusal::kUnknownDtype;
  if (root.dtype != ROOTSPAN_DTYPE_NONE && !dtype_can_view(root.dtype, r.dtype)) return Refusal::kDtypeCannotView;
  r.element = r.dtype == ROOTSPAN_DTYPE_NONE ? 1 : dtype_size(r.dtype);
  if (r.element == 0) return Refusal::kNoWholeBytes;
  if (remainder(r.length, r.element) != 0) return Refusal::kPartialElement;
  // Element-aligned subrange: on a typed root, both the root's and the view's
  // elements must start at the range.
  r.grain = std::max(r.element, root.dtype == ROOTSPAN_DTYPE_NONE ? std::uint64_t{1} : dtype_size(root.dtype));
  if (remainder(r.relative, r.grain) != 0 || remainder(r.length, r.grain) != 0) return Refusal::kNotElementAligned;
  const rootspan_provider_table &table = root.provider->table();
  if ((r.write ? table.map_write : table.map_read) == nullptr || table.unmap == nullptr ||
      root.allocation.host_base == nullptr) {
    return Refusal::kNoHostAccess;
  }
  return Refusal::kNone;
}

// What the provider returned for [absolute, absolute + length), checked.
Refusal check_answer(const Request &r, const rootspan_provider_mapping &mapped, std::uint64_t absolute) {
  if (mapped.byte_length != r.length) return Refusal::kLengthMismatch;
  const auto address = reinterpret_cast<std::uintptr_t>(mapped.data);
  if ((mapped.data == nullptr && r.length != 0) || remainder(address, dtype_alignment(r.dtype)) != 0) {
    return Refusal::kMisalignedPointer;
  }
  // The core copies through this pointer (copy_from_host, copy_to_host):
  // one that misses the allocation's bytes would have it write elsewhere.
  const auto expected = reinterpret_cast<std::uintptr_t>(r.root().allocation.host_base) + absolute;
  if (r.length != 0 && address != expected) return Refusal::kAwayFromAllocation;
  return Refusal::kNone;
}

// A Diagnostic for the request: its operation, and the range requested.
[[gnu::cold]] Diagnostic failure(const Request &r, Diagnostic d) {
  return with_request(std::move(d), r.operation(),
                      r.root().request(r.overflowed ? r.claim.relative_offset() : r.relative, r.length));
}

[[gnu::cold, gnu::noinline]] Diagnostic word(const Request &r, Refusal refusal, const rootspan_provider_mapping *mapped,
                                             std::uint64_t absolute) {
  const Root &root = r.root();
  const std::string provider = "provider '" + root.provider->name() + "'";
  switch (refusal) {
    case Refusal::kRangeOverflow:
      return failure(r, make_error(ROOTSPAN_ERR_RANGE_OVERFLOW, "",
                                   "offset " + str(r.offset) + " + length " + str(r.length) + " overflows 64 bits"));
    case Refusal::kPastClaim:
      return failure(r, make_error(ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT, "",
                                   "range ends at " + str(r.offset + r.length) + ", past the claim's length " +
                                       str(r.claim.span.length),
                                   r.claim.span.length, r.offset + r.length));
    case Refusal::kReadOnlyRoot:
      return failure(r, make_error(ROOTSPAN_ERR_READ_ONLY, "", "root is read-only"));
    case Refusal::kSharedClaim:
      return failure(r,
                     make_error(ROOTSPAN_ERR_READ_ONLY, "", "map_write needs an exclusive claim; this one is shared"));
    case Refusal::kUnknownDtype:
      return failure(r, unknown_enum("dtype", "rootspan_dtype", r.dtype));
    case Refusal::kDtypeCannotView:
      return failure(r, make_error(ROOTSPAN_ERR_DTYPE_MISMATCH, "",
                                   std::string("a root of ") + dtype_name(root.dtype) + " cannot be viewed as " +
                                       dtype_name(r.dtype)));
    case Refusal::kNoWholeBytes:
      return failure(r, make_error(ROOTSPAN_ERR_DTYPE_MISMATCH, "",
                                   std::string(dtype_name(r.dtype)) + " has no whole-byte size and cannot be mapped"));
    case Refusal::kPartialElement:
      return failure(r, make_error(ROOTSPAN_ERR_DTYPE_MISMATCH, "",
                                   "span length " + str(r.length) + " is not a whole number of " + dtype_name(r.dtype) +
                                       " elements",
                                   0, remainder(r.length, r.element)));
    case Refusal::kNotElementAligned:
      return failure(r, make_error(ROOTSPAN_ERR_MISALIGNED_OFFSET, "",
                                   "range [" + str(r.relative) + "," + str(r.relative + r.length) +
                                       ") is not element-aligned for " + str(r.grain) + "-byte elements",
                                   0, remainder(r.relative, r.grain)));
    case Refusal::kNoHostAccess:
      return failure(r,
                     make_error(ROOTSPAN_ERR_UNSUPPORTED, "", provider + " has no host access for " + r.operation()));
    case Refusal::kSplitClaim:
      return failure(r, make_error(ROOTSPAN_ERR_BUSY, "", "the claim is split; map its children instead"));
    case Refusal::kLengthMismatch:
      return failure(
          r, make_error(ROOTSPAN_ERR_LENGTH_MISMATCH, "",
                        provider + " mapped " + str(mapped->byte_length) + " bytes for a span of " + str(r.length),
                        r.length, mapped->byte_length));
    case Refusal::kMisalignedPointer: {
      const std::uint64_t alignment = dtype_alignment(r.dtype);
      const std::uint64_t off = remainder(reinterpret_cast<std::uintptr_t>(mapped->data), alignment);
      return failure(r, make_error(ROOTSPAN_ERR_MISALIGNED, "",
                                   provider + " returned a pointer " + str(off) + " bytes past " + str(alignment) +
                                       "-byte alignment" + (mapped->data == nullptr ? " (NULL)" : ""),
                                   0, off));
    }
    case Refusal::kAwayFromAllocation: {
      const auto address = reinterpret_cast<std::uintptr_t>(mapped->data);
      const auto expected = reinterpret_cast<std::uintptr_t>(root.allocation.host_base) + absolute;
      return failure(r, make_error(ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT, "",
                                   provider + " mapped offset " + str(absolute) + " at a pointer " +
                                       str(address > expected ? address - expected : expected - address) +
                                       " bytes away from host_base + " + str(absolute),
                                   expected, address));
    }
    case Refusal::kNone:
      break;
  }
  return failure(r, make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, "", "refused"));  // unreachable: every refusal is worded
}

// A mapping record not yet handed out, which the provider's hook writes
// into: given back to its book on every way out of map_range but success,
// an exception while a refusal is worded included.
class PendingMapping {
 public:
  PendingMapping(ClaimBook &book, Claim &claim, bool write) : book_(book), mapping_(book.new_mapping(&claim, write)) {}
  ~PendingMapping() {
    if (mapping_ != nullptr) book_.free_mapping(mapping_);
  }
  PendingMapping(const PendingMapping &) = delete;
  PendingMapping &operator=(const PendingMapping &) = delete;

  rootspan_provider_mapping &provider() { return mapping_->provider; }
  Mapping *hand_out() { return std::exchange(mapping_, nullptr); }

 private:
  ClaimBook &book_;
  Mapping *mapping_;
};

}  // namespace

Result<Mapping *> map_range(Claim &claim, rootspan_dtype dtype, std::uint64_t offset, std::uint64_t length,
                            bool write) {
  Request r{claim, dtype, offset, length, write};
  if (const Refusal refusal = check_request(r); refusal != Refusal::kNone) [[unlikely]] {
    return word(r, refusal, nullptr, 0);
  }
  Root &root = *claim.root;
  const rootspan_provider_table &table = root.provider->table();
  std::lock_guard lock(root.mutex);
  if (claim.children != 0) [[unlikely]] {
    return word(r, Refusal::kSplitClaim, nullptr, 0);
  }
  const std::uint64_t absolute = claim.span.offset + offset;
  if (root.backing_check) {
    if (auto backed = root.backing_check(absolute, length); !backed) return failure(r, *backed.error());
  }
  // The provider writes straight into the record (no copy on the hot path).
  PendingMapping pending(root.claims, claim, write);
  rootspan_provider_mapping &mapped = pending.provider();
  auto hook = write ? table.map_write : table.map_read;
  auto called = root.provider->invoke(r.operation(), [&](rootspan_provider_message *m) {
    return hook(root.provider->instance(), &root.allocation, absolute, length, &mapped, m);
  });
  if (!called) [[unlikely]] {
    return failure(r, *called.error());
  }
  if (const Refusal refusal = check_answer(r, mapped, absolute); refusal != Refusal::kNone) [[unlikely]] {
    // The provider's mapping broke a rule (L9): it is handed back.
    root.provider->invoke_quietly([&] { table.unmap(root.provider->instance(), &root.allocation, &mapped); });
    Diagnostic d = word(r, refusal, &mapped, absolute);
    d.policy = "L9";
    d.resolution = Span{root.id, absolute, length, 1};
    return d;
  }
  return pending.hand_out();
}

void unmap(Mapping &mapping) {
  Claim &claim = *mapping.claim;
  Root &root = *claim.root;
  std::lock_guard lock(root.mutex);
  const rootspan_provider_table &table = root.provider->table();
  root.provider->invoke_quietly([&] { table.unmap(root.provider->instance(), &root.allocation, &mapping.provider); });
  root.claims.free_mapping(&mapping);
}

}  // namespace rootspan
