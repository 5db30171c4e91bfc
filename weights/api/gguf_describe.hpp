// The description `rootspan inspect` prints for a GGUF checkpoint: each
// part's header, the metadata (arrays summarized by element type, length and
// first values; long strings cut), and every tensor with its ggml type,
// row-major shape, encoding, file offset and size.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "weights/checkpoints/checkpoint.hpp"
#include "weights/formats/gguf.hpp"

namespace rootspan::weights {

// How many elements of an array the summary shows, and the longest string
// shown whole.
inline constexpr std::uint64_t kGgufShownElements = 8;
inline constexpr std::size_t kGgufShownStringBytes = 256;

// One metadata value as JSON: {"type", "value"} for a scalar, {"type":
// "array", "element_type", "length", "first": [...]} for an array.
nlohmann::json describe_gguf_value(const GgufValue &value);

// The whole checkpoint (every part of a split file). `checkpoint.is_gguf()`.
nlohmann::json describe_gguf_checkpoint(const std::filesystem::path &path, const Checkpoint &checkpoint);

}  // namespace rootspan::weights
