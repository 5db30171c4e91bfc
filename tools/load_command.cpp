// `rootspan load PATH`: every component into one provider, with a progress bar
// on a terminal, Ctrl-C cancelling, and a table (or JSON) of what landed
// where, the time of each phase, and with --verify the digests of provider
// memory against the files (docs/cli.md).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include "byte_size.hpp"
#include "command.hpp"
#include "load_progress.hpp"
#include "rootspan/weights.h"
#include "terminal_text.hpp"
#include "text_table.hpp"

namespace rootspan::cli {

namespace {

struct LoadArgs {
  CheckpointArgs checkpoint;  // PATH, --schema, --tensors, --revision
  std::string provider = "auto";
  std::uint32_t device = 0;
  rootspan_load_strategy strategy = ROOTSPAN_LOAD_AUTO;
  bool populate = false;  // --populate, and --verify, which reads every byte
  bool verify = false;
  bool check_digests = false;  // --check-digests, or --digests FILE
  std::string digests_path;
  SignatureArgs signature;  // --signature FILE with --public-key or --certificate-chain
  SliceArgs slice;          // --rank, --world, --split: one rank's slice
};

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// "0.41 ms", "12.3 ms", "1.52 s".
std::string duration_text(double seconds) {
  char text[32];
  if (seconds < 1.0) {
    const double ms = seconds * 1e3;
    std::snprintf(text, sizeof text, "%.*f ms", ms < 10 ? 2 : ms < 100 ? 1 : 0, ms);
  } else {
    std::snprintf(text, sizeof text, "%.2f s", seconds);
  }
  return text;
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
std::string shape_text(const rootspan_component_info &info) {
  std::string text = "[";
  for (std::size_t d = 0; d < info.rank; ++d) text += (d == 0 ? "" : ",") + std::to_string(info.shape[d]);
  return text + "]";
}

// One loaded component as the output shows it. Kept as the library gives it
// (its text lives as long as the weights), not as JSON: a table of 2^20
// components would cost gigabytes as a JSON document.
struct LoadedRow {
  rootspan_component_info info{};
  rootspan_key key{};
  std::optional<std::string> sha256;         // --verify: of provider memory; nullopt: unreadable
  std::optional<std::string> source_sha256;  // --verify: of the bytes the load read from the files
  // Its tensor's name lies outside the id rule, so it loaded as "tensor.<n>"
  // and rootspan_weights_find takes that name too (the library's one rule).
  bool named_by_source = false;
};

nlohmann::json optional_json(const std::optional<std::string> &text) {
  return text ? nlohmann::json(*text) : nlohmann::json(nullptr);
}

nlohmann::json component_json(const LoadedRow &row) {
  const rootspan_component_info &info = row.info;
  return {{"id", info.id},
          {"source", info.source_name},
          {"file", info.source_file},
          {"offset", info.source_offset},
          {"contiguous", info.source_contiguous != 0},
          {"bytes", info.byte_length},
          {"segments", info.segments},
          {"zero_copy", info.zero_copy != 0},
          {"key", {{"domain", row.key.domain}, {"local", row.key.local}}},
          {"sha256", optional_json(row.sha256)},
          {"source_sha256", optional_json(row.source_sha256)},
          {"read_only", info.read_only != 0},
          {"role", rootspan_role_name(info.role)},
          {"dtype", rootspan_dtype_name(info.dtype)},
          {"shape", std::vector<std::uint64_t>(info.shape, info.shape + info.rank)},
          {"encoding", encoding_json(info)}};
}

struct WeightsDeleter {
  void operator()(rootspan_weights *weights) const { rootspan_weights_free(weights, nullptr); }
};

void print_text(const nlohmann::json &document, const std::vector<LoadedRow> &components, const LoadArgs &load) {
  const std::size_t width = output_width();
  print_wrapped("loaded " + counted(components.size(), "component") + " into provider " +
                    terminal_safe(document["provider"].get<std::string>()) + ", device " + std::to_string(load.device),
                width);
  // SEGMENTS and KEY give way first on a narrow terminal (--json has them).
  std::vector<TextTable::Column> columns = {
      {"COMPONENT", false, true}, {"DTYPE"}, {"SHAPE"}, {"SIZE", true}, {"SEGMENTS", true, false, true}, {"PLACEMENT"},
      {"KEY", false, false, true}};
  // The table shows a digest's first 16 hex digits, as `git log` shortens a
  // commit; --json and a mismatch's error give all 64.
  constexpr std::size_t kShownDigits = 16;
  if (load.verify) columns.push_back({"SHA-256"});
  TextTable table(columns);
  for (const LoadedRow &c : components) {
    // A tensor name outside the id rule is shown beside the id it loaded as.
    std::vector<std::string> row = {
        terminal_safe(c.info.id) +
            (c.named_by_source ? " \"" + terminal_safe(c.info.source_name) + "\"" : std::string()),
        rootspan_dtype_name(c.info.dtype),
        shape_text(c.info),
        byte_size(c.info.byte_length),
        std::to_string(c.info.segments),
        c.info.zero_copy != 0 ? "zero-copy" : "copied",
        "(" + std::to_string(c.key.domain) + "," + std::to_string(c.key.local) + ")"};
    if (load.verify) {
      const bool match = c.sha256 && c.sha256 == c.source_sha256;
      row.push_back(!c.sha256 ? "unreadable" : c.sha256->substr(0, kShownDigits) + (match ? "" : " MISMATCH"));
    }
    table.add_row(std::move(row));
  }
  table.print(stdout, width);
  for (const auto &s : document["skipped"]) {
    print_wrapped(
        "skipped " + terminal_safe(s["id"].get<std::string>()) + ": " + terminal_safe(s["reason"].get<std::string>()),
        width);
  }
  const nlohmann::json &phases = document["phases"];
  std::string timing = "open and validate " + duration_text(phases["open_seconds"].get<double>()) + ", place " +
                       duration_text(phases["place_seconds"].get<double>());
  if (!phases["verify_seconds"].is_null())
    timing += ", verify " + duration_text(phases["verify_seconds"].get<double>());
  print_wrapped(timing, width);
  // Mapped bytes cost no copy: a rate over them would mean nothing.
  const auto mapped = document["mapped_bytes"].get<std::uint64_t>();
  const auto copied = document["copied_bytes"].get<std::uint64_t>();
  std::string total = "total " + byte_size(document["total_bytes"].get<std::uint64_t>()) + ": ";
  if (mapped != 0) total += byte_size(mapped) + " mapped zero-copy";
  if (mapped != 0 && copied != 0) total += ", ";
  if (copied != 0 || mapped == 0) {
    char rate[32] = "";
    if (!document["gb_per_s"].is_null())
      std::snprintf(rate, sizeof rate, " at %.2f GB/s", document["gb_per_s"].get<double>());
    total += byte_size(copied) + " copied" + rate;
  }
  print_wrapped(total, width);
  if (document.contains("digests")) {
    const nlohmann::json &digests = document["digests"];
    std::uint64_t bytes = 0;
    for (const auto &d : digests["verified"]) bytes += d["bytes"].get<std::uint64_t>();
    // Counted by kind: a per-tensor manifest checks components, and an index file beside them.
    std::map<std::string, std::size_t> kinds;
    for (const auto &d : digests["verified"]) ++kinds[d["kind"].get<std::string>()];
    std::string what;
    for (const auto &[kind, n] : kinds) what += (what.empty() ? "" : " and ") + counted(n, kind);
    if (what.empty()) what = counted(0, "file");
    print_wrapped(
        "digests: " + what + " (" + byte_size(bytes) + ") match their published SHA-256" +
            (digests["verified"].empty() ? ""
                                         : " (from the " + digests["verified"][0]["source"].get<std::string>() + ")"),
        width);
    for (const auto &u : digests["unverifiable"]) {
      print_wrapped("not verifiable: " + terminal_safe(u["file"].get<std::string>()) + ": " +
                        terminal_safe(u["reason"].get<std::string>()),
                    width);
    }
  }
  const nlohmann::json &read = document["read"];
  std::string how = "strategy " + read["strategy"].get<std::string>() + " (" + read["reason"].get<std::string>() + ")";
  if (!read["reads"].is_null()) {
    const nlohmann::json &reads = read["reads"];
    how += "; " + reads["engine"].get<std::string>() + ", up to " +
           std::to_string(reads["queue_depth"].get<std::uint64_t>()) + " reads in flight";
    if (reads["direct_bytes"].get<std::uint64_t>() != 0)
      how += ", " + byte_size(reads["direct_bytes"].get<std::uint64_t>()) + " direct";
  }
  print_wrapped(terminal_safe(how), width);
  if (!read["reads"].is_null()) {
    for (const auto &f : read["reads"]["fallbacks"]) {
      print_wrapped("read buffered, not direct: " + terminal_safe(f["file"].get<std::string>()) + ": " +
                        terminal_safe(f["reason"].get<std::string>()),
                    width);
    }
  }
  if (document.contains("world_size")) {
    std::printf("rank %u of %u read %s\n", load.slice.rank.value_or(0), load.slice.world_size.value_or(0),
                byte_size(document["bytes_read"].get<std::uint64_t>()).c_str());
  }
}

int run_load(LoadArgs &load, const CommonOptions &options) {
  if (std::string problem = check_slice_args(load.slice); !problem.empty()) return print_usage_error(options, problem);
  if (std::string problem = check_signature_args(load.signature); !problem.empty()) {
    return print_usage_error(options, problem);
  }

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

  rootspan_load_options opts{};
  opts.struct_size = sizeof opts;
  opts.provider = rootspan_provider_choice_name(choice.get());
  opts.device = load.device;
  opts.strategy = load.strategy;
  opts.populate = load.populate || load.verify ? 1 : 0;
  opts.source_digests = load.verify ? 1 : 0;
  apply_checkpoint_args(load.checkpoint, opts);
  std::vector<rootspan_split_rule> split_rules;
  apply_slice_args(load.slice, split_rules, opts);
  opts.check_digests = load.check_digests || !load.digests_path.empty() ? 1 : 0;
  opts.digests_path = load.digests_path.empty() ? nullptr : load.digests_path.c_str();
  std::vector<const char *> chain;
  apply_signature_args(load.signature, chain, opts);
  const bool verified = opts.check_digests != 0 || opts.signature_path != nullptr;

  if (load.slice.world_size && *load.slice.world_size == 0) {
    // The library reads world size 0 as "no slicing"; asked for on the
    // command line it is a mistake, refused as the read plan refuses it.
    char *unused = nullptr;
    rootspan_error *plan_error = nullptr;
    if (rootspan_checkpoint_read_plan(load.checkpoint.path.c_str(), &opts, &unused, &plan_error) != ROOTSPAN_OK) {
      error.reset(plan_error);
      return print_error(options, error.get());
    }
    rootspan_string_free(unused);
  }

  // The callback is there even without a bar: Ctrl-C cancels through it.
  LoadProgress progress(!options.json && isatty(STDERR_FILENO) != 0);
  progress.attach(opts);
  const Clock::time_point start = Clock::now();
  rootspan_weights *raw = nullptr;
  rootspan_error *raw_error = nullptr;
  const rootspan_status status =
      rootspan_weights_load(context.get(), load.checkpoint.path.c_str(), &opts, &raw, &raw_error);
  const Clock::time_point placed = Clock::now();
  progress.finish();
  if (status != ROOTSPAN_OK) {
    error.reset(raw_error);
    if (status == ROOTSPAN_ERR_CANCELLED && progress.interrupted()) {
      // Cancelled by Ctrl-C, not by anything the user would call a callback.
      return print_program_error(options, kInterrupted, "Cancelled", "load",
                                 "interrupted (Ctrl-C)" +
                                     (progress.component().empty() ? std::string()
                                                                   : " while loading component \"" +
                                                                         terminal_safe(progress.component()) + "\"") +
                                     "; the load stopped and released every component it had placed");
    }
    return print_error(options, error.get());
  }
  const std::unique_ptr<rootspan_weights, WeightsDeleter> weights(raw);
  // What "auto" chose is said once the load is done: before, it would stand
  // above errors (a missing file) that have nothing to do with it.
  if (automatic && !options.json) {
    std::fprintf(stderr, "rootspan: auto: %s\n", rootspan_provider_choice_explanation(choice.get()));
  }

  std::uint64_t total = 0, mapped = 0;
  std::size_t count = 0;
  rootspan_weights_component_count(weights.get(), &count);
  std::vector<LoadedRow> components(count);
  for (std::size_t i = 0; i < count; ++i) {
    LoadedRow &row = components[i];
    row.info.struct_size = sizeof row.info;
    rootspan_weights_component(weights.get(), i, &row.info);
    rootspan_root_info root{};
    root.struct_size = sizeof root;
    rootspan_root_get_info(row.info.root, &root);
    row.key = root.key;
    std::size_t by_source = count;
    row.named_by_source = std::string_view(row.info.source_name) != row.info.id &&
                          rootspan_weights_find(weights.get(), row.info.source_name, &by_source) == ROOTSPAN_OK &&
                          by_source == i;
    total += row.info.byte_length;
    if (row.info.zero_copy != 0) mapped += row.info.byte_length;
  }

  // --verify: provider memory read back through the provider, against the
  // digests of the components' bytes in the files (source_digests: hashed by
  // the library once the load placed them, from the descriptors it opened,
  // so the checkpoint is opened once).
  int exit_status = kDone;
  std::string mismatches;
  std::optional<double> verify_seconds;
  if (load.verify) {
    for (std::size_t i = 0; i < count; ++i) {
      if (progress.interrupted()) {
        return print_program_error(options, kInterrupted, "Cancelled", "verify",
                                   "--verify: interrupted (Ctrl-C); the components were released");
      }
      LoadedRow &c = components[i];
      char source[65], held[65];
      rootspan_error *verify_error = nullptr;
      if (rootspan_weights_source_sha256(weights.get(), i, source, &verify_error) != ROOTSPAN_OK) {
        const ErrorPtr e(verify_error);
        return print_error(options, e.get());
      }
      c.source_sha256 = source;
      if (rootspan_weights_component_sha256(weights.get(), i, held, &verify_error) != ROOTSPAN_OK) {
        const ErrorPtr e(verify_error);
        exit_status = print_error(options, e.get());
        continue;
      }
      c.sha256 = held;
      if (*c.sha256 != *c.source_sha256) {
        mismatches += std::string(mismatches.empty() ? "" : "; ") + "component \"" + c.info.id +
                      "\": provider memory has sha256 " + *c.sha256 + ", the file's bytes have sha256 " +
                      *c.source_sha256;
      }
    }
    verify_seconds = seconds_between(placed, Clock::now());
  }

  nlohmann::json skipped = nlohmann::json::array();
  std::size_t skipped_count = 0;
  rootspan_weights_skipped_count(weights.get(), &skipped_count);
  for (std::size_t i = 0; i < skipped_count; ++i) {
    const char *id = nullptr;
    const char *reason = nullptr;
    rootspan_weights_skipped(weights.get(), i, &id, &reason);
    skipped.push_back({{"id", id}, {"reason", reason}});
  }
  std::uint64_t bytes_read = 0;
  rootspan_weights_bytes_read(weights.get(), &bytes_read);
  // Opening and validating ends when the first bytes are placed; the library
  // reports no finer phases (the first progress report comes after the first
  // component, or its first 64 MiB, is in place).
  const Clock::time_point first = count == 0 ? placed : progress.first_progress();
  const double open_seconds = seconds_between(start, first), place_seconds = seconds_between(first, placed);
  const std::uint64_t copied = total - mapped;
  nlohmann::json document = {
      {"provider", rootspan_weights_provider(weights.get())},
      {"device", load.device},
      {"skipped", skipped},
      {"total_bytes", total},
      {"mapped_bytes", mapped},
      {"copied_bytes", copied},
      {"bytes_read", bytes_read},
      {"seconds", seconds_between(start, placed)},
      {"phases",
       {{"open_seconds", open_seconds},
        {"place_seconds", place_seconds},
        {"verify_seconds", verify_seconds ? nlohmann::json(*verify_seconds) : nlohmann::json(nullptr)}}},
      {"gb_per_s", copied != 0 && place_seconds > 0 ? nlohmann::json(static_cast<double>(copied) / place_seconds / 1e9)
                                                    : nlohmann::json(nullptr)}};
  if (verified) {
    char *digests = nullptr;
    rootspan_error *digests_error = nullptr;
    if (rootspan_weights_digests(weights.get(), &digests, &digests_error) != ROOTSPAN_OK) {
      error.reset(digests_error);
      return print_error(options, error.get());
    }
    document["digests"] = nlohmann::json::parse(digests);
    rootspan_string_free(digests);
  }
  char *read_report = nullptr;
  rootspan_error *report_error = nullptr;
  if (rootspan_weights_read_report(weights.get(), &read_report, &report_error) != ROOTSPAN_OK) {
    error.reset(report_error);
    return print_error(options, error.get());
  }
  document["read"] = nlohmann::json::parse(read_report);
  rootspan_string_free(read_report);
  if (load.slice.world_size) {
    document["rank"] = load.slice.rank.value_or(0);
    document["world_size"] = *load.slice.world_size;
  }
  if (automatic) document["provider_choice"] = rootspan_provider_choice_explanation(choice.get());
  if (options.json) {
    nlohmann::json &rows = document["components"] = nlohmann::json::array();
    for (const LoadedRow &row : components) rows.push_back(component_json(row));
    print_json(document);
  } else {
    print_text(document, components, load);
  }
  if (!mismatches.empty()) {
    std::fflush(stdout);
    return print_program_error(options, kInvalidInput, "DigestMismatch", "verify",
                               "--verify: the loaded bytes differ from the checkpoint's: " + mismatches);
  }
  return exit_status;
}

// The --strategy names, as the C API numbers them.
const std::map<std::string, rootspan_load_strategy> kStrategies = {{"auto", ROOTSPAN_LOAD_AUTO},
                                                                   {"mmap", ROOTSPAN_LOAD_MMAP},
                                                                   {"read", ROOTSPAN_LOAD_READ},
                                                                   {"direct", ROOTSPAN_LOAD_DIRECT}};

CLI::Validator strategy_name() {
  return CLI::Validator(
      [](std::string &value) {
        return kStrategies.count(value) != 0 ? std::string()
                                             : "is auto, mmap, read or direct, not '" + terminal_safe(value) + "'";
      },
      "");
}

}  // namespace

Runner add_load_command(CLI::App &rootspan, CommonOptions &common) {
  CLI::App *app = rootspan.add_subcommand(
      "load",
      "load every component (or those --tensors selects) into provider memory; with --world, only rank R's slice");
  auto args = std::make_shared<LoadArgs>();
  add_checkpoint_options(*app, args->checkpoint);
  app->add_option("--provider", args->provider, "a provider by name, or auto: the highest priority with a device")
      ->type_name("NAME|auto")
      ->capture_default_str();
  app->add_option("--device", args->device, "the provider's device ordinal")->type_name("N")->capture_default_str();
  app->add_option_function<std::string>(
         "--strategy", [args](const std::string &value) { args->strategy = kStrategies.at(value); },
         "auto: chosen from the file system (said in the output); mmap: map the files, aligned single tensors "
         "zero-copy; read: read everything, many reads in flight, map nothing; direct: read with O_DIRECT, past "
         "the page cache, where the file system allows it")
      ->type_name("auto|mmap|read|direct")
      ->default_str("auto")
      ->check(strategy_name());
  app->add_flag("--populate", args->populate,
                "with mmap: read the mapped bytes in before the load returns, many reads in flight (--verify does)");
  app->add_flag("--verify", args->verify,
                "compare each component's SHA-256 read back from provider memory with the file's bytes (exit 3 on "
                "a mismatch)");
  app->add_flag(
      "--check-digests", args->check_digests,
      "hash each file the load reads, from where its bytes landed, and refuse the load (exit 3, DigestMismatch) "
      "unless its SHA-256 is "
      "the published one: a Hugging Face cache's blob name, or --digests");
  app->add_option("--digests", args->digests_path,
                  "a digest manifest written by `rootspan hash` to check against (implies --check-digests)")
      ->type_name("FILE")
      ->check(non_empty("a file"));
  add_signature_options(*app, args->signature);
  add_slice_options(*app, args->slice);
  add_common_options(*app, common);
  return [args, &common] { return run_load(*args, common); };
}

}  // namespace rootspan::cli
