// Device access to a claimed range (docs/concepts.md): locks the root's
// mutex and nothing else, and fills the Diagnostic's operation, request and
// resolution.
#pragma once

#include "core/root.hpp"

namespace rootspan {

Result<void> device_access_prepare(Claim &claim, const rootspan_device_access_request &request,
                                   rootspan_device_access &access);
Result<void> device_access_release(Claim &claim, const rootspan_device_access &access);

}  // namespace rootspan
