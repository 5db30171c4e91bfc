// The operations on one root's bytes: claims, mappings, device access and
// copies. Each locks the root's mutex and nothing else, and fills the
// Diagnostic's operation, request and resolution.
#pragma once

#include "root.hpp"

namespace rootspan {

// docs/concepts.md. Offsets are relative to the root.
Result<Span> span_of(const Root &root, std::uint64_t offset, std::uint64_t length);
Result<Claim *> claim_acquire(Root &root, std::uint64_t offset, std::uint64_t length, rootspan_claim_mode mode);
// Ranges relative to the parent claim.
Result<void> claim_split(Claim &parent, const rootspan_range *ranges, std::size_t count, Claim **children);
Result<void> claim_release(Claim &claim);

// docs/concepts.md. Offsets are relative to the claim.
Result<Mapping *> map_range(Claim &claim, rootspan_dtype dtype, std::uint64_t offset, std::uint64_t length, bool write);
void unmap(Mapping &mapping);

// docs/concepts.md.
Result<void> device_access_prepare(Claim &claim, const rootspan_device_access_request &request,
                                   rootspan_device_access &access);
Result<void> device_access_release(Claim &claim, const rootspan_device_access &access);

// Copies through the provider's copy hooks, or through a mapping when it has
// none. Offsets are relative to the claim.
Result<void> copy_from_host(Claim &claim, std::uint64_t offset, const void *source, std::uint64_t length);
Result<void> copy_to_host(Claim &claim, std::uint64_t offset, void *destination, std::uint64_t length);

// An upload that may still be running: the source bytes and the claim must
// stay as they are until copy_wait returns. Empty (event == nullptr) when the
// copy already finished.
struct CopyEvent {
  std::shared_ptr<Provider> provider;
  rootspan_provider_event *event = nullptr;
};
// copy_from_host, returning before the copy completes when the provider has
// asynchronous copies (an event_wait hook); otherwise it copies synchronously
// and returns an empty event. The same checks as copy_from_host.
Result<CopyEvent> copy_from_host_async(Claim &claim, std::uint64_t offset, const void *source, std::uint64_t length);
// Waits for the copy and destroys its event; `event` is empty afterwards,
// whether the wait succeeded or not.
Result<void> copy_wait(CopyEvent &event);

}  // namespace rootspan
