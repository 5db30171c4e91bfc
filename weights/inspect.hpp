// The description of a validated checkpoint that `rootspan inspect` prints
// (DESIGN 7): shards, metadata and every tensor with its file and offset.
#pragma once

#include <nlohmann/json.hpp>

#include "weights/checkpoint.hpp"

namespace rootspan::weights {

nlohmann::json describe_checkpoint(const std::filesystem::path &path, const Checkpoint &checkpoint);

}  // namespace rootspan::weights
