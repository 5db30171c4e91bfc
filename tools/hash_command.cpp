// `rootspan hash PATH [--per-tensor] [--output FILE]`: a digest manifest of a
// checkpoint — the SHA-256 of every file, and with --per-tensor of every
// component's bytes as each rank of --world W reads them — for `load
// --digests FILE` to check a load against (docs/verified-loads.md). The
// manifest goes to stdout, or with --output to the file, written as a new file
// renamed over it (replacing_write.hpp), and a summary line to stdout (none
// with --json).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "byte_size.hpp"
#include "command.hpp"
#include "replacing_write.hpp"
#include "rootspan/weights.h"
#include "terminal_text.hpp"
#include "text_table.hpp"

namespace rootspan::cli {

namespace {

struct HashArgs {
  CheckpointArgs checkpoint;  // PATH, --schema, --tensors, --revision
  SliceArgs slice;
  bool per_tensor = false;
  std::string output;  // empty: stdout
};

int run_hash(HashArgs &args, const CommonOptions &options) {
  if (std::string problem = check_slice_args(args.slice); !problem.empty()) {
    return print_usage_error(options, problem);
  }
  if (args.slice.given() && !args.per_tensor) {
    return print_usage_error(options, "--world, --rank and --split describe per-tensor digests: add --per-tensor");
  }
  rootspan_load_options opts{};
  opts.struct_size = sizeof opts;
  apply_checkpoint_args(args.checkpoint, opts);
  std::vector<rootspan_split_rule> rules;
  apply_slice_args(args.slice, rules, opts);

  char *json = nullptr;
  rootspan_error *raw_error = nullptr;
  if (rootspan_checkpoint_hash(args.checkpoint.path.c_str(), &opts, args.per_tensor ? 1 : 0, &json, &raw_error) !=
      ROOTSPAN_OK) {
    const ErrorPtr error(raw_error);
    return print_error(options, error.get());
  }
  const std::string text = std::string(json) + "\n";
  rootspan_string_free(json);
  if (args.output.empty()) {
    std::fputs(text.c_str(), stdout);
    return kDone;
  }
  // A new file renamed over FILE: a link planted at FILE is replaced, never written through.
  if (const std::string failure = write_replacing(args.output, text); !failure.empty()) {
    return print_program_error(
        options, kInvalidInput, "Io", "hash_checkpoint",
        "cannot write the digest manifest to \"" + terminal_safe(args.output) + "\": " + terminal_safe(failure));
  }
  // With --json the manifest is the output, and it went to the file.
  if (!options.json) {
    const nlohmann::json manifest = nlohmann::json::parse(text);
    std::uint64_t bytes = 0;
    for (const auto &[name, entry] : manifest["files"].items()) bytes += entry["bytes"].get<std::uint64_t>();
    print_wrapped(
        "wrote " + terminal_safe(args.output) + ": the SHA-256 of " + counted(manifest["files"].size(), "file") + " (" +
            byte_size(bytes) + ")" +
            (manifest.contains("components") ? ", and of every component on each of " +
                                                   std::to_string(manifest["components"]["ranks"].size()) + " rank(s)"
                                             : ""),
        output_width());
  }
  return kDone;
}

}  // namespace

Runner add_hash_command(CLI::App &rootspan, CommonOptions &common) {
  CLI::App *app = rootspan.add_subcommand(
      "hash",
      "write a digest manifest: the SHA-256 of every file, and with --per-tensor of every component as each "
      "rank of --world W reads it, for load --digests");
  auto args = std::make_shared<HashArgs>();
  add_checkpoint_options(*app, args->checkpoint);
  app->add_flag("--per-tensor", args->per_tensor,
                "also the SHA-256 of each component's bytes (with --world, of each rank's slice), so that a load "
                "checks exactly what it reads");
  app->add_option("--output,-o", args->output, "write the manifest here instead of stdout")->type_name("FILE");
  add_slice_options(*app, args->slice);
  add_common_options(*app, common);
  return [args, &common] { return run_hash(*args, common); };
}

}  // namespace rootspan::cli
