// The description of a validated checkpoint that `rootspan inspect` prints
// (docs/cli.md): shards, metadata and every tensor with its file and offset.
#pragma once

#include <nlohmann/json.hpp>

#include "weights/checkpoints/checkpoint.hpp"
#include "weights/schema/resolve.hpp"

namespace rootspan::weights {

nlohmann::json describe_checkpoint(const std::filesystem::path &path, const Checkpoint &checkpoint);

// A schema resolved against a checkpoint without loading it (`rootspan
// inspect --schema`): {"path", "components": [{"id", "role", "sources",
// "bytes", "segments"}], "skipped": [{"id", "reason"}]}.
nlohmann::json describe_resolved_schema(const std::filesystem::path &schema_path, const ResolvedSchema &schema);

}  // namespace rootspan::weights
