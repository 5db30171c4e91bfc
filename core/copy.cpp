// Copies between host memory and a claimed range: through the provider's copy
// hooks when it has them (device memory), else through a byte mapping.
#include <cstring>
#include <string>
#include <utility>

#include "core/copy.hpp"
#include "core/mapping.hpp"
#include "mapped_read.hpp"

namespace rootspan {

namespace {

// With `event` set and an event_wait hook present, the provider may return
// before the copy completes and hand its completion event back in *event.
Result<void> copy(Claim &claim, std::uint64_t offset, void *host, std::uint64_t length, bool to_device,
                  rootspan_provider_event **event = nullptr) {
  Root &root = *claim.root;
  const char *operation = to_device ? "copy_from_host" : "copy_to_host";
  const rootspan_provider_table &table = root.provider->table();
  auto hook_present = to_device ? table.copy_from_host != nullptr : table.copy_to_host != nullptr;
  if (!hook_present) {
    // A typed root is copied in its own elements; the mapping checks that the
    // range is made of whole ones.
    auto mapped = map_range(claim, root.dtype, offset, length, to_device);
    if (!mapped) {
      Diagnostic d = mapped.error();
      d.operation = operation;
      return d;
    }
    Mapping *mapping = mapped.value();
    // A root over a file mapping faults if the file was truncated meanwhile.
    const bool copied = to_device ? copy_surviving_sigbus(mapping->provider.data, host, length)
                                  : copy_surviving_sigbus(host, mapping->provider.data, length);
    unmap(*mapping);
    if (!copied) {
      Diagnostic d = make_error(ROOTSPAN_ERR_IO, operation,
                                "the bytes of root " + std::to_string(root.id) +
                                    " could not be read (SIGBUS): the file it maps was truncated");
      d.requested = root.request(claim.relative_offset() + offset, length);
      d.resolution = claim.span;
      return d;
    }
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  }
  std::uint64_t end = 0;
  const Requested requested = root.request(claim.relative_offset() + offset, length);
  auto fail = [&](Diagnostic d) {
    d.operation = operation;
    d.requested = requested;
    d.resolution = claim.span;
    return d;
  };
  if (__builtin_add_overflow(offset, length, &end) || end > claim.span.length) {
    return fail(make_error(ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT, "",
                           "copy range leaves the claim of " + std::to_string(claim.span.length) + " bytes",
                           claim.span.length, end));
  }
  if (to_device && (root.read_only || claim.mode != ROOTSPAN_CLAIM_EXCLUSIVE)) {
    return fail(make_error(ROOTSPAN_ERR_READ_ONLY, "", "copy_from_host needs an exclusive claim on a writable root"));
  }
  const std::uint64_t absolute = claim.span.offset + offset;
  std::lock_guard lock(root.mutex);
  if (claim.children != 0) {
    return fail(make_error(ROOTSPAN_ERR_BUSY, "", "the claim is split; copy through its children instead"));
  }
  rootspan_provider_event **async = event != nullptr && table.event_wait != nullptr ? event : nullptr;
  auto called = root.provider->invoke(operation, [&](rootspan_provider_message *m) {
    return to_device
               ? table.copy_from_host(root.provider->instance(), &root.allocation, absolute, host, length, async, m)
               : table.copy_to_host(root.provider->instance(), &root.allocation, absolute, host, length, async, m);
  });
  if (!called) return fail(called.error());
  return called;
}

}  // namespace

Result<void> copy_from_host(Claim &claim, std::uint64_t offset, const void *source, std::uint64_t length) {
  return copy(claim, offset, const_cast<void *>(source), length, true);
}

Result<void> copy_to_host(Claim &claim, std::uint64_t offset, void *destination, std::uint64_t length) {
  return copy(claim, offset, destination, length, false);
}

Result<CopyEvent> copy_from_host_async(Claim &claim, std::uint64_t offset, const void *source, std::uint64_t length) {
  CopyEvent done{claim.root->provider, nullptr};
  auto copied = copy(claim, offset, const_cast<void *>(source), length, true, &done.event);
  if (!copied) return copied.error();  // a failed hook hands back no event
  return done;
}

Result<void> copy_wait(CopyEvent &event) {
  if (event.event == nullptr) return BOOST_OUTCOME_V2_NAMESPACE::success();
  rootspan_provider_event *waited = std::exchange(event.event, nullptr);
  const Provider &provider = *event.provider;
  return provider.invoke("event_wait", [&](rootspan_provider_message *m) {
    return provider.table().event_wait(provider.instance(), waited, m);
  });
}

}  // namespace rootspan
