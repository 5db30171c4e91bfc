// Mapping a claimed range into host memory (docs/concepts.md): locks the
// root's mutex and nothing else, and fills the Diagnostic's operation,
// request and resolution.
#pragma once

#include "core/root.hpp"

namespace rootspan {

// Offsets are relative to the claim.
Result<Mapping *> map_range(Claim &claim, rootspan_dtype dtype, std::uint64_t offset, std::uint64_t length, bool write);
void unmap(Mapping &mapping);

}  // namespace rootspan
