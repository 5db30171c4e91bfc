// Reading and writing the versioned structs of the C ABI: the
// reader uses only the fields inside the size the writer set, and a size
// below the struct's first published version, or one that ends inside a
// field, is refused. provider.h's helpers do the same copying for plugins;
// the core also knows each struct's name and every size it was published at,
// so it can tell an older caller's struct (by the end of its last field, or
// its sizeof) from a size that cuts a field.
#pragma once

#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>

#include "core/diagnostic.hpp"
#include "rootspan/rootspan.h"

namespace rootspan {

// A struct's name, its newest size, and every size it was ever published at
// (the end of each version's last field, oldest first), as its header lists
// them beside its *_LAST_FIELD (ROOTSPAN_<NAME>_PUBLISHED_SIZES).
template <class T>
struct StructVersions;

#define ROOTSPAN_STRUCT_VERSIONS(type, NAME)                                        \
  template <>                                                                       \
  struct StructVersions<type> {                                                     \
    static constexpr const char *name = #type;                                      \
    static constexpr std::size_t size = ROOTSPAN_##NAME##_STRUCT_SIZE;              \
    static constexpr std::size_t published[] = {ROOTSPAN_##NAME##_PUBLISHED_SIZES}; \
  }

// The core's structs; each layer above declares its own the same way (the
// weights loader's in weights/api/weights_c_api.cpp).
ROOTSPAN_STRUCT_VERSIONS(rootspan_requested, REQUESTED);
ROOTSPAN_STRUCT_VERSIONS(rootspan_span, SPAN);
ROOTSPAN_STRUCT_VERSIONS(rootspan_context_options, CONTEXT_OPTIONS);
ROOTSPAN_STRUCT_VERSIONS(rootspan_provider_report, PROVIDER_REPORT);
ROOTSPAN_STRUCT_VERSIONS(rootspan_root_info, ROOT_INFO);
ROOTSPAN_STRUCT_VERSIONS(rootspan_allocate_options, ALLOCATE_OPTIONS);
ROOTSPAN_STRUCT_VERSIONS(rootspan_host_import, HOST_IMPORT);
ROOTSPAN_STRUCT_VERSIONS(rootspan_device_info, DEVICE_INFO);
ROOTSPAN_STRUCT_VERSIONS(rootspan_device_access_request, DEVICE_ACCESS_REQUEST);
ROOTSPAN_STRUCT_VERSIONS(rootspan_device_access, DEVICE_ACCESS);

// The end of the published version a struct_size names, or 0 when it names
// none. A caller of an older version may have set struct_size to the end of
// its last field or to sizeof its struct (that end rounded up to the
// struct's alignment): both name that version.
template <class T>
constexpr std::size_t published_end(std::size_t size) {
  for (std::size_t end : StructVersions<T>::published) {
    const std::size_t padded = (end + alignof(T) - 1) / alignof(T) * alignof(T);
    if (size == end || size == padded) return end;
  }
  return 0;
}

// How many bytes of a checked struct belong to fields both sides know.
template <class T>
std::size_t known_bytes(std::size_t size) {
  return size >= StructVersions<T>::size ? StructVersions<T>::size : published_end<T>(size);
}

// Why a struct_size cannot be read (InvalidArgument naming the struct, the
// expected and the actual size), or nothing when it can: a size is one the
// struct was published at, or at least its newest size (a newer writer).
template <class T>
std::optional<Diagnostic> struct_size_error(const void *p, const char *operation, const char *argument) {
  using V = StructVersions<T>;
  if (p == nullptr) {
    return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, operation, std::string(argument) + " (" + V::name + ") is NULL");
  }
  const std::size_t size = rootspan_struct_size_of(p);
  if (size >= V::size || published_end<T>(size) != 0) return std::nullopt;
  const std::size_t oldest = V::published[0];
  const std::string why = size < oldest ? "is below its first published size" : "ends inside a field";
  return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, operation,
                    std::string(argument) + ".struct_size " + std::to_string(size) + " " + why + " (" + V::name +
                        ": expected " + std::to_string(V::size) + ", actual " + std::to_string(size) + ")",
                    V::size, size);
}

template <class T>
bool struct_size_ok(const T *p) {
  return !struct_size_error<T>(p, "", "");
}

// A full copy of a struct the caller wrote; fields past its size read as zero.
// The size must have been checked.
template <class T>
T read_struct(const T *in) {
  T out{};
  std::memcpy(&out, in, known_bytes<T>(rootspan_struct_size_of(in)));
  out.struct_size = StructVersions<T>::size;
  return out;
}

// Writes a full struct into the caller's, up to the fields of the version the
// caller's struct_size names; its struct_size is kept.
template <class T>
void write_struct(T *out, const T &value) {
  const std::size_t n = known_bytes<T>(rootspan_struct_size_of(out));
  if (n > sizeof(std::size_t)) {
    std::memcpy(reinterpret_cast<char *>(out) + sizeof(std::size_t),
                reinterpret_cast<const char *>(&value) + sizeof(std::size_t), n - sizeof(std::size_t));
  }
}

}  // namespace rootspan
