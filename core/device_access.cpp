// Device access (docs/concepts.md): a strided view of a claim for a kernel launch,
// validated before the provider sees it.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/device_access.hpp"
#include "struct_io.hpp"

namespace rootspan {

namespace {

std::string str(std::uint64_t v) { return std::to_string(v); }

// Wide enough for any stride times extent: no overflow to check.
__extension__ typedef __int128 Wide;

// True when no two index tuples of the layout reach the same element: sorted
// by |stride|, each stride must step past everything the smaller ones reach.
bool writes_each_element_once(const rootspan_device_access_request &request) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> dims;  // |stride|, extent - 1
  for (std::uint32_t i = 0; i < request.rank; ++i) {
    if (request.shape[i] == 0) return true;  // an empty view writes nothing
    if (request.shape[i] > 1) {
      const std::int64_t stride = request.strides[i];
      const std::uint64_t magnitude =
          stride < 0 ? ~static_cast<std::uint64_t>(stride) + 1 : static_cast<std::uint64_t>(stride);
      dims.emplace_back(magnitude, request.shape[i] - 1);
    }
  }
  std::sort(dims.begin(), dims.end());
  std::uint64_t reach = 0;  // furthest element the smaller strides reach
  for (const auto &[stride, last] : dims) {
    if (stride <= reach) return false;
    std::uint64_t span = 0;
    if (__builtin_mul_overflow(stride, last, &span) || __builtin_add_overflow(reach, span, &reach)) return false;
  }
  return true;
}

// The lowest and highest element the layout touches, relative to the claim, or
// nothing when it leaves [0, elements) or overflows.
bool layout_fits(const rootspan_device_access_request &request, std::uint64_t elements) {
  Wide low = static_cast<Wide>(request.element_offset);
  Wide high = low;
  for (std::uint32_t i = 0; i < request.rank; ++i) {
    if (request.shape[i] == 0) return true;
    const Wide step = static_cast<Wide>(request.strides[i]) * static_cast<Wide>(request.shape[i] - 1);
    (step < 0 ? low : high) += step;
  }
  return low >= 0 && high < static_cast<Wide>(elements);
}

}  // namespace

Result<void> device_access_prepare(Claim &claim, const rootspan_device_access_request &request,
                                   rootspan_device_access &access) {
  Root &root = *claim.root;
  const Requested requested = Requested::root_range(root.id, {request.key.domain, request.key.local},
                                                    claim.relative_offset(), request.byte_length);
  auto fail = [&](Diagnostic d) {
    d.operation = "device_access_prepare";
    d.requested = requested;
    d.resolution = claim.span;
    return d;
  };
  auto invalid = [&](std::string cause, std::uint64_t expected, std::uint64_t actual) {
    return fail(make_error(ROOTSPAN_ERR_INVALID_REQUEST, "", std::move(cause), expected, actual));
  };
  if (request.key.domain != root.extent.key.domain || request.key.local != root.extent.key.local) {
    return fail(make_error(ROOTSPAN_ERR_INVALID_REQUEST, "",
                           "request key (" + str(request.key.domain) + "," + str(request.key.local) +
                               ") does not match the root's key (" + str(root.extent.key.domain) + "," +
                               str(root.extent.key.local) + ")"));
  }
  if (request.byte_length > root.extent.length) {
    return invalid(
        "request of " + str(request.byte_length) + " bytes exceeds the root's extent of " + str(root.extent.length),
        root.extent.length, request.byte_length);
  }
  if (request.element_size == 0) return invalid("element size is zero", 1, 0);
  if (request.rank != 0 && (request.shape == nullptr || request.strides == nullptr)) {
    return fail(make_error(ROOTSPAN_ERR_INVALID_REQUEST, "", "rank is non-zero but shape or strides is NULL"));
  }
  if (claim.mode == ROOTSPAN_CLAIM_EXCLUSIVE && !writes_each_element_once(request)) {
    return fail(make_error(ROOTSPAN_ERR_INVALID_REQUEST, "",
                           "exclusive access needs a layout that writes no element twice; these strides alias"));
  }
  const std::uint64_t elements = std::min(request.byte_length, claim.span.length) / request.element_size;
  if (!layout_fits(request, elements)) {
    return fail(
        make_error(ROOTSPAN_ERR_INVALID_REQUEST, "",
                   "the strided layout reaches past the " + str(elements) + " elements of the claim and request"));
  }
  const rootspan_provider_table &table = root.provider->table();
  if (table.prepare_device_access == nullptr || table.release_device_access == nullptr) {
    return fail(
        make_error(ROOTSPAN_ERR_UNSUPPORTED, "", "provider '" + root.provider->name() + "' has no device access"));
  }
  std::lock_guard lock(root.mutex);
  if (claim.children != 0) return fail(make_error(ROOTSPAN_ERR_BUSY, "", "the claim is split"));
  rootspan_device_access_request forwarded = request;
  forwarded.struct_size = sizeof forwarded;
  rootspan_device_access prepared{};
  prepared.struct_size = sizeof prepared;
  auto called = root.provider->invoke("prepare_device_access", [&](rootspan_provider_message *m) {
    return table.prepare_device_access(root.provider->instance(), &root.allocation, claim.span.offset, &forwarded,
                                       &prepared, m);
  });
  if (!called) return fail(called.error());
  if (prepared.device_ptr == nullptr && request.byte_length != 0) {
    root.provider->invoke_quietly(
        [&] { table.release_device_access(root.provider->instance(), &root.allocation, &prepared); });
    return fail(make_error(ROOTSPAN_ERR_PROVIDER_FAILURE, "",
                           "provider '" + root.provider->name() + "' returned a NULL device pointer"));
  }
  claim.accesses.push_back(prepared);
  write_struct(&access, prepared);
  ++claim.device_accesses;
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<void> device_access_release(Claim &claim, const rootspan_device_access &access) {
  Root &root = *claim.root;
  std::lock_guard lock(root.mutex);
  if (claim.device_accesses == 0) {
    Diagnostic d =
        make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, "device_access_release", "the claim has no device access to release");
    return d;
  }
  const rootspan_device_access full = read_struct(&access);
  // Only an access this claim prepared reaches the provider's release hook:
  // a stranger (another claim's, a copy altered since) is refused before it.
  auto kept = std::find_if(claim.accesses.begin(), claim.accesses.end(), [&](const rootspan_device_access &a) {
    return a.device_ptr == full.device_ptr && a.provider_token == full.provider_token;
  });
  if (kept == claim.accesses.end()) {
    return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, "device_access_release",
                      "the claim prepared no device access with this device pointer and provider token (it holds " +
                          std::to_string(claim.accesses.size()) + "); pass back the access prepare filled in");
  }
  const rootspan_provider_table &table = root.provider->table();
  root.provider->invoke_quietly(
      [&] { table.release_device_access(root.provider->instance(), &root.allocation, &full); });
  claim.accesses.erase(kept);
  --claim.device_accesses;
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace rootspan
