// Turns a failed C API call inside a benchmark into a benchmark error (or an
// exception outside one) that names the call and the library's message.
#pragma once

#include <stdexcept>
#include <string>

#include "rootspan/rootspan.h"

namespace rootspan::bench {

inline std::string describe_failure(const char *call, rootspan_status status, rootspan_error *error) {
  std::string text = std::string(call) + " failed: " + rootspan_status_name(status);
  if (error != nullptr) {
    text += ": ";
    text += rootspan_error_message(error);
    rootspan_error_free(error);
  }
  return text;
}

// Throws std::runtime_error when `status` is not ROOTSPAN_OK.
inline void check(const char *call, rootspan_status status, rootspan_error *error) {
  if (status != ROOTSPAN_OK) throw std::runtime_error(describe_failure(call, status, error));
}

}  // namespace rootspan::bench
