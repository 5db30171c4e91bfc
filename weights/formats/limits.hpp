// The bounds the weight loader's readers enforce, in one place, so that a
// hostile file costs memory and time in proportion to its size, never more.
// docs/weight-schema.md lists them with the reasons for their values. Two
// kinds live beside the rule they belong to instead: a format's own limits
// (kMaxSafetensorsHeader in safetensors.hpp, GGUF's in gguf.hpp) and the id
// rule's length (kMaxComponentIdBytes, component.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rootspan::weights {

// Dimensions of a tensor (safetensors shape, schema dimensions). No model
// format uses more than a handful; 64 leaves room without letting one shape
// array be millions long.
inline constexpr std::size_t kMaxTensorRank = 64;

// Entries of one safetensors header (tensors and __metadata__), and tensors
// of one GGUF file. The largest public checkpoints hold under 100,000
// tensors in all their shards together. Measured on a header of 2^20 - 1
// tensors (docs/weight-schema.md): inspect holds about 2.1 KB a tensor, a
// load about 2.0 KB (the tables, the default schema and the loaded
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

// The small files read whole, each bounded before it is read:
// A shard index lists names, not data: the safetensors header limit
// (100,000,000 bytes) is more than generous.
inline constexpr std::uint64_t kMaxIndexBytes = 100'000'000;
// A schema is names and numbers; anything bigger is not one.
inline constexpr std::uint64_t kMaxSchemaBytes = 64ull << 20;
// A digest manifest of every component of a million-tensor checkpoint over
// a few ranks stays well under this.
inline constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{1} << 30;
// A Hugging Face ref file holds one commit hash and a newline.
inline constexpr std::uint64_t kMaxRefBytes = 4096;

}  // namespace rootspan::weights
