// What every rootspan subcommand shares (docs/cli.md): the exit statuses, the
// provider options (--manifest, --no-static), and error output as text or as
// {"error": {...}} JSON.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rootspan/rootspan.h"

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

int run_version(std::vector<std::string> args);
int run_providers(std::vector<std::string> args);
int run_inspect(std::vector<std::string> args);
int run_load(std::vector<std::string> args);

}  // namespace rootspan::cli
