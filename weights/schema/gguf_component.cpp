#include "weights/schema/gguf_component.hpp"

#include <cctype>
#include <string>
#include <utility>

namespace rootspan::weights {

Encoding gguf_encoding(const GgufType &type) {
  if (type.dense) return DenseEncoding{*safetensors_dtype(*type.dense)};
  std::string format_id = "gguf.";
  for (char c : type.name) format_id += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return BlockQuantizedEncoding{std::move(format_id), type.values_per_block, type.bytes_per_block};
}

std::vector<std::uint64_t> gguf_component_dimensions(const GgufTensor &tensor) {
  return tensor.type->dense ? tensor.shape() : tensor.block_grid();
}

}  // namespace rootspan::weights
