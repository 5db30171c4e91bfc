// Diagnostic: the one error type of the core (docs/concepts.md). Every failure
// carries its code, the operation, what was requested, whether and to which
// span it resolved, and the cause with expected and actual values. The C ABI
// wraps it in an opaque rootspan_error.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <boost/outcome.hpp>

#include "core/key.hpp"
#include "core/span.hpp"
#include "rootspan/rootspan.h"

namespace rootspan {

// What an operation was asked to do; mirrors rootspan_requested.
struct Requested {
  rootspan_requested_kind kind = ROOTSPAN_REQUESTED_NONE;
  std::uint64_t root_id = 0;
  Key key;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;

  static Requested none() { return {}; }
  static Requested range(std::uint64_t offset, std::uint64_t length) {
    return {ROOTSPAN_REQUESTED_RANGE, 0, {}, offset, length};
  }
  static Requested key_range(Key key, std::uint64_t offset, std::uint64_t length) {
    return {ROOTSPAN_REQUESTED_KEY_RANGE, 0, key, offset, length};
  }
  static Requested root_range(std::uint64_t root_id, Key key, std::uint64_t offset, std::uint64_t length) {
    return {ROOTSPAN_REQUESTED_ROOT_KEY_RANGE, root_id, key, offset, length};
  }
};

struct Diagnostic {
  rootspan_status code = ROOTSPAN_OK;
  std::string operation;  // "claim_acquire", "map_read", "load_manifest", ...
  Requested requested;
  std::optional<Span> resolution;
  std::string cause;                                              // "conflict with exclusive claim [0,96)"
  std::string policy;                                             // "L4", or "" when no loader policy applies
  std::optional<std::pair<std::uint64_t, std::uint64_t>> values;  // expected, actual

  // The full message: "<operation> for <requested>: <resolution>: <cause>".
  std::string message() const;
};

// "Conflict", "ReadOnly", ... for a status code; "Unknown" for other values.
const char *status_name(rootspan_status status);

// Builds a Diagnostic with the common fields; add requested/values with the
// chained setters.
Diagnostic make_error(rootspan_status code, std::string operation, std::string cause);
Diagnostic make_error(rootspan_status code, std::string operation, std::string cause, std::uint64_t expected,
                      std::uint64_t actual);

// InvalidArgument for an enum argument outside its enumerators, naming the
// argument, its type and the value (types.h promises InvalidArgument).
Diagnostic unknown_enum(const char *argument, const char *type, std::int64_t value);

// The error side of a Result: a Diagnostic kept on the heap. Boost 1.74's
// result<T, E> stores a T and an E side by side and constructs both, so an E
// as large as Diagnostic (three strings and two optionals) made every
// successful call pay for an error it never had; this one costs a null
// pointer. Read it like a pointer (failure->code, *failure); it converts to
// `const Diagnostic &` wherever a Diagnostic is expected.
class Failure {
 public:
  Failure() = default;  // only the unused error slot of a successful Result
  Failure(Diagnostic diagnostic) : diagnostic_(std::make_unique<Diagnostic>(std::move(diagnostic))) {}  // NOLINT
  Failure(const Failure &other)
      : diagnostic_(other.diagnostic_ ? std::make_unique<Diagnostic>(*other.diagnostic_) : nullptr) {}
  Failure(Failure &&) noexcept = default;
  Failure &operator=(const Failure &other) { return *this = Failure(other); }
  Failure &operator=(Failure &&) noexcept = default;
  ~Failure() = default;

  const Diagnostic &operator*() const { return diagnostic_ ? *diagnostic_ : empty(); }
  Diagnostic &operator*() {
    if (!diagnostic_) diagnostic_ = std::make_unique<Diagnostic>();
    return *diagnostic_;
  }
  const Diagnostic *operator->() const { return &**this; }
  Diagnostic *operator->() { return &**this; }
  operator const Diagnostic &() const { return **this; }  // NOLINT: used where a Diagnostic is expected

 private:
  static const Diagnostic &empty() {
    static const Diagnostic none{};
    return none;
  }
  std::unique_ptr<Diagnostic> diagnostic_;
};

template <class T>
using Result = BOOST_OUTCOME_V2_NAMESPACE::result<T, Failure, BOOST_OUTCOME_V2_NAMESPACE::policy::terminate>;

// Assigns a Result's value to an existing `target`, or returns its error from
// the enclosing function. (BOOST_OUTCOME_TRY spells this differently in Boost
// 1.74, Debian 12's, and in later versions; this one reads the same in both.)
#define ROOTSPAN_ASSIGN_OR_RETURN(target, expr)             \
  do {                                                      \
    auto rootspan_result_ = (expr);                         \
    if (!rootspan_result_) return rootspan_result_.error(); \
    (target) = std::move(rootspan_result_).value();         \
  } while (0)

// Fills in what the operation asked for, where the failing helper could not
// know. Cold: only failures call it, and the success paths stay small.
[[gnu::cold]] Diagnostic with_request(Diagnostic d, const char *operation, const Requested &requested);

}  // namespace rootspan
