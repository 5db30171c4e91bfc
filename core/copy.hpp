// Copies between host memory and a claimed range (docs/concepts.md): through
// the provider's copy hooks, or through a mapping when it has none. Each locks
// the root's mutex and nothing else, and fills the Diagnostic's operation,
// request and resolution.
#pragma once

#include <memory>

#include "core/root.hpp"

namespace rootspan {

// Offsets are relative to the claim.
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
