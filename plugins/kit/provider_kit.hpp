// The helpers every in-tree provider needs (plugins/host, and plugins/gpu for
// plugins/cuda and plugins/rocm): failing with a message, guarding a hook body
// against exceptions, reading and writing versioned structs, copying text into
// fixed fields. Header-only and over rootspan/provider.h alone, so a plugin
// stays a shared library that needs no rootspan header but the ABI's. Not
// installed: a third-party provider writes its own few lines
// (docs/writing-a-provider.md).
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "rootspan/provider.h"

namespace rootspan_plugin_kit {

// ---- messages -------------------------------------------------------------

// Writes a printf-formatted message into the core-owned buffer, truncated to
// fit and always NUL-terminated. A hook may be handed no buffer (NULL, or no
// capacity); then nothing is written, so no hook has to check.
__attribute__((format(printf, 2, 0))) inline void write_message_v(rootspan_provider_message *message,
                                                                  const char *format, va_list args) {
  if (message != nullptr && message->data != nullptr && message->capacity != 0) {
    std::vsnprintf(message->data, message->capacity, format, args);
  }
}

// A message that is not a failure: the no-device reason beside a zero count,
// or the provider's note beside a device count.
__attribute__((format(printf, 2, 3))) inline void write_message(rootspan_provider_message *message, const char *format,
                                                                ...) {
  va_list args;
  va_start(args, format);
  write_message_v(message, format, args);
  va_end(args);
}

// A hook's failure: writes the message, returns the status, so that a hook
// says `return fail(message, ROOTSPAN_ERR_..., "...", ...);` in one line.
__attribute__((format(printf, 3, 4))) inline rootspan_status fail(rootspan_provider_message *message,
                                                                  rootspan_status status, const char *format, ...) {
  va_list args;
  va_start(args, format);
  write_message_v(message, format, args);
  va_end(args);
  return status;
}

// Runs a hook body; an escaping exception (allocation failure) becomes a
// status, since hooks must not throw across the ABI.
template <class Body>
rootspan_status guarded(rootspan_provider_message *message, Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return fail(message, ROOTSPAN_ERR_PROVIDER_FAILURE, "unexpected exception: %s", e.what());
  } catch (...) {
    return fail(message, ROOTSPAN_ERR_PROVIDER_FAILURE, "unexpected exception");
  }
}

// ---- versioned structs ----------------------------------------------------

// The published size (ROOTSPAN_<NAME>_STRUCT_SIZE) of each versioned struct
// a provider reads or writes, for provider.h's struct helpers: never sizeof,
// whose trailing padding is not part of the struct.
constexpr std::size_t published_size(const rootspan_core_services *) { return ROOTSPAN_CORE_SERVICES_STRUCT_SIZE; }
constexpr std::size_t published_size(const rootspan_allocation_request *) {
  return ROOTSPAN_ALLOCATION_REQUEST_STRUCT_SIZE;
}
constexpr std::size_t published_size(const rootspan_host_memory *) { return ROOTSPAN_HOST_MEMORY_STRUCT_SIZE; }
constexpr std::size_t published_size(const rootspan_device_access_request *) {
  return ROOTSPAN_DEVICE_ACCESS_REQUEST_STRUCT_SIZE;
}
constexpr std::size_t published_size(const rootspan_device_info *) { return ROOTSPAN_DEVICE_INFO_STRUCT_SIZE; }
constexpr std::size_t published_size(const rootspan_provider_allocation *) {
  return ROOTSPAN_PROVIDER_ALLOCATION_STRUCT_SIZE;
}
constexpr std::size_t published_size(const rootspan_provider_mapping *) {
  return ROOTSPAN_PROVIDER_MAPPING_STRUCT_SIZE;
}
constexpr std::size_t published_size(const rootspan_device_access *) { return ROOTSPAN_DEVICE_ACCESS_STRUCT_SIZE; }

// A struct the core wrote, as a full one: fields past its size read as zero,
// so a provider built against a newer header reads an older core's struct.
template <class T>
T read_struct(const T *in) {
  T out{};
  rootspan_struct_read(&out, published_size(in), in, sizeof(std::size_t));
  return out;
}

// Fills a struct the core handed over, up to the size the core set: an older
// core's smaller struct is never written past its end.
template <class T>
void write_struct(T *out, const T &value) {
  rootspan_struct_write(out, &value, published_size(out));
}

// ---- values and text --------------------------------------------------------

// Alignments are powers of two; a provider checks what it is asked for.
inline bool is_power_of_two(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Copies a NUL-terminated string into a fixed field (a device name, a PCI bus
// id), truncated to fit: the ABI's text fields are fixed char arrays.
inline void copy_text(char *field, std::size_t capacity, const char *text) {
  const std::size_t length = ::strnlen(text, capacity - 1);
  std::memcpy(field, text, length);
  field[length] = '\0';
}

}  // namespace rootspan_plugin_kit
