// ComponentSpec: one weight component of a component schema (docs/weight-schema.md) —
// its id, role, ordered source tensors, dimensions and encoding — and the
// physical byte count everything downstream checks against.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/diagnostic.hpp"
#include "rootspan/types.h"
#include "weights/formats/dtype.hpp"

namespace rootspan::weights {

inline constexpr std::size_t kMaxComponentIdBytes = 160;

enum class ComponentRole { kValues, kPackedValues, kScales, kZeroPoints, kIndices, kPermutation, kCodebook, kMetadata };

// "values", "packed_values", "scales", "zero_points", "indices", "permutation",
// "codebook", "metadata".
std::string_view role_name(ComponentRole role);
std::optional<ComponentRole> role_from_name(std::string_view name);

struct DenseEncoding {
  SafetensorsDtype element_type;
};

// Dimensions of a block-quantized component are its block grid; each block
// is bytes_per_block opaque bytes holding values_per_block logical values.
struct BlockQuantizedEncoding {
  std::string format_id;  // e.g. "quantization.gguf.q4-k"; same characters as an id
  std::uint64_t values_per_block = 0;
  std::uint64_t bytes_per_block = 0;
};

using Encoding = std::variant<DenseEncoding, BlockQuantizedEncoding>;

// Whether `id` is a valid component id: 1-160 bytes of A-Z a-z 0-9 . _ - : /.
// Allocates nothing (rootspan_weights_find asks it where memory ran out).
bool is_component_id(std::string_view id);
// The reason `id` is not a valid component id, or "" when it is one.
std::string component_id_problem(std::string_view id);

struct ComponentSpec {
  std::string id;
  ComponentRole role = ComponentRole::kValues;
  std::vector<std::string> sources;  // ordered external tensor names: the order is part of the identity
  std::vector<std::uint64_t> dimensions;
  Encoding encoding = DenseEncoding{};
  bool required = true;

  // The element type of the physical bytes: the dense element type, or U8 for
  // block-quantized bytes.
  SafetensorsDtype physical_element_type() const;

  // Checked product of the dimensions (empty -> 1) times the element bits / 8
  // (a whole number of bytes), or times bytes_per_block.
  // ROOTSPAN_ERR_INVALID_SCHEMA (operation "load_schema") on overflow or a
  // partial byte.
  Result<std::uint64_t> physical_bytes() const;

  // The rules a component holds on its own: a valid id, at least one source,
  // a valid format id and non-zero block sizes, and a
  // physical size that can be computed. ROOTSPAN_ERR_INVALID_SCHEMA.
  Result<void> validate() const;
};

}  // namespace rootspan::weights
