// GGUF files as checkpoints: which paths are GGUF, and how a split GGUF
// (NAME-00001-of-00003.gguf, ...) is named and checked. How a GGUF tensor
// becomes a component is schema/gguf_component.hpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "weights/checkpoints/checkpoint.hpp"
#include "weights/formats/gguf.hpp"

namespace rootspan::weights {

// True for a folder that holds *.gguf files and no safetensors checkpoint.
bool is_gguf_folder(const std::filesystem::path &folder);
// True for a file named *.gguf, or one whose first bytes, read from `input`,
// are the GGUF magic.
bool is_gguf_file(std::string_view name, const InputFile &input);
// The GGUF file of `folder` to open: its one *.gguf file, or the first part
// of the one split set it holds. Errors name the files found.
Result<std::string> gguf_file_in(const std::filesystem::path &folder);

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

}  // namespace rootspan::weights
