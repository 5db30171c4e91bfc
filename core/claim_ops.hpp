// The claim operations on one root (docs/concepts.md): acquiring, splitting
// and releasing claims. Each locks the root's mutex and nothing else, and
// fills the Diagnostic's operation, request and resolution. The bookkeeping
// they use is claims.hpp.
#pragma once

#include "core/root.hpp"

namespace rootspan {

// Offsets are relative to the root.
Result<Span> span_of(const Root &root, std::uint64_t offset, std::uint64_t length);
Result<Claim *> claim_acquire(Root &root, std::uint64_t offset, std::uint64_t length, rootspan_claim_mode mode);
// Ranges relative to the parent claim.
Result<void> claim_split(Claim &parent, const rootspan_range *ranges, std::size_t count, Claim **children);
Result<void> claim_release(Claim &claim);

}  // namespace rootspan
