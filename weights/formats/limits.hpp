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
// A digest manifest (`rootspan hash`, written with two-space indentation)
// holds about 270 bytes per file and, with --per-tensor, about 290 bytes per
// component per rank: the id (~50), the SHA-256 (64 hex digits), bytes,
// dtype and a shape of one or two dimensions a line each, and the keys and
// indentation. The largest public checkpoints hold under 150,000 tensors
// (mixture-of-experts models at 60 layers of 256-384 experts), 45 MB a rank;
// tensor-parallel loads use at most 8 ranks (one node's GPUs), 350 MB. One
// rank of the loader's limit of 2^20 tensors is 305 MB. 512 MiB covers both
// with room. The reader (digest_manifest.cpp) parses it without a document
// tree, holding the text and the entries it reads: measured, a 30 MB
// manifest as `hash` writes it peaks at 2.5 times its size, the densest the
// format allows (minimal entries, or a million split rules) at 4 times; so
// at most about 2 GiB here, where a tree of the old 1 GiB limit could take
// over 50 GiB.
inline constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{512} << 20;
// Ranks of one manifest's per-component digests. Read before the world size
// (keys are sorted), so bounded on their own: an empty rank costs 48 bytes
// for its three of text. Tensor-parallel worlds are a few ranks to a few
// hundred.
inline constexpr std::size_t kMaxManifestRanks = std::size_t{1} << 16;
// A Hugging Face ref file holds one commit hash and a newline.
inline constexpr std::uint64_t kMaxRefBytes = 4096;

}  // namespace rootspan::weights
