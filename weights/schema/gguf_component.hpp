// How a GGUF tensor becomes a component: dense for float and integer types,
// block-quantized "gguf.<type>" otherwise (docs/weight-schema.md).
#pragma once

#include <cstdint>
#include <vector>

#include "weights/formats/gguf.hpp"
#include "weights/schema/component.hpp"

namespace rootspan::weights {

// The component encoding of a GGUF tensor type: dense with its element type,
// or block-quantized with format id "gguf.<name in lowercase>" and ggml's
// values and bytes per block.
Encoding gguf_encoding(const GgufType &type);

// The component dimensions of a GGUF tensor: its row-major shape (dense), or
// its block grid (block-quantized).
std::vector<std::uint64_t> gguf_component_dimensions(const GgufTensor &tensor);

}  // namespace rootspan::weights
