// The options naming what to read of a checkpoint, shared by `plan` and `load`.
#include <CLI/CLI.hpp>

#include "command.hpp"

namespace rootspan::cli {

void add_checkpoint_options(CLI::App &app, CheckpointArgs &checkpoint) {
  app.add_option("PATH", checkpoint.path, "a checkpoint, as for inspect")->required();
  app.add_option("--schema", checkpoint.schema, "the weight schema (default: one component per tensor)")
      ->type_name("FILE");
  app.add_option("--tensors", checkpoint.tensors, "only the components whose id matches this glob (repeatable)")
      ->type_name("PATTERN")
      ->allow_extra_args(false);
  app.add_option("--revision", checkpoint.revision, "the ref or snapshot of a Hugging Face cache repository")
      ->type_name("REV")
      ->check(non_empty("a branch, tag or commit"));
}

std::vector<const char *> c_strings(const std::vector<std::string> &strings) {
  std::vector<const char *> out;
  for (const std::string &s : strings) out.push_back(s.c_str());
  return out;
}

void apply_checkpoint_args(CheckpointArgs &checkpoint, rootspan_load_options &options) {
  options.schema_path = checkpoint.schema.empty() ? nullptr : checkpoint.schema.c_str();
  checkpoint.patterns = c_strings(checkpoint.tensors);
  options.tensors = checkpoint.patterns.data();
  options.tensor_count = checkpoint.patterns.size();
  options.revision = checkpoint.revision.empty() ? nullptr : checkpoint.revision.c_str();
}

}  // namespace rootspan::cli
