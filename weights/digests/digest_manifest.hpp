// A digest manifest (`rootspan hash`, config/schemas/digests.schema.json): the
// size and SHA-256 of each file of a checkpoint (and of each shard's header),
// and optionally of each component's bytes, element type and shape as a given
// slicing reads them (world size 1: each component whole), so that a load can
// check what it reads, and what it was told about it, against what was
// published.
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

// The format `rootspan hash` writes. Version 1 (no header digests, no
// element types or shapes) is still read when it has no component digests.
inline constexpr std::uint32_t kDigestManifestVersion = 2;

struct FileDigest {
  std::uint64_t bytes = 0;
  std::string sha256;  // 64 lowercase hex digits
  // Of the file's bytes [0, data_offset): the header that says which tensors
  // it holds, with their element types, shapes and offsets, and its metadata.
  // Empty for a file that is not a shard (the index) and in version 1.
  std::string header_sha256;
};

struct ComponentDigest {
  std::uint64_t bytes = 0;
  std::string sha256;                // 64 lowercase hex digits
  std::string dtype;                 // the physical element type, as rootspan_dtype_name names it
  std::vector<std::uint64_t> shape;  // the dimensions this rank's slice has, as a load reports them
};

// Per-component digests of every rank of one slicing.
struct ComponentDigests {
  std::uint32_t world_size = 1;
  SplitConvention convention = SplitConvention::kTensorSplit;
  std::vector<SplitRule> rules;
  std::vector<std::map<std::string, ComponentDigest>> ranks;  // [rank][component id]

  // True when a load sliced by `spec` (nullptr: not sliced) reads the bytes
  // these digests were made of.
  bool made_for(const ShardSpec *spec) const;
};

struct DigestManifest {
  std::uint32_t format_version = kDigestManifestVersion;
  std::map<std::string, FileDigest> files;  // by name relative to the checkpoint folder
  std::optional<ComponentDigests> components;
};

// Reads and checks a manifest file (at most kMaxManifestBytes), parsed
// event by event straight into the maps, never as a document tree, so that
// it costs a small multiple of its size in memory: strict JSON (no
// byte-order mark, valid UTF-8, no NUL byte, no key twice in one object),
// format_version 2 (or 1 without "components"), algorithm "sha256", no
// member the format does not have, every digest 64 lowercase hex digits,
// every count unsigned, one map per rank (at most kMaxManifestRanks), every
// component with its dtype and shape (at most kMaxTensorRank dimensions).
// Errors: ROOTSPAN_ERR_IO (cannot be read), ROOTSPAN_ERR_INVALID_ARGUMENT
// (not a manifest: the cause names the field), operation "read_digests".
Result<DigestManifest> read_digest_manifest(const std::filesystem::path &path);

// The same, from the manifest's text; `subject` names it in errors.
Result<DigestManifest> parse_digest_manifest(std::string_view text, const std::string &subject);

// The manifest as JSON (format_version kDigestManifestVersion), keys sorted.
std::string digest_manifest_json(const DigestManifest &manifest);

}  // namespace rootspan::weights
