// `rootspan plan PATH --rank R --world W --split PATTERN=DIM ...`: the read
// plan one rank of a tensor-parallel load follows — for each component, the
// byte ranges it reads from which file and where each lands — made without
// reading tensor data (docs/cli.md).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>

#include "byte_size.hpp"
#include "command.hpp"
#include "rootspan/weights.h"
#include "terminal_text.hpp"
#include "text_table.hpp"

namespace rootspan::cli {

namespace {

struct PlanArgs {
  CheckpointArgs checkpoint;  // PATH, --schema, --tensors, --revision
  SliceArgs slice;
};

int run_plan(PlanArgs &args, const CommonOptions &options) {
  if (!args.slice.world_size) {
    return print_usage_error(options, "plan needs --world W (and --rank R, --split PATTERN=DIM)");
  }
  if (std::string problem = check_slice_args(args.slice); !problem.empty()) {
    return print_usage_error(options, problem);
  }
  rootspan_load_options opts{};
  opts.struct_size = sizeof opts;
  apply_checkpoint_args(args.checkpoint, opts);
  std::vector<rootspan_split_rule> rules;
  apply_slice_args(args.slice, rules, opts);

  char *json = nullptr;
  rootspan_error *raw_error = nullptr;
  if (rootspan_checkpoint_read_plan(args.checkpoint.path.c_str(), &opts, &json, &raw_error) != ROOTSPAN_OK) {
    const ErrorPtr error(raw_error);
    return print_error(options, error.get());
  }
  const nlohmann::json plan = nlohmann::json::parse(json);
  rootspan_string_free(json);
  if (options.json) {
    print_json(plan);
    return kDone;
  }
  std::printf("rank %u of %u reads %s (%llu bytes)\n", plan["rank"].get<unsigned>(), plan["world_size"].get<unsigned>(),
              byte_size(plan["bytes"].get<std::uint64_t>()).c_str(),
              static_cast<unsigned long long>(plan["bytes"].get<std::uint64_t>()));
  TextTable table({{"COMPONENT", false, true}, {"SPLIT"}, {"FULL"}, {"SLICE"}, {"SIZE", true}, {"READS", true}});
  for (const auto &c : plan["components"]) {
    const int dim = c["split_dimension"].get<int>();
    const std::string split =
        dim < 0 ? (c["rule"].is_null() ? "replicated*" : "replicated") : "dim " + std::to_string(dim);
    table.add_row({terminal_safe(c["id"].get<std::string>()), split, c["full_dimensions"].dump(),
                   c["dimensions"].dump(), byte_size(c["bytes"].get<std::uint64_t>()),
                   std::to_string(c["reads"].size())});
  }
  table.print(stdout, output_width());
  const auto &components = plan["components"];
  if (std::any_of(components.begin(), components.end(),
                  [](const nlohmann::json &c) { return c["split_dimension"].get<int>() < 0 && c["rule"].is_null(); })) {
    std::printf("* matched no --split rule: every rank reads all of it\n");
  }
  return kDone;
}

}  // namespace

Runner add_plan_command(CLI::App &rootspan, CommonOptions &common) {
  CLI::App *app = rootspan.add_subcommand(
      "plan",
      "the byte ranges rank R of W reads for each component, reading no tensor data; uneven splits give the first "
      "n % W ranks one more (torch.tensor_split)");
  auto args = std::make_shared<PlanArgs>();
  add_checkpoint_options(*app, args->checkpoint);
  add_slice_options(*app, args->slice);
  add_common_options(*app, common);
  return [args, &common] { return run_plan(*args, common); };
}

}  // namespace rootspan::cli
