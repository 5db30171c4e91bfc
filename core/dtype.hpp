// Element types: sizes, names, and which types may view which (docs/concepts.md).
#pragma once

#include <cstdint>

#include "rootspan/types.h"

namespace rootspan {

// Bytes per element; 0 for NONE and for sub-byte types.
std::uint64_t dtype_size(rootspan_dtype dtype);
// Bits per element (F4 is 4, F6_* are 6); 0 for NONE or an unknown value.
std::uint64_t dtype_bits(rootspan_dtype dtype);
// Alignment a pointer needs to view this type (C32 needs F32's, C64 F64's).
std::uint64_t dtype_alignment(rootspan_dtype dtype);
// rootspan's own name ("F32", "C32"); "unknown" for a value out of range.
const char *dtype_name(rootspan_dtype dtype);
bool dtype_is_known(rootspan_dtype dtype);

// A typed root of type `root` may be viewed as `view`: the same type, or
// complex and real of the same component width (C32<->F32, C64<->F64).
bool dtype_can_view(rootspan_dtype root, rootspan_dtype view);

}  // namespace rootspan
