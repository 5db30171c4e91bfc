// What every rootspan subcommand shares (docs/cli.md): the exit statuses, the
// provider options (--manifest, --no-static), and error output as text or as
// {"error": {...}} JSON.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "rootspan/rootspan.h"
#include "rootspan/weights.h"

namespace rootspan::cli {

enum ExitStatus : int { kDone = 0, kUsage = 2, kInvalidInput = 3, kFailure = 4 };

struct ProviderOptions {
  std::vector<std::string> manifests;  // --manifest FILE (repeatable)
  bool no_static = false;              // --no-static
};

struct CommonOptions {
  bool json = false;
  ProviderOptions providers;
};

// Splits "--opt=value" into "--opt" "value", then consumes --json,
// --manifest FILE and --no-static from args; leaves the rest.
// Returns false (after printing why) on a malformed option.
bool take_common_options(std::vector<std::string> &args, CommonOptions &options);

// An error's exit status: 3 when the input broke a rule or named something
// that does not exist, 4 otherwise.
ExitStatus exit_status_for(rootspan_status code);

// Prints an error (text or JSON on stderr) and returns its exit status.
ExitStatus print_error(const CommonOptions &options, const rootspan_error *error);
ExitStatus print_usage_error(const CommonOptions &options, const std::string &message);

struct ContextDeleter {
  void operator()(rootspan_context *context) const { rootspan_context_destroy(context, nullptr); }
};
using ContextPtr = std::unique_ptr<rootspan_context, ContextDeleter>;
struct ErrorDeleter {
  void operator()(rootspan_error *error) const { rootspan_error_free(error); }
};
using ErrorPtr = std::unique_ptr<rootspan_error, ErrorDeleter>;

// Creates a context from the provider options: --manifest files replace
// discovery; without them the installed manifests are discovered (L3).
rootspan_status open_context(const ProviderOptions &options, ContextPtr &context, ErrorPtr &error);

// Writes one JSON document on stdout.
void print_json(const nlohmann::json &document);

// --rank R, --world W and --split PATTERN=DIM (repeatable), shared by
// `plan` and `load` (plan_command.cpp).
struct SliceArgs {
  bool given = false;        // any of the three
  bool world_given = false;  // --world itself (0 included, which the library refuses)
  std::uint32_t rank = 0;
  std::uint32_t world_size = 0;
  std::vector<std::pair<std::string, std::int32_t>> rules;
};
bool is_slice_option(const std::string &option);
// Takes one of them with its value (nullptr: none followed); returns what is
// wrong, or "".
std::string take_slice_option(const std::string &option, const std::string *value, SliceArgs &out);
// "" when the slicing options go together (--world given when any is).
std::string check_slice_args(const SliceArgs &slice);
// Points options at the slicing; `storage` keeps the rules for the call.
void apply_slice_args(const SliceArgs &slice, std::vector<rootspan_split_rule> &storage,
                      rootspan_load_options &options);

int run_version(std::vector<std::string> args);
int run_providers(std::vector<std::string> args);
int run_inspect(std::vector<std::string> args);
int run_load(std::vector<std::string> args);
int run_plan(std::vector<std::string> args);

}  // namespace rootspan::cli
