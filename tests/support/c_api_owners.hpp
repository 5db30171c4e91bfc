// Owning pointers for what the C API hands out, shared by every suite that
// uses the public API.
#pragma once

#include <memory>

#include "rootspan/rootspan.h"

namespace rootspan::testing {

struct ErrorFree {
  void operator()(rootspan_error *e) const { rootspan_error_free(e); }
};
// An error object, freed with rootspan_error_free.
using ErrorPtr = std::unique_ptr<rootspan_error, ErrorFree>;

}  // namespace rootspan::testing
