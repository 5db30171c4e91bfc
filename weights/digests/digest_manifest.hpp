// A digest manifest (`rootspan hash`, config/schemas/digests.schema.json): the
// SHA-256 of each file of a checkpoint, and optionally of each component's
// bytes as a given slicing reads them (world size 1: each component whole),
// so that a load can check what it reads against what was published.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/diagnostic.hpp"
#include "weights/schema/read_plan.hpp"

namespace rootspan::weights {

struct DigestEntry {
  std::uint64_t bytes = 0;
  std::string sha256;  // 64 lowercase hex digits
};

// Per-component digests of every rank of one slicing.
struct ComponentDigests {
  std::uint32_t world_size = 1;
  SplitConvention convention = SplitConvention::kTensorSplit;
  std::vector<SplitRule> rules;
  std::vector<std::map<std::string, DigestEntry>> ranks;  // [rank][component id]

  // True when a load sliced by `spec` (nullptr: not sliced) reads the bytes
  // these digests were made of.
  bool made_for(const ShardSpec *spec) const;
};

struct DigestManifest {
  std::map<std::string, DigestEntry> files;  // by name relative to the checkpoint folder
  std::optional<ComponentDigests> components;
};

// Reads and checks a manifest file: strict JSON, format_version 1,
// algorithm "sha256", every digest 64 lowercase hex digits, every count
// unsigned, one map per rank. Errors: ROOTSPAN_ERR_IO (cannot be read),
// ROOTSPAN_ERR_INVALID_ARGUMENT (not a manifest: the cause names the field),
// operation "read_digests".
Result<DigestManifest> read_digest_manifest(const std::filesystem::path &path);

// The manifest as JSON, keys sorted.
std::string digest_manifest_json(const DigestManifest &manifest);

}  // namespace rootspan::weights
