// The rootspan program (docs/cli.md): the command line, parsed by CLI11, and
// one subcommand per file. CLI11's generated help, fitted to the terminal
// (help_text.hpp), is the only usage text.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "command.hpp"
#include "core/text/closest_names.hpp"
#include "help_text.hpp"

namespace rootspan::cli {

namespace {

constexpr const char *kFooter =
    "PATH is a .safetensors or .gguf file (a split GGUF by any of its parts), a folder, an index file "
    "(model.safetensors.index.json), or a Hugging Face cache repository folder (models--org--name).\n"
    "PATTERN is a shell-style glob over component ids, or tensor names outside the id rule ('*' matches '.' "
    "and '/' too).\n"
    "Options take their value as --opt VALUE or --opt=VALUE; '--' ends the options.\n"
    "Exit status: 0 done, 2 usage, 3 invalid input, 4 provider or system failure, 130 interrupted (Ctrl-C).\n"
    "JSON outputs and their schemas: docs/cli.md.";

std::vector<std::string> option_names(const CLI::App &app) {
  std::vector<std::string> names;
  for (const CLI::Option *option : app.get_options()) {
    for (const std::string &name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

std::vector<std::string> subcommand_names(const CLI::App &app) {
  std::vector<std::string> names;
  for (const CLI::App *sub : app.get_subcommands([](const CLI::App *) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

std::string did_you_mean(const std::string &typed, const std::vector<std::string> &names) {
  const std::string near = closest_name(typed, names);
  return near.empty() ? "" : " (did you mean '" + near + "'?)";
}

// The subcommand the command line chose, or nullptr.
CLI::App *chosen(CLI::App &rootspan) {
  const auto subs = rootspan.get_subcommands();
  return subs.empty() ? nullptr : subs.front();
}

// The first argument no app took, as the user's mistake: an unknown option
// (blamed by name, never the path beside it), an unknown subcommand, or one
// positional too many. "" when every argument was taken.
std::string unexpected_argument(CLI::App &rootspan) {
  CLI::App *sub = chosen(rootspan);
  for (CLI::App *app : {sub, &rootspan}) {
    if (app == nullptr) continue;
    bool options_ended = false;  // after "--", everything is a positional
    for (const std::string &arg : app->remaining()) {
      if (arg == "--" && !options_ended) {
        options_ended = true;
        continue;
      }
      const std::string where = app == &rootspan ? "" : " for '" + app->get_name() + "'";
      if (!options_ended && arg.size() > 1 && arg[0] == '-') {
        const std::string name = arg.substr(0, arg.find('='));
        return "unknown option '" + name + "'" + where + did_you_mean(name, option_names(*app));
      }
      if (app == &rootspan) return "unknown command '" + arg + "'" + did_you_mean(arg, subcommand_names(rootspan));
      return app->get_name() + " takes one PATH; also got '" + arg + "'";
    }
  }
  return "";
}

// A value CLI11 could not convert ("Could not convert: --device = x") in
// rootspan's words: the option, what it takes and what it got; "" when the
// message is not of that form. The program's only numeric options (--device,
// --rank, --world) are 32-bit ordinals.
std::string bad_number(const std::string &message) {
  constexpr std::string_view kPrefix = "Could not convert: ";
  const std::size_t equals = message.find(" = ");
  if (!message.starts_with(kPrefix) || equals == std::string::npos) return "";
  return message.substr(kPrefix.size(), equals - kPrefix.size()) + ": expected a whole number from 0 to " +
         std::to_string(UINT32_MAX) + ", got '" + message.substr(equals + 3) + "'";
}

// CLI11's words for a parse error, made to name the option at fault.
std::string usage_message(CLI::App &rootspan, const CLI::ParseError &error) {
  if (std::string unexpected = unexpected_argument(rootspan); !unexpected.empty()) return unexpected;
  CLI::App *sub = chosen(rootspan);
  if (dynamic_cast<const CLI::RequiredError *>(&error) != nullptr) {
    if (sub == nullptr) return "a command is required: " + CLI::detail::join(subcommand_names(rootspan), ", ");
    if (const CLI::Option *path = sub->get_option_no_throw("PATH"); path != nullptr && path->count() == 0) {
      return sub->get_name() + " needs a PATH (a checkpoint file, folder, index file or Hugging Face cache repository)";
    }
  }
  if (dynamic_cast<const CLI::ConversionError *>(&error) != nullptr) {
    if (std::string named = bad_number(error.what()); !named.empty()) return named;
  }
  return error.what();
}

// --json anywhere before "--": the usage error is then JSON too, even when the
// command line did not parse far enough to set it.
bool json_requested(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) return false;
    if (std::strcmp(argv[i], "--json") == 0) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App rootspan("rootspan: provider memory, checkpoints and loads (docs/cli.md)", "rootspan");
  // Set first: each subcommand takes its parent's formatter when it is added.
  rootspan.formatter(std::make_shared<FittedFormatter>());
  rootspan.footer(kFooter);
  rootspan.set_version_flag("--version",
                            std::string("rootspan ") + rootspan_version() + " (provider ABI " +
                                std::to_string(ROOTSPAN_PROVIDER_ABI_MAJOR) + "." +
                                std::to_string(ROOTSPAN_PROVIDER_ABI_MINOR) + ")",
                            "print the library version and exit");
  // Unknown arguments are collected, not thrown, so that the message can
  // name them (unexpected_argument).
  rootspan.allow_extras();
  rootspan.require_subcommand(1);
  CommonOptions common;
  add_common_options(rootspan, common);

  std::map<const CLI::App *, Runner> runners;
  // Each add_*_command adds its subcommand last; `add` finishes it.
  const auto add = [&](Runner runner) {
    CLI::App *sub = rootspan.get_subcommands([](const CLI::App *) { return true; }).back();
    sub->allow_extras();
    sub->footer(kFooter);
    runners[sub] = std::move(runner);
  };
  add(add_version_command(rootspan, common));
  add(add_providers_command(rootspan, common));
  add(add_inspect_command(rootspan, common));
  add(add_load_command(rootspan, common));
  add(add_plan_command(rootspan, common));
  add(add_hash_command(rootspan, common));
  add(add_sign_command(rootspan, common));
  std::string help_topic;
  CLI::App *help = rootspan.add_subcommand("help", "this help, or a command's: rootspan help COMMAND");
  help->add_option("COMMAND", help_topic, "the command to describe");
  help->allow_extras();
  add_common_options(*help, common);

  if (argc < 2) {
    // No command at all is a usage error: the help, on stderr.
    std::cerr << rootspan.help();
    return kUsage;
  }
  try {
    rootspan.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return rootspan.exit(e);  // the chosen subcommand's help, on stdout
  } catch (const CLI::CallForAllHelp &e) {
    return rootspan.exit(e);
  } catch (const CLI::CallForVersion &e) {
    return rootspan.exit(e);
  } catch (const CLI::ParseError &e) {
    common.json = common.json || json_requested(argc, argv);
    return print_usage_error(common, usage_message(rootspan, e));
  }
  if (std::string unexpected = unexpected_argument(rootspan); !unexpected.empty()) {
    return print_usage_error(common, unexpected);
  }
  CLI::App *sub = chosen(rootspan);
  if (sub == help) {
    if (help_topic.empty()) {
      // The program's own help: App::help() would describe `help` itself.
      std::cout << rootspan.get_formatter()->make_help(&rootspan, rootspan.get_name(), CLI::AppFormatMode::Normal);
      return kDone;
    }
    const auto names = subcommand_names(rootspan);
    if (std::find(names.begin(), names.end(), help_topic) == names.end()) {
      return print_usage_error(common, "no command '" + help_topic + "'" + did_you_mean(help_topic, names));
    }
    std::cout << rootspan.get_subcommand(help_topic)->help("rootspan");
    return kDone;
  }
  return runners.at(sub)();
}

}  // namespace rootspan::cli

int main(int argc, char **argv) { return rootspan::cli::main(argc, argv); }
