// The tensor table of one checkpoint file, in the form both formats give it:
// each tensor's name, element type, shape and byte range in the file's data
// section. The safetensors reader builds one from its JSON header, the GGUF
// checkpoint from its tensor infos (block-quantized types as U8 bytes), and
// everything above the formats that reads a checkpoint's tensors (schema,
// payloads, the checkpoint's inspect report) reads only this.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weights/formats/dtype.hpp"

namespace rootspan::weights {

struct TensorInfo {
  std::string name;
  SafetensorsDtype dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0;  // relative to the data section
  std::uint64_t end = 0;
  std::uint64_t byte_length() const { return end - begin; }
};

class TensorTable {
 public:
  TensorTable() = default;
  // Takes tensors already validated by their format's reader: sorted by
  // begin, non-overlapping, names unique, each inside a data section of
  // `data_bytes` and `data_bytes` their sum.
  TensorTable(std::vector<TensorInfo> tensors, std::uint64_t data_bytes)
      : tensors_(std::move(tensors)), data_bytes_(data_bytes) {}

  const std::vector<TensorInfo> &tensors() const { return tensors_; }  // sorted by begin
  // The bytes the tensors hold in all.
  std::uint64_t data_bytes() const { return data_bytes_; }

  // The tensor of that name, or nullptr. A linear search: the checkpoint
  // indexes names across all its files once (checkpoint.hpp), so a table
  // keeps no index of its own.
  const TensorInfo *find(std::string_view name) const;

 private:
  std::vector<TensorInfo> tensors_;
  std::uint64_t data_bytes_ = 0;
};

}  // namespace rootspan::weights
