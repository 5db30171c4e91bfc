// Static plugins (docs/c-api.md): providers compiled into the library register
// the same entry function a plugin library exports.
#pragma once

#include <span>

#include "rootspan/provider.h"

namespace rootspan {

std::span<const rootspan_provider_entry_fn> static_provider_entries();

}  // namespace rootspan
