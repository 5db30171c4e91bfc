#include "command.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "terminal_text.hpp"

namespace rootspan::cli {

void add_common_options(CLI::App &app, CommonOptions &options) {
  constexpr const char *kGroup = "Global options (before or after the subcommand)";
  app.add_flag_callback(
         "--json", [&options] { options.json = true; },
         "write one JSON document on stdout (config/schemas/); errors as JSON on stderr")
      ->group(kGroup);
  // Appends: given before and after the subcommand, both lists count.
  app.add_option_function<std::vector<std::string>>(
         "--manifest",
         [&options](const std::vector<std::string> &files) {
           options.providers.manifests.insert(options.providers.manifests.end(), files.begin(), files.end());
         },
         "read this provider manifest (repeatable; replaces discovery)")
      ->type_name("FILE")
      ->allow_extra_args(false)
      ->group(kGroup);
  app.add_flag_callback(
         "--no-static", [&options] { options.providers.no_static = true; }, "leave out the compiled-in providers")
      ->group(kGroup);
}

CLI::Validator non_empty(const std::string &what) {
  return CLI::Validator(
      [what](std::string &value) { return value.empty() ? "needs " + what + ", not ''" : std::string(); }, "");
}

ExitStatus exit_status_for(rootspan_status code) {
  switch (code) {
    case ROOTSPAN_ERR_INVALID_MANIFEST:
    case ROOTSPAN_ERR_INVALID_CHECKPOINT:
    case ROOTSPAN_ERR_INVALID_SCHEMA:
    case ROOTSPAN_ERR_INVALID_PAYLOAD:
    case ROOTSPAN_ERR_IO:         // a file that cannot be read is input the user must fix
    case ROOTSPAN_ERR_NOT_FOUND:  // a name the user gave (provider, device, tensor pattern) that does not exist
    // The program passes the library only what the user gave: a bad rank, world or split.
    case ROOTSPAN_ERR_INVALID_ARGUMENT:
    case ROOTSPAN_ERR_DIGEST_MISMATCH:    // a file that is not the published one is input to fix
    case ROOTSPAN_ERR_SIGNATURE_INVALID:  // so is a model its signature does not cover
      return kInvalidInput;
    // Only the program's progress callback cancels, and only on SIGINT.
    case ROOTSPAN_ERR_CANCELLED:
      return kInterrupted;
    default:
      return kFailure;
  }
}

namespace {

void print_json_error(nlohmann::json body) {
  const nlohmann::json document = {{"format_version", kJsonFormatVersion}, {"error", std::move(body)}};
  std::cerr << document.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) << '\n';
}

}  // namespace

ExitStatus print_error(const CommonOptions &options, const rootspan_error *error) {
  const rootspan_status code = rootspan_error_code(error);
  if (options.json) {
    nlohmann::json body = {{"code", rootspan_status_name(code)},
                           {"operation", rootspan_error_operation(error)},
                           {"message", rootspan_error_message(error)},
                           {"cause", rootspan_error_cause(error)}};
    const std::string policy = rootspan_error_policy(error);
    body["policy"] = policy.empty() ? nlohmann::json(nullptr) : nlohmann::json(policy);
    std::uint64_t expected = 0;
    std::uint64_t actual = 0;
    if (rootspan_error_values(error, &expected, &actual) != 0) {
      body["expected"] = expected;
      body["actual"] = actual;
    }
    print_json_error(std::move(body));
  } else {
    // Messages quote file names and file contents: escaped for the terminal.
    std::cerr << "rootspan: " << rootspan_status_name(code) << ": " << terminal_safe(rootspan_error_message(error))
              << '\n';
  }
  return exit_status_for(code);
}

ExitStatus print_usage_error(const CommonOptions &options, const std::string &message) {
  if (options.json) {
    print_json_error({{"code", "Usage"}, {"operation", "usage"}, {"message", message}});
  } else {
    std::cerr << "rootspan: " << terminal_safe(message) << "\n(see rootspan --help, or rootspan help COMMAND)\n";
  }
  return kUsage;
}

ExitStatus print_program_error(const CommonOptions &options, ExitStatus status, const std::string &code,
                               const std::string &operation, const std::string &message) {
  if (options.json) {
    print_json_error({{"code", code}, {"operation", operation}, {"message", message}});
  } else {
    std::cerr << "rootspan: " << code << ": " << terminal_safe(message) << '\n';
  }
  return status;
}

rootspan_status open_context(const ProviderOptions &options, ContextPtr &context, ErrorPtr &error) {
  std::vector<const char *> paths;
  for (const std::string &m : options.manifests) paths.push_back(m.c_str());
  rootspan_context_options opts{};
  opts.struct_size = sizeof opts;
  opts.no_static_providers = options.no_static ? 1 : 0;
  opts.manifests = paths.data();
  opts.manifest_count = paths.size();
  opts.discover_manifests = paths.empty() ? 1 : 0;
  rootspan_context *raw = nullptr;
  rootspan_error *raw_error = nullptr;
  const rootspan_status status = rootspan_context_create(&opts, &raw, &raw_error);
  context.reset(raw);
  error.reset(raw_error);
  return status;
}

// ensure_ascii: every non-ASCII character as \uXXXX, so no C1 or bidirectional
// control from a file reaches the terminal raw; invalid UTF-8 is replaced.
void print_json(nlohmann::json document) {
  document["format_version"] = kJsonFormatVersion;
  std::cout << document.dump(2, ' ', true, nlohmann::json::error_handler_t::replace) << '\n';
}

Runner add_version_command(CLI::App &rootspan, CommonOptions &common) {
  CLI::App *app = rootspan.add_subcommand("version", "the library and provider ABI versions");
  add_common_options(*app, common);
  return [&common] {
    if (common.json) {
      print_json({{"version", rootspan_version()},
                  {"provider_abi", {{"major", ROOTSPAN_PROVIDER_ABI_MAJOR}, {"minor", ROOTSPAN_PROVIDER_ABI_MINOR}}}});
    } else {
      std::printf("rootspan %s (provider ABI %d.%d)\n", rootspan_version(), ROOTSPAN_PROVIDER_ABI_MAJOR,
                  ROOTSPAN_PROVIDER_ABI_MINOR);
    }
    return kDone;
  };
}

}  // namespace rootspan::cli
