// GGUF files as checkpoints: which paths are GGUF, how a split GGUF
// (NAME-00001-of-00003.gguf, ...) is named and checked, and the shards a
// GGUF checkpoint opens to. Checkpoint (checkpoint.hpp) builds on this file;
// this file does not include checkpoint.hpp. How a GGUF tensor becomes a
// component is schema/gguf_component.hpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "weights/checkpoints/shard.hpp"
#include "weights/files/input_file.hpp"
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

// The shards of the GGUF file `name` in `folder`, or, when `name` is a part
// of a split set, of every part in order, each opened beneath `trusted`
// (checkpoint_file.hpp); `input` is `name` already opened, or null. Checks
// each part's split.no and split.count against its name and every part's
// split.tensors.count against the tensors of all; a file whose split.count
// says it is a part but whose name does not is refused. Does not check
// tensor names across parts: Checkpoint does, for every format. Errors:
// ROOTSPAN_ERR_INVALID_CHECKPOINT or ROOTSPAN_ERR_IO, operation
// "open_checkpoint".
Result<std::vector<Shard>> open_gguf_parts(const std::filesystem::path &folder, const std::string &name,
                                           std::shared_ptr<const InputFile> input,
                                           std::span<const std::filesystem::path> trusted);

// The GGUF tensor behind a checkpoint tensor, or nullptr for safetensors.
const GgufTensor *gguf_tensor(const TensorRef &tensor);

}  // namespace rootspan::weights
