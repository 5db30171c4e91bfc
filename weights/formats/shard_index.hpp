// The index of a sharded checkpoint, model.safetensors.index.json
// (docs/weight-schema.md): which shard file holds each tensor. Parsed here on its own; the
// cross-checks against the shards' headers are the Checkpoint's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"

namespace rootspan::weights {

inline constexpr std::string_view kShardIndexName = "model.safetensors.index.json";

struct ShardIndex {
  // tensor name -> shard file name (a portable relative path).
  std::map<std::string, std::string> weight_map;
  // The distinct shard file names, sorted.
  std::vector<std::string> files;
  // metadata.total_size when it is a non-negative integer. Advisory only:
  // real indexes disagree with their shards often enough (padding, dropped
  // tensors) that a mismatch is reported as a note, never an error.
  std::optional<std::uint64_t> total_size;
};

// Parses an index. Rules: strict JSON (no duplicate keys); a top-level
// object; "weight_map" an object of tensor name -> string; every file name
// portable (check_portable_name); "metadata", when present, an object.
// Errors: ROOTSPAN_ERR_INVALID_CHECKPOINT (operation "open_checkpoint")
// naming `index_name`.
Result<ShardIndex> parse_shard_index(std::string_view json_text, std::string_view index_name);

}  // namespace rootspan::weights
