// Reading and writing the versioned structs of the C ABI (DESIGN 3.1): the
// reader uses only the fields inside the size the writer set. Header-only, so
// that the core and the provider plugins share it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace rootspan {

// Copies a struct into a zeroed full-size one: fields the writer's (older)
// header did not have read as zero.
template <class T>
T read_struct(const T *in) {
  T out{};
  std::memcpy(&out, in, std::min(in->struct_size, sizeof(T)));
  out.struct_size = sizeof(T);
  return out;
}

// Writes a full-size struct into the reader's, up to the size the reader set.
template <class T>
void write_struct(T *out, T value) {
  value.struct_size = out->struct_size;
  std::memcpy(out, &value, std::min(out->struct_size, sizeof(T)));
}

}  // namespace rootspan
