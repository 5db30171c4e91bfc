// The description of a validated checkpoint that `rootspan inspect` prints
// (docs/cli.md): shards, metadata and every tensor with its file and offset.
#pragma once

#include <nlohmann/json.hpp>

#include "weights/checkpoints/checkpoint.hpp"
#include "weights/formats/safetensors.hpp"
#include "weights/schema/resolve.hpp"

namespace rootspan::weights {

nlohmann::json describe_checkpoint(const std::filesystem::path &path, const Checkpoint &checkpoint);

// One safetensors file (rootspan_safetensors_describe and _describe_file), as
// compact JSON text: {"format": "safetensors", "bytes", "header_bytes",
// "metadata" (null when the header has none), "tensors": [[name, dtype,
// shape, offset, bytes], ...]} in file order, offsets counted from the file's
// first byte. Written straight to text, with one array per tensor: a reader
// of 10,000 tensors builds no tree of 10,000 objects on either side.
std::string describe_safetensors_file(const SafetensorsFile &file);

// The header's "__metadata__" as compact JSON: an object of strings, or null
// when the header has none (the "metadata" of describe_safetensors_file).
std::string safetensors_metadata_json(const SafetensorsHeader &header);

// A schema resolved against a checkpoint without loading it (`rootspan
// inspect --schema`): {"path", "components": [{"id", "role", "sources",
// "bytes", "segments"}], "skipped": [{"id", "reason"}]}.
nlohmann::json describe_resolved_schema(const std::filesystem::path &schema_path, const ResolvedSchema &schema);

}  // namespace rootspan::weights
