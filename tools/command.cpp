#include "command.hpp"

#include <cstdio>
#include <iostream>

#include "terminal_text.hpp"

namespace rootspan::cli {

bool take_common_options(std::vector<std::string> &args, CommonOptions &options) {
  // "--opt=value" is "--opt value" (the value may hold '=' itself).
  std::vector<std::string> split;
  for (const std::string &arg : args) {
    const std::size_t equals = arg.find('=');
    if (arg.starts_with("--") && equals != std::string::npos) {
      split.push_back(arg.substr(0, equals));
      split.push_back(arg.substr(equals + 1));
    } else {
      split.push_back(arg);
    }
  }
  args = std::move(split);
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--json") {
      options.json = true;
    } else if (args[i] == "--no-static") {
      options.providers.no_static = true;
    } else if (args[i] == "--manifest") {
      if (i + 1 == args.size()) {
        print_usage_error(options, "--manifest needs a FILE");
        return false;
      }
      options.providers.manifests.push_back(args[++i]);
    } else {
      rest.push_back(args[i]);
    }
  }
  args = std::move(rest);
  return true;
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
      return kInvalidInput;
    default:
      return kFailure;
  }
}

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
    std::cerr << nlohmann::json{{"error", body}}.dump() << '\n';
  } else {
    // Messages quote file names and file contents: escaped for the terminal.
    std::cerr << "rootspan: " << rootspan_status_name(code) << ": " << terminal_safe(rootspan_error_message(error))
              << '\n';
  }
  return exit_status_for(code);
}

ExitStatus print_usage_error(const CommonOptions &options, const std::string &message) {
  if (options.json) {
    std::cerr << nlohmann::json{{"error", {{"code", "Usage"}, {"operation", "usage"}, {"message", message}}}}.dump()
              << '\n';
  } else {
    std::cerr << "rootspan: " << terminal_safe(message) << "\n(see rootspan --help)\n";
  }
  return kUsage;
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
void print_json(const nlohmann::json &document) {
  std::cout << document.dump(2, ' ', true, nlohmann::json::error_handler_t::replace) << '\n';
}

int run_version(std::vector<std::string> args) {
  CommonOptions options;
  if (!take_common_options(args, options)) return kUsage;
  if (!args.empty()) return print_usage_error(options, "version takes no argument: " + args.front());
  if (options.json) {
    print_json({{"version", rootspan_version()},
                {"provider_abi", {{"major", ROOTSPAN_PROVIDER_ABI_MAJOR}, {"minor", ROOTSPAN_PROVIDER_ABI_MINOR}}}});
  } else {
    std::printf("rootspan %s (provider ABI %d.%d)\n", rootspan_version(), ROOTSPAN_PROVIDER_ABI_MAJOR,
                ROOTSPAN_PROVIDER_ABI_MINOR);
  }
  return kDone;
}

}  // namespace rootspan::cli
