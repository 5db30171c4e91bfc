// What every rootspan subcommand shares (docs/cli.md): the exit statuses, the
// global options (--json, --manifest, --no-static), error output as text or
// as {"error": {...}} JSON, and JSON documents with their format version.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "rootspan/rootspan.h"
#include "rootspan/weights.h"

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace rootspan::cli {

enum ExitStatus : int { kDone = 0, kUsage = 2, kInvalidInput = 3, kFailure = 4, kInterrupted = 130 };

// The version of every JSON document the program writes (config/schemas/):
// raised when a field changes meaning or goes away, not when one is added.
inline constexpr int kJsonFormatVersion = 1;

struct ProviderOptions {
  std::vector<std::string> manifests;  // --manifest FILE (repeatable)
  bool no_static = false;              // --no-static
};

struct CommonOptions {
  bool json = false;  // --json
  ProviderOptions providers;
};

// Adds the global options to `app` (the program itself, and each subcommand,
// so that they are accepted before or after the subcommand and listed in its
// help); every app writes into the same `options`.
void add_common_options(CLI::App &app, CommonOptions &options);

// Refuses an empty value: "--revision needs a branch, tag or commit, not ''".
CLI::Validator non_empty(const std::string &what);

// A subcommand's work, run once the whole command line parsed; returns the
// exit status.
using Runner = std::function<int()>;

// An error's exit status: 3 when the input broke a rule or named something
// that does not exist, 130 for a load cancelled by Ctrl-C, 4 otherwise.
ExitStatus exit_status_for(rootspan_status code);

// Prints an error (text or JSON on stderr) and returns its exit status.
ExitStatus print_error(const CommonOptions &options, const rootspan_error *error);
ExitStatus print_usage_error(const CommonOptions &options, const std::string &message);
// An error the program itself finds (operation, code name, message), e.g. a
// --verify mismatch; returns `status`.
ExitStatus print_program_error(const CommonOptions &options, ExitStatus status, const std::string &code,
                               const std::string &operation, const std::string &message);

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

// Writes one JSON document on stdout, with "format_version" added.
void print_json(nlohmann::json document);

// PATH, --schema FILE, --tensors PATTERN (repeatable) and --revision REV,
// shared by `plan` and `load` (checkpoint_options.cpp).
struct CheckpointArgs {
  std::string path;
  std::string schema;
  std::vector<std::string> tensors;
  std::string revision;
  std::vector<const char *> patterns;  // tensors as C strings, kept for the call
};
void add_checkpoint_options(CLI::App &app, CheckpointArgs &checkpoint);
// Points options at the schema, the tensor globs and the revision; the
// pointers live as long as `checkpoint`.
void apply_checkpoint_args(CheckpointArgs &checkpoint, rootspan_load_options &options);

// --signature FILE, --public-key PEM, --certificate-chain PEM (repeatable)
// and --ignore-unsigned-files: a load checked against a model signature
// (signature_options.cpp).
struct SignatureArgs {
  std::string signature;
  std::string public_key;
  std::vector<std::string> certificate_chain;
  bool ignore_unsigned_files = false;
};
void add_signature_options(CLI::App &app, SignatureArgs &signature);
// What is wrong with them (a signature without a key or certificates), or "".
std::string check_signature_args(const SignatureArgs &signature);
// Points options at the signature; `chain` keeps the C strings for the call.
void apply_signature_args(const SignatureArgs &signature, std::vector<const char *> &chain,
                          rootspan_load_options &options);

// --rank R, --world W and --split PATTERN=DIM (repeatable), shared by
// `plan` and `load` (slice_options.cpp).
struct SliceArgs {
  std::optional<std::uint32_t> rank;
  std::optional<std::uint32_t> world_size;                  // 0 included, which the library refuses
  std::vector<std::string> split_texts;                     // as given
  std::vector<std::pair<std::string, std::int32_t>> rules;  // parsed by check_slice_args
  std::optional<std::string> convention;                    // --split-as: "tensor_split" or "chunk"
  bool given() const { return rank || world_size || !split_texts.empty() || convention; }
};
void add_slice_options(CLI::App &app, SliceArgs &slice);
// Parses the --split rules; returns what is wrong (a malformed rule, --rank
// or --split without --world), or "".
std::string check_slice_args(SliceArgs &slice);
// Points options at the slicing; `storage` keeps the rules for the call.
void apply_slice_args(const SliceArgs &slice, std::vector<rootspan_split_rule> &storage,
                      rootspan_load_options &options);

// Pointers to each string's characters, for a C array option; they live as
// long as `strings`.
std::vector<const char *> c_strings(const std::vector<std::string> &strings);

// Each subcommand adds itself to the program's command line.
Runner add_version_command(CLI::App &rootspan, CommonOptions &common);
Runner add_providers_command(CLI::App &rootspan, CommonOptions &common);
Runner add_inspect_command(CLI::App &rootspan, CommonOptions &common);
Runner add_load_command(CLI::App &rootspan, CommonOptions &common);
Runner add_plan_command(CLI::App &rootspan, CommonOptions &common);
Runner add_hash_command(CLI::App &rootspan, CommonOptions &common);
Runner add_sign_command(CLI::App &rootspan, CommonOptions &common);

}  // namespace rootspan::cli
