// `rootspan plan PATH --rank R --world W --split PATTERN=DIM ...`: the read
// plan one rank of a tensor-parallel load follows — for each component, the
// byte ranges it reads from which file and where each lands — made without
// reading tensor data. Also the --rank/--world/--split options `load` shares.
#include <cstdio>

#include "command.hpp"
#include "rootspan/weights.h"
#include "terminal_text.hpp"

namespace rootspan::cli {

namespace {

// A count or index that fits 32 bits, written in decimal digits only.
bool parse_u32(const std::string &text, std::uint32_t &out) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  out = static_cast<std::uint32_t>(std::stoul(text));
  return true;
}

}  // namespace

std::string take_slice_option(const std::string &option, const std::string *value, SliceArgs &out) {
  if (value == nullptr) return option + " needs a value";
  if (option == "--rank") {
    if (!parse_u32(*value, out.rank)) return "--rank needs a rank number, not '" + *value + "'";
  } else if (option == "--world") {
    if (!parse_u32(*value, out.world_size)) return "--world needs a world size, not '" + *value + "'";
    out.world_given = true;
  } else {
    // PATTERN=DIM; the last '=' separates them, DIM a dimension or -1 / replicate.
    const std::size_t eq = value->rfind('=');
    if (eq == std::string::npos || eq == 0) return "--split needs PATTERN=DIM, not '" + *value + "'";
    const std::string dim = value->substr(eq + 1);
    std::uint32_t d = 0;
    if (dim == "-1" || dim == "replicate") {
      out.rules.push_back({value->substr(0, eq), -1});
    } else if (parse_u32(dim, d)) {
      out.rules.push_back({value->substr(0, eq), static_cast<std::int32_t>(d)});
    } else {
      return "--split " + *value + ": DIM is a dimension (0, 1, ...) or -1 / replicate, not '" + dim + "'";
    }
  }
  out.given = true;
  return "";
}

bool is_slice_option(const std::string &option) {
  return option == "--rank" || option == "--world" || option == "--split";
}

std::string check_slice_args(const SliceArgs &slice) {
  if (slice.given && !slice.world_given) return "--rank and --split need --world W";
  return "";
}

void apply_slice_args(const SliceArgs &slice, std::vector<rootspan_split_rule> &storage,
                      rootspan_load_options &options) {
  storage.clear();
  for (const auto &[pattern, dimension] : slice.rules) {
    storage.push_back({sizeof(rootspan_split_rule), pattern.c_str(), dimension});
  }
  options.rank = slice.rank;
  options.world_size = slice.world_size;
  options.split_rules = storage.empty() ? nullptr : storage.data();
  options.split_rule_count = storage.size();
}

int run_plan(std::vector<std::string> args) {
  CommonOptions options;
  if (!take_common_options(args, options)) return kUsage;
  std::string path, schema, revision;
  std::vector<std::string> tensors;
  SliceArgs slice;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    const std::string *value = i + 1 < args.size() ? &args[i + 1] : nullptr;
    if (is_slice_option(a)) {
      if (value != nullptr) ++i;
      if (std::string problem = take_slice_option(a, value, slice); !problem.empty()) {
        return print_usage_error(options, problem);
      }
    } else if (a == "--schema" || a == "--tensors" || a == "--revision") {
      if (value == nullptr) return print_usage_error(options, a + " needs a value");
      ++i;
      if (a == "--schema") schema = *value;
      if (a == "--tensors") tensors.push_back(*value);
      if (a == "--revision") revision = *value;
    } else if (!a.empty() && a[0] == '-') {
      return print_usage_error(options, "unknown option " + a);
    } else if (path.empty()) {
      path = a;
    } else {
      return print_usage_error(options, "plan takes one PATH; also got '" + a + "'");
    }
  }
  if (path.empty()) return print_usage_error(options, "plan needs a PATH (a checkpoint file or folder)");
  if (!slice.given) return print_usage_error(options, "plan needs --world W (and --rank R, --split PATTERN=DIM)");
  if (std::string problem = check_slice_args(slice); !problem.empty()) return print_usage_error(options, problem);

  rootspan_load_options opts{};
  opts.struct_size = sizeof opts;
  opts.schema_path = schema.empty() ? nullptr : schema.c_str();
  std::vector<const char *> patterns;
  for (const std::string &pattern : tensors) patterns.push_back(pattern.c_str());
  opts.tensors = patterns.data();
  opts.tensor_count = patterns.size();
  opts.revision = revision.empty() ? nullptr : revision.c_str();
  std::vector<rootspan_split_rule> rules;
  apply_slice_args(slice, rules, opts);

  char *json = nullptr;
  rootspan_error *raw_error = nullptr;
  if (rootspan_checkpoint_read_plan(path.c_str(), &opts, &json, &raw_error) != ROOTSPAN_OK) {
    const ErrorPtr error(raw_error);
    return print_error(options, error.get());
  }
  const nlohmann::json plan = nlohmann::json::parse(json);
  rootspan_string_free(json);
  if (options.json) {
    print_json(plan);
    return kDone;
  }
  std::printf("rank %u of %u reads %llu bytes\n", plan["rank"].get<unsigned>(), plan["world_size"].get<unsigned>(),
              static_cast<unsigned long long>(plan["bytes"].get<std::uint64_t>()));
  std::printf("%-40s %-12s %-16s %-16s %12s %6s\n", "COMPONENT", "SPLIT", "FULL", "SLICE", "BYTES", "READS");
  for (const auto &c : plan["components"]) {
    const int dim = c["split_dimension"].get<int>();
    const std::string split =
        dim < 0 ? (c["rule"].is_null() ? "replicated*" : "replicated") : "dim " + std::to_string(dim);
    std::printf("%-40s %-12s %-16s %-16s %12llu %6zu\n", terminal_safe(c["id"].get<std::string>()).c_str(),
                split.c_str(), c["full_dimensions"].dump().c_str(), c["dimensions"].dump().c_str(),
                static_cast<unsigned long long>(c["bytes"].get<std::uint64_t>()), c["reads"].size());
  }
  std::printf("* matched no --split rule: every rank reads all of it\n");
  return kDone;
}

}  // namespace rootspan::cli
