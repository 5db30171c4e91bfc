// `rootspan load PATH`: every component into one provider, with a progress bar
// on a terminal and a table (or JSON) of what landed where (docs/cli.md).
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "command.hpp"
#include "rootspan/weights.h"
#include "terminal_text.hpp"

namespace rootspan::cli {

namespace {

struct LoadArgs {
  std::string path;
  std::string schema;
  std::string provider = "auto";
  std::uint32_t device = 0;
  rootspan_load_strategy strategy = ROOTSPAN_LOAD_MMAP;
  bool verify = false;
  std::vector<std::string> tensors;  // --tensors PATTERN (repeatable)
  std::string revision;              // --revision REV (a Hugging Face cache repository)
  SliceArgs slice;                   // --rank, --world, --split: one rank's slice
};

// Returns an empty string when the arguments are good, else what is wrong.
std::string parse(std::vector<std::string> args, LoadArgs &out) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    auto value = [&]() -> const std::string * { return i + 1 < args.size() ? &args[++i] : nullptr; };
    if (a == "--verify") {
      out.verify = true;
    } else if (is_slice_option(a)) {
      if (std::string problem = take_slice_option(a, value(), out.slice); !problem.empty()) return problem;
    } else if (a == "--schema" || a == "--provider" || a == "--device" || a == "--strategy" || a == "--tensors" ||
               a == "--revision") {
      const std::string *v = value();
      if (v == nullptr) return a + " needs a value";
      if (a == "--schema") out.schema = *v;
      if (a == "--tensors") out.tensors.push_back(*v);
      if (a == "--revision") {
        if (v->empty()) return "--revision needs a branch, tag or commit, not ''";
        out.revision = *v;
      }
      if (a == "--provider") out.provider = *v;
      if (a == "--device") {
        if (v->empty() || v->find_first_not_of("0123456789") != std::string::npos || v->size() > 9) {
          return "--device needs a device ordinal, not '" + *v + "'";
        }
        out.device = static_cast<std::uint32_t>(std::stoul(*v));
      }
      if (a == "--strategy") {
        if (*v != "mmap" && *v != "read") return "--strategy is mmap or read, not '" + *v + "'";
        out.strategy = *v == "read" ? ROOTSPAN_LOAD_READ : ROOTSPAN_LOAD_MMAP;
      }
    } else if (!a.empty() && a[0] == '-') {
      return "unknown option " + a;
    } else if (out.path.empty()) {
      out.path = a;
    } else {
      return "load takes one PATH; also got '" + a + "'";
    }
  }
  if (out.path.empty()) return "load needs a PATH (a checkpoint file or folder)";
  return check_slice_args(out.slice);
}

int draw_progress(void *, const rootspan_load_progress *p) {
  const double fraction = p->bytes_total == 0 ? 1.0 : static_cast<double>(p->bytes_done) / p->bytes_total;
  const int filled = static_cast<int>(fraction * 30);
  std::fprintf(stderr, "\r[%-30.*s] %3d%%  %llu/%llu  %-40.40s", filled, "##############################",
               static_cast<int>(fraction * 100), static_cast<unsigned long long>(p->component_index + 1),
               static_cast<unsigned long long>(p->component_count), p->component);
  return 0;
}

// The encoding as a component schema writes it.
nlohmann::json encoding_json(const rootspan_component_info &info) {
  if (info.encoding == ROOTSPAN_ENCODING_BLOCK_QUANTIZED) {
    const nlohmann::json blocks = {{"format_id", info.format_id},
                                   {"values_per_block", info.values_per_block},
                                   {"bytes_per_block", info.bytes_per_block}};
    return {{"block_quantized", blocks}};
  }
  const nlohmann::json dense = {{"element_type", rootspan_dtype_name(info.dtype)}};
  return {{"dense", dense}};
}

// "[64,32]", "[]" for a scalar.
std::string shape_text(const nlohmann::json &shape) {
  std::string text = "[";
  for (const auto &d : shape) text += (text.size() > 1 ? "," : "") + std::to_string(d.get<std::uint64_t>());
  return text + "]";
}

}  // namespace

