// The bounds every checkpoint reader enforces, in one place, so that a
// hostile file costs memory and time in proportion to its size, never more.
// docs/weight-schema.md lists them with the reasons for their values.
#pragma once

#include <cstddef>

namespace rootspan::weights {

// Dimensions of a tensor (safetensors shape, schema dimensions). No model
// format uses more than a handful; 64 leaves room without letting one shape
// array be millions long.
inline constexpr std::size_t kMaxTensorRank = 64;

// Entries of one safetensors header (tensors and __metadata__), and tensors
// of one GGUF file. The largest public checkpoints hold under 100,000
// tensors in all their shards together. Measured on a header of 2^20 - 1
// tensors (docs/weight-schema.md): inspect holds about 2.3 KB a tensor, a
// load about 2.6 KB (the tables, the default schema and the loaded
// components), so 2^20 bounds them to a few gigabytes.
inline constexpr std::size_t kMaxTensorsPerFile = std::size_t{1} << 20;

// Tensors of one checkpoint, all its shards or split parts together: without
// it, each shard could bring its own 2^20.
inline constexpr std::size_t kMaxTensorsPerCheckpoint = kMaxTensorsPerFile;

// Components in one schema: one per tensor at most in any sensible schema.
inline constexpr std::size_t kMaxSchemaComponents = kMaxTensorsPerFile;

// Source tensors of one component (a packed component concatenates them:
// experts stacked over layers are some thousands).
inline constexpr std::size_t kMaxComponentSources = std::size_t{1} << 16;

}  // namespace rootspan::weights
