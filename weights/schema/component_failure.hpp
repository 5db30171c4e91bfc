// The errors of resolving and checking one component's payload: code
// ROOTSPAN_ERR_INVALID_PAYLOAD, operation "load_component", and a cause that
// starts with `component "id": `. The prefix is built only when an error is,
// so a load of thousands of good components never quotes an id.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "core/diagnostic.hpp"
#include "core/text/quoting.hpp"

namespace rootspan::weights {

class ComponentFailure {
 public:
  static constexpr const char *kOperation = "load_component";

  // `id` must outlive this object (it is the component's own id).
  explicit ComponentFailure(const std::string &id) : id_(id) {}

  Diagnostic operator()(const std::string &cause) const {
    return make_error(ROOTSPAN_ERR_INVALID_PAYLOAD, kOperation, prefix() + cause);
  }
  Diagnostic operator()(const std::string &cause, std::uint64_t expected, std::uint64_t actual) const {
    return make_error(ROOTSPAN_ERR_INVALID_PAYLOAD, kOperation, prefix() + cause, expected, actual);
  }
  // Another check's error, now about this component (its code is kept).
  Diagnostic wrap(Diagnostic error) const {
    error.operation = kOperation;
    error.cause = prefix() + error.cause;
    return error;
  }

 private:
  std::string prefix() const { return "component " + quoted_text(id_) + ": "; }
  const std::string &id_;
};

}  // namespace rootspan::weights
