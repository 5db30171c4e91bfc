// One file of a checkpoint as it was opened (a safetensors file, a shard of
// a sharded one, a GGUF file or one part of a split one), and where one
// tensor lies in it. Both checkpoint.hpp and gguf_checkpoint.hpp build on
// these; neither includes the other's header for them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weights/files/input_file.hpp"
#include "weights/formats/gguf.hpp"
#include "weights/formats/tensor_table.hpp"

namespace rootspan::weights {

struct Shard {
  std::string file;             // name relative to the checkpoint folder, as the index spells it
  std::filesystem::path path;   // the resolved path that was opened
  std::uint64_t file_size = 0;  // fstat at open
  // Absolute file offset of the data section the tensors' offsets count from.
  std::uint64_t data_offset = 0;
  // The shard's tensors, whatever its format. For a GGUF file: dense ones
  // with their element type, block-quantized ones as U8 bytes whose last
  // axis counts blocks × bytes_per_block.
  TensorTable tensors;
  // What the format holds besides the tensors. A safetensors file: its
  // __metadata__ (nullopt when it has none). A GGUF file: the whole file as
  // read, its key-value metadata and quantized types included.
  std::optional<std::map<std::string, std::string>> safetensors_metadata;
  std::shared_ptr<const GgufFile> gguf = nullptr;
  // The one descriptor the shard was opened with: its header was read from
  // it, and the load maps and reads it, never reopening `path` by name.
  std::shared_ptr<const InputFile> input = nullptr;
  // The SHA-256 of bytes [0, data_offset) as they were parsed (empty when
  // not known, or not taken: ParsedDigests): a verified load reads them again
  // and must find the same.
  std::string header_sha256;
};

// Where one tensor lies. Both pointers are null when there is no such tensor.
struct TensorRef {
  const Shard *shard = nullptr;
  const TensorInfo *tensor = nullptr;
  explicit operator bool() const { return tensor != nullptr; }
  // Absolute offset of the tensor's first byte in its shard file.
  std::uint64_t file_offset() const { return shard->data_offset + tensor->begin; }
};

// Name order, the order of a default schema's components (byte-wise). An
// object, not a function, so that a sort inlines it: a load of 10,000
// tensors in another order compares names some 140,000 times.
inline constexpr struct InNameOrder {
  bool operator()(const TensorRef &a, const TensorRef &b) const { return a.tensor->name < b.tensor->name; }
} in_name_order;

// Puts tensors in name order. Tensors that lie in name order already (writers
// often sort them) are checked in one pass, not sorted again: thousands of
// names that share long prefixes. Others are merged, not std::sort-ed: on
// 10,000 names written in numeric order ("layers.10" after "layers.9"),
// std::sort fell back to a heap sort, its comparisons all over memory (a C
// load of them 14.3 -> 13.1 ms).
inline void sort_in_name_order(std::vector<TensorRef> &tensors) {
  if (!std::is_sorted(tensors.begin(), tensors.end(), in_name_order)) {
    std::stable_sort(tensors.begin(), tensors.end(), in_name_order);
  }
}

}  // namespace rootspan::weights