int run_load(std::vector<std::string> args) {
  CommonOptions options;
  if (!take_common_options(args, options)) return kUsage;
  LoadArgs load;
  if (const std::string problem = parse(args, load); !problem.empty()) return print_usage_error(options, problem);

  ContextPtr context;
  ErrorPtr error;
  if (open_context(options.providers, context, error) != ROOTSPAN_OK) return print_error(options, error.get());

  // The provider and device first: a name or ordinal that does not exist is
  // refused (exit 3, listing what exists) before any file is read, and "auto"
  // says what it chose and why.
  rootspan_provider_choice *raw_choice = nullptr;
  rootspan_error *choice_error = nullptr;
  if (rootspan_provider_choose(context.get(), load.provider.c_str(), load.device, &raw_choice, &choice_error) !=
      ROOTSPAN_OK) {
    error.reset(choice_error);
    return print_error(options, error.get());
  }
  const std::unique_ptr<rootspan_provider_choice, void (*)(rootspan_provider_choice *)> choice(
      raw_choice, rootspan_provider_choice_free);
  const bool automatic = load.provider == "auto";
  if (automatic && !options.json) {
    std::fprintf(stderr, "rootspan: auto: %s\n", rootspan_provider_choice_explanation(choice.get()));
  }

  rootspan_load_options opts{};
  opts.struct_size = sizeof opts;
  opts.schema_path = load.schema.empty() ? nullptr : load.schema.c_str();
  opts.provider = rootspan_provider_choice_name(choice.get());
  opts.device = load.device;
  opts.strategy = load.strategy;
  std::vector<const char *> patterns;
  for (const std::string &pattern : load.tensors) patterns.push_back(pattern.c_str());
  opts.tensors = patterns.data();
  opts.tensor_count = patterns.size();
  opts.revision = load.revision.empty() ? nullptr : load.revision.c_str();
  std::vector<rootspan_split_rule> split_rules;
  apply_slice_args(load.slice, split_rules, opts);
  const bool bar = !options.json && isatty(STDERR_FILENO) != 0;
  if (bar) opts.progress = draw_progress;

  if (load.slice.world_given && load.slice.world_size == 0) {
    // The library reads world size 0 as "no slicing"; asked for on the
    // command line it is a mistake, refused as the read plan refuses it.
    char *unused = nullptr;
    rootspan_error *plan_error = nullptr;
    if (rootspan_checkpoint_read_plan(load.path.c_str(), &opts, &unused, &plan_error) != ROOTSPAN_OK) {
      error.reset(plan_error);
      return print_error(options, error.get());
    }
    rootspan_string_free(unused);
  }

  const auto start = std::chrono::steady_clock::now();
  rootspan_weights *raw = nullptr;
  rootspan_error *raw_error = nullptr;
  const rootspan_status status = rootspan_weights_load(context.get(), load.path.c_str(), &opts, &raw, &raw_error);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (bar) std::fputc('\n', stderr);
  if (status != ROOTSPAN_OK) {
    error.reset(raw_error);
    return print_error(options, error.get());
  }

  nlohmann::json components = nlohmann::json::array();
  std::uint64_t total = 0;
  std::size_t count = 0;
  rootspan_weights_component_count(raw, &count);
  int exit_status = kDone;
  for (std::size_t i = 0; i < count; ++i) {
    rootspan_component_info info{};
    info.struct_size = sizeof info;
    rootspan_weights_component(raw, i, &info);
    rootspan_root_info root{};
    root.struct_size = sizeof root;
    rootspan_root_get_info(info.root, &root);
    total += info.byte_length;
    nlohmann::json c = {{"id", info.id},
                        {"bytes", info.byte_length},
                        {"segments", info.segments},
                        {"zero_copy", info.zero_copy != 0},
                        {"key", {{"domain", root.key.domain}, {"local", root.key.local}}},
                        {"sha256", nullptr},
                        {"read_only", info.read_only != 0},
                        {"role", rootspan_role_name(info.role)},
                        {"dtype", rootspan_dtype_name(info.dtype)},
                        {"shape", std::vector<std::uint64_t>(info.shape, info.shape + info.rank)},
                        {"encoding", encoding_json(info)}};
    if (load.verify) {
      char hex[65];
      rootspan_error *verify_error = nullptr;
      if (rootspan_weights_component_sha256(raw, i, hex, &verify_error) == ROOTSPAN_OK) {
        c["sha256"] = hex;
      } else {
        ErrorPtr e(verify_error);
        exit_status = print_error(options, e.get());
      }
    }
    components.push_back(c);
  }
  nlohmann::json skipped = nlohmann::json::array();
  std::size_t skipped_count = 0;
  rootspan_weights_skipped_count(raw, &skipped_count);
  for (std::size_t i = 0; i < skipped_count; ++i) {
    const char *id = nullptr;
    const char *reason = nullptr;
    rootspan_weights_skipped(raw, i, &id, &reason);
    skipped.push_back({{"id", id}, {"reason", reason}});
  }
  std::uint64_t bytes_read = 0;
  rootspan_weights_bytes_read(raw, &bytes_read);
  const double gb_per_s = seconds > 0 ? static_cast<double>(total) / seconds / 1e9 : 0.0;
  nlohmann::json document = {{"provider", rootspan_weights_provider(raw)},
                             {"device", load.device},
                             {"components", components},
                             {"skipped", skipped},
                             {"total_bytes", total},
                             {"bytes_read", bytes_read},
                             {"seconds", seconds},
                             {"gb_per_s", gb_per_s}};
  if (load.slice.world_size != 0) {
    document["rank"] = load.slice.rank;
    document["world_size"] = load.slice.world_size;
  }
  if (automatic) document["provider_choice"] = rootspan_provider_choice_explanation(choice.get());
  if (options.json) {
    print_json(document);
  } else {
    std::printf("loaded %zu components into provider %s, device %u\n", count,
                terminal_safe(rootspan_weights_provider(raw)).c_str(), load.device);
    std::printf("%-40s %-6s %-16s %12s %8s %-10s %-14s%s\n", "COMPONENT", "DTYPE", "SHAPE", "BYTES", "SEGMENTS",
                "PLACEMENT", "KEY", load.verify ? " SHA-256" : "");
    for (const auto &c : components) {
      const std::string key = "(" + std::to_string(c["key"]["domain"].get<std::uint64_t>()) + "," +
                              std::to_string(c["key"]["local"].get<std::uint64_t>()) + ")";
      std::printf("%-40s %-6s %-16s %12llu %8llu %-10s %-14s%s%s\n", terminal_safe(c["id"].get<std::string>()).c_str(),
                  c["dtype"].get<std::string>().c_str(), shape_text(c["shape"]).c_str(),
                  static_cast<unsigned long long>(c["bytes"].get<std::uint64_t>()),
                  static_cast<unsigned long long>(c["segments"].get<std::uint64_t>()),
                  c["zero_copy"].get<bool>() ? "zero-copy" : "copied", key.c_str(), load.verify ? " " : "",
                  c["sha256"].is_null() ? "" : c["sha256"].get<std::string>().c_str());
    }
    for (const auto &s : skipped) {
      std::printf("skipped %s: %s\n", terminal_safe(s["id"].get<std::string>()).c_str(),
                  terminal_safe(s["reason"].get<std::string>()).c_str());
    }
    std::printf("total %llu bytes in %.3f s (%.2f GB/s)\n", static_cast<unsigned long long>(total), seconds, gb_per_s);
    if (load.slice.world_size != 0) {
      std::printf("rank %u of %u read %llu bytes\n", load.slice.rank, load.slice.world_size,
                  static_cast<unsigned long long>(bytes_read));
    }
  }
  rootspan_weights_free(raw, nullptr);
  return exit_status;
}

}  // namespace rootspan::cli
