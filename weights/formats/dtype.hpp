// The safetensors element types, their bit widths (docs/weight-schema.md) and the
// rootspan_dtype each one is. Checkpoint headers and component schemas both
// name element types this way, so there is one table for both.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "rootspan/types.h"

namespace rootspan::weights {

struct SafetensorsDtype {
  std::string_view name;  // "F32", "BF16", "C64", ...
  rootspan_dtype dtype;   // safetensors "C64" (64 bits in all) is ROOTSPAN_DTYPE_C32
  std::uint32_t bits;     // 4 for F4, 6 for F6_*: not always whole bytes
};

// All twenty-two safetensors dtypes, in the order of docs/weight-schema.md.
std::span<const SafetensorsDtype> safetensors_dtypes();

// The entry for a safetensors dtype name (case-sensitive), or nullopt.
std::optional<SafetensorsDtype> safetensors_dtype(std::string_view name);

// The entry for a rootspan element type, or nullopt for the types safetensors
// cannot name (NONE, and C64 = two F64: safetensors has no 128-bit complex).
std::optional<SafetensorsDtype> safetensors_dtype(rootspan_dtype dtype);

}  // namespace rootspan::weights
