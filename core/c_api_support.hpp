// What the C entry points share (core/c_api.cpp, weights/api/weights_c_api.cpp):
// the opaque handle types behind the C names, and the helpers that turn a
// Result into a status plus a rootspan_error and read and write versioned
// structs by their struct_size.
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "core/claim_ops.hpp"
#include "core/context.hpp"
#include "core/copy.hpp"
#include "core/device_access.hpp"
#include "core/mapping.hpp"
#include "core/struct_io.hpp"
#include "rootspan/rootspan.h"

struct rootspan_error {
  rootspan::Diagnostic diagnostic;
  std::string message;
};
struct rootspan_context {
  std::unique_ptr<rootspan::Context> context;
};

namespace rootspan::c_api {

inline rootspan::Root *root_of(rootspan_root *r) { return reinterpret_cast<rootspan::Root *>(r); }
inline const rootspan::Root *root_of(const rootspan_root *r) { return reinterpret_cast<const rootspan::Root *>(r); }
inline rootspan_root *handle_of(rootspan::Root *r) { return reinterpret_cast<rootspan_root *>(r); }
inline rootspan::Claim *claim_of(rootspan_claim *c) { return reinterpret_cast<rootspan::Claim *>(c); }
inline const rootspan::Claim *claim_of(const rootspan_claim *c) { return reinterpret_cast<const rootspan::Claim *>(c); }
inline rootspan_claim *handle_of(rootspan::Claim *c) { return reinterpret_cast<rootspan_claim *>(c); }
inline rootspan::Mapping *mapping_of(rootspan_mapping *m) { return reinterpret_cast<rootspan::Mapping *>(m); }
inline const rootspan::Mapping *mapping_of(const rootspan_mapping *m) {
  return reinterpret_cast<const rootspan::Mapping *>(m);
}

// Hands a Diagnostic to the caller (when it asked for one) and returns its code.
inline rootspan_status report(rootspan_error **error, Diagnostic diagnostic) {
  const rootspan_status code = diagnostic.code;
  if (error != nullptr) {
    auto *e = new (std::nothrow) rootspan_error();
    if (e != nullptr) {
      e->diagnostic = std::move(diagnostic);
      e->message = e->diagnostic.message();
    }
    *error = e;
  }
  return code;
}

inline rootspan_status invalid(rootspan_error **error, const char *operation, const char *cause) {
  return report(error, rootspan::make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, operation, cause));
}

// Turns the exception being handled into an error: allocation failure, or a
// bug. Call only from a catch block.
inline rootspan_status report_current_exception(rootspan_error **error, const char *operation) noexcept {
  try {
    throw;
  } catch (const std::bad_alloc &) {
    return report(error, rootspan::make_error(ROOTSPAN_ERR_OUT_OF_MEMORY, operation, "out of memory"));
  } catch (const std::exception &e) {
    return report(error, rootspan::make_error(ROOTSPAN_ERR_PROVIDER_FAILURE, operation, e.what()));
  } catch (...) {
    return report(error, rootspan::make_error(ROOTSPAN_ERR_PROVIDER_FAILURE, operation, "unknown exception"));
  }
}

// Runs an entry point's body: a Result becomes a status, an escaping exception
// an error.
template <class Body>
rootspan_status guarded(rootspan_error **error, const char *operation, Body &&body) noexcept {
  try {
    auto result = body();
    if (result) return ROOTSPAN_OK;
    return report(error, std::move(result).error());
  } catch (...) {
    return report_current_exception(error, operation);
  }
}

// The same for a body that makes an object (Result<T *>): on success `*out`
// is its handle. Straight from the body's Result, as claims and mappings are
// made on the hot path.
template <class Handle, class Body>
rootspan_status guarded(rootspan_error **error, const char *operation, Handle **out, Body &&body) noexcept {
  try {
    auto result = body();
    if (!result) return report(error, std::move(result).error());
    *out = reinterpret_cast<Handle *>(result.value());
    return ROOTSPAN_OK;
  } catch (...) {
    return report_current_exception(error, operation);
  }
}

using rootspan::read_struct;
using rootspan::struct_size_ok;
using rootspan::write_struct;

// Reports InvalidArgument for a NULL struct, or a struct_size below the
// struct's first published size or ending inside a field; OK when readable.
template <class T>
rootspan_status check_struct(rootspan_error **error, const T *p, const char *operation, const char *argument) {
  auto refused = rootspan::struct_size_error<T>(p, operation, argument);
  return refused ? report(error, std::move(*refused)) : ROOTSPAN_OK;
}

}  // namespace rootspan::c_api
