// Mappings (docs/concepts.md): host views of a claimed range, validated every time
// on what the provider returned (L9).
#include <bit>
#include <string>

#include "core/mapping.hpp"
#include "dtype.hpp"

namespace rootspan {

namespace {

std::string str(std::uint64_t v) { return std::to_string(v); }

// x % d without a 64-bit division when d is a power of two, as every element
// size and alignment is: the divisions were the largest cost of a mapping.
std::uint64_t remainder(std::uint64_t x, std::uint64_t d) { return d != 0 && (d & (d - 1)) == 0 ? x & (d - 1) : x % d; }

// The element type rule: typed roots take the same type or its complex/real
// partner; untyped roots take any whole-byte type whose size divides the span.
Result<std::uint64_t> element_size_for(const Root &root, rootspan_dtype dtype, std::uint64_t length) {
  if (!dtype_is_known(dtype)) return unknown_enum("dtype", "rootspan_dtype", dtype);
  if (root.dtype != ROOTSPAN_DTYPE_NONE && !dtype_can_view(root.dtype, dtype)) {
    return make_error(ROOTSPAN_ERR_DTYPE_MISMATCH, "",
                      std::string("a root of ") + dtype_name(root.dtype) + " cannot be viewed as " + dtype_name(dtype));
  }
  const std::uint64_t size = dtype == ROOTSPAN_DTYPE_NONE ? 1 : dtype_size(dtype);
  if (size == 0) {
    return make_error(ROOTSPAN_ERR_DTYPE_MISMATCH, "",
                      std::string(dtype_name(dtype)) + " has no whole-byte size and cannot be mapped");
  }
  if (remainder(length, size) != 0) {
    return make_error(ROOTSPAN_ERR_DTYPE_MISMATCH, "",
                      "span length " + str(length) + " is not a whole number of " + dtype_name(dtype) + " elements", 0,
                      remainder(length, size));
  }
  return size;
}

}  // namespace

Result<Mapping *> map_range(Claim &claim, rootspan_dtype dtype, std::uint64_t offset, std::uint64_t length,
                            bool write) {
  Root &root = *claim.root;
  const char *operation = write ? "map_write" : "map_read";
  const std::uint64_t claim_relative = claim.relative_offset();
  std::uint64_t relative = 0;
  std::uint64_t end = 0;
  const bool overflow =
      __builtin_add_overflow(claim_relative, offset, &relative) || __builtin_add_overflow(offset, length, &end);
  auto fail = [&](Diagnostic d) {  // what was requested is said only on a failure
    d.operation = operation;
    d.requested = root.request(overflow ? claim_relative : relative, length);
    return d;
  };
  if (overflow) {
    return fail(make_error(ROOTSPAN_ERR_RANGE_OVERFLOW, "",
                           "offset " + str(offset) + " + length " + str(length) + " overflows 64 bits"));
  }
  if (end > claim.span.length) {
    return fail(make_error(ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT, "",
                           "range ends at " + str(end) + ", past the claim's length " + str(claim.span.length),
                           claim.span.length, end));
  }
  if (write && root.read_only) {
    return fail(make_error(ROOTSPAN_ERR_READ_ONLY, "", "root is read-only"));
  }
  if (write && claim.mode != ROOTSPAN_CLAIM_EXCLUSIVE) {
    return fail(make_error(ROOTSPAN_ERR_READ_ONLY, "", "map_write needs an exclusive claim; this one is shared"));
  }
  auto size = element_size_for(root, dtype, length);
  if (!size) return fail(size.error());
  // Element-aligned subrange: on a typed root, both the root's and the view's
  // elements must start at the range.
  const std::uint64_t grain =
      std::max(size.value(), root.dtype == ROOTSPAN_DTYPE_NONE ? std::uint64_t{1} : dtype_size(root.dtype));
  if (remainder(relative, grain) != 0 || remainder(length, grain) != 0) {
    return fail(make_error(ROOTSPAN_ERR_MISALIGNED_OFFSET, "",
                           "range [" + str(relative) + "," + str(relative + length) + ") is not element-aligned for " +
                               str(grain) + "-byte elements",
                           0, remainder(relative, grain)));
  }
  const rootspan_provider_table &table = root.provider->table();
  auto hook = write ? table.map_write : table.map_read;
  if (hook == nullptr || table.unmap == nullptr || root.allocation.host_base == nullptr) {
    return fail(make_error(ROOTSPAN_ERR_UNSUPPORTED, "",
                           "provider '" + root.provider->name() + "' has no host access for " + operation));
  }

  std::lock_guard lock(root.mutex);
  if (claim.children != 0) {
    return fail(make_error(ROOTSPAN_ERR_BUSY, "", "the claim is split; map its children instead"));
  }
  const std::uint64_t absolute = claim.span.offset + offset;
  if (root.backing_check) {
    if (auto backed = root.backing_check(absolute, length); !backed) return fail(backed.error());
  }
  rootspan_provider_mapping mapped{};
  mapped.struct_size = sizeof mapped;
  auto called = root.provider->invoke(operation, [&](rootspan_provider_message *m) {
    return hook(root.provider->instance(), &root.allocation, absolute, length, &mapped, m);
  });
  if (!called) return fail(called.error());
  auto undo = [&](Diagnostic d) {  // the provider's mapping broke a rule (L9)
    root.provider->invoke_quietly([&] { table.unmap(root.provider->instance(), &root.allocation, &mapped); });
    d.policy = "L9";
    d.resolution = Span{root.id, absolute, length, 1};
    return fail(std::move(d));
  };
  if (mapped.byte_length != length) {
    return undo(make_error(ROOTSPAN_ERR_LENGTH_MISMATCH, "",
                           "provider '" + root.provider->name() + "' mapped " + str(mapped.byte_length) +
                               " bytes for a span of " + str(length),
                           length, mapped.byte_length));
  }
  const std::uint64_t alignment = dtype_alignment(dtype);
  const auto address = reinterpret_cast<std::uintptr_t>(mapped.data);
  if ((mapped.data == nullptr && length != 0) || remainder(address, alignment) != 0) {
    return undo(make_error(ROOTSPAN_ERR_MISALIGNED, "",
                           "provider '" + root.provider->name() + "' returned a pointer " +
                               str(remainder(address, alignment)) + " bytes past " + str(alignment) +
                               "-byte alignment" + (mapped.data == nullptr ? " (NULL)" : ""),
                           0, remainder(address, alignment)));
  }
  // The core copies through this pointer (copy_from_host, copy_to_host):
  // one that misses the allocation's bytes would have it write elsewhere.
  const auto expected = reinterpret_cast<std::uintptr_t>(root.allocation.host_base) + absolute;
  if (length != 0 && address != expected) {
    return undo(make_error(ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT, "",
                           "provider '" + root.provider->name() + "' mapped offset " + str(absolute) +
                               " at a pointer " + str(address > expected ? address - expected : expected - address) +
                               " bytes away from host_base + " + str(absolute),
                           expected, address));
  }
  Mapping *mapping = root.claims.new_mapping(&claim);
  mapping->provider = mapped;
  mapping->write = write;
  return mapping;
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
