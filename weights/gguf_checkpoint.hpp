// GGUF files as checkpoints: which paths are GGUF, how a split GGUF
// (NAME-00001-of-00003.gguf, ...) is named and checked, and how a GGUF tensor
// becomes a component (dense for float and integer types, block-quantized
// "gguf.<type>" otherwise).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "weights/checkpoint.hpp"
#include "weights/component.hpp"
#include "weights/gguf.hpp"

namespace rootspan::weights {

// True for a regular file named *.gguf or starting with the GGUF magic, and
// for a folder that holds *.gguf files and no safetensors checkpoint.
bool is_gguf_source(const std::filesystem::path &path);

// The parts of a split GGUF file name: "m-00002-of-00003.gguf" is part 2 of
// 3 with stem "m". nullopt for any other name.
struct GgufSplitName {
  std::string stem;
  std::uint32_t part = 0;   // 1-based
  std::uint32_t count = 0;  // parts in all
};
std::optional<GgufSplitName> parse_gguf_split_name(std::string_view file_name);
// "m-00002-of-00003.gguf".
std::string gguf_split_file_name(std::string_view stem, std::uint32_t part, std::uint32_t count);

// The GGUF tensor behind a checkpoint tensor, or nullptr for safetensors.
const GgufTensor *gguf_tensor(const TensorRef &tensor);

// The component encoding of a GGUF tensor type: dense with its element type,
// or block-quantized with format id "gguf.<name in lowercase>" and ggml's
// values and bytes per block.
Encoding gguf_encoding(const GgufType &type);

// The component dimensions of a GGUF tensor: its row-major shape (dense), or
// its block grid (block-quantized).
std::vector<std::uint64_t> gguf_component_dimensions(const GgufTensor &tensor);

}  // namespace rootspan::weights
