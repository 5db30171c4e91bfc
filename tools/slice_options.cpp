// --rank, --world and --split: one rank's slice of a tensor-parallel load,
// shared by `plan` and `load` (docs/cli.md).
#include <CLI/CLI.hpp>

#include "command.hpp"

namespace rootspan::cli {

void add_slice_options(CLI::App &app, SliceArgs &slice) {
  constexpr const char *kGroup = "Tensor-parallel slicing";
  app.add_option("--rank", slice.rank, "this rank, in [0, W)")->type_name("R")->group(kGroup);
  app.add_option("--world", slice.world_size, "the number of ranks")->type_name("W")->group(kGroup);
  app.add_option("--split", slice.split_texts,
                 "split the components PATTERN matches along DIM (-1 or 'replicate': every rank reads all); "
                 "repeatable, the first match wins; a component no rule matches is replicated")
      ->type_name("PATTERN=DIM")
      ->allow_extra_args(false)
      ->group(kGroup);
  app.add_option("--split-as", slice.convention,
                 "how an uneven dimension is shared: tensor_split (the default: the first n % W ranks take one "
                 "more) or chunk (each rank takes ceil(n / W), the last what is left, as torch's DTensor Shard)")
      ->check(CLI::IsMember({"tensor_split", "chunk"}))
      ->type_name("CONVENTION")
      ->group(kGroup);
}

std::string check_slice_args(SliceArgs &slice) {
  slice.rules.clear();
  for (const std::string &text : slice.split_texts) {
    // The last '=' separates PATTERN and DIM: a pattern may hold '='.
    const std::size_t eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0) return "--split needs PATTERN=DIM, not '" + text + "'";
    const std::string dim = text.substr(eq + 1);
    if (dim == "-1" || dim == "replicate") {
      slice.rules.emplace_back(text.substr(0, eq), -1);
    } else if (!dim.empty() && dim.size() <= 9 && dim.find_first_not_of("0123456789") == std::string::npos) {
      slice.rules.emplace_back(text.substr(0, eq), static_cast<std::int32_t>(std::stoul(dim)));
    } else {
      return "--split " + text + ": DIM is a dimension (0, 1, ...) or -1 / replicate, not '" + dim + "'";
    }
  }
  if (slice.given() && !slice.world_size) return "--rank, --split and --split-as need --world W";
  return "";
}

void apply_slice_args(const SliceArgs &slice, std::vector<rootspan_split_rule> &storage,
                      rootspan_load_options &options) {
  storage.clear();
  for (const auto &[pattern, dimension] : slice.rules) {
    storage.push_back({sizeof(rootspan_split_rule), pattern.c_str(), dimension});
  }
  options.rank = slice.rank.value_or(0);
  options.world_size = slice.world_size.value_or(0);
  options.split_rules = storage.empty() ? nullptr : storage.data();
  options.split_rule_count = storage.size();
  options.split_convention = slice.convention == "chunk" ? ROOTSPAN_SPLIT_CHUNK : ROOTSPAN_SPLIT_TENSOR_SPLIT;
}

}  // namespace rootspan::cli
