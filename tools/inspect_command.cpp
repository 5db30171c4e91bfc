// `rootspan inspect PATH`: a checkpoint's shards, tensors and the validation
// verdict, and with --schema the verdict on a schema too, loading nothing
// (docs/cli.md).
#include <cstdio>
#include <optional>

#include "command.hpp"
#include "rootspan/weights.h"
#include "terminal_text.hpp"

namespace rootspan::cli {

namespace {

struct InspectArgs {
  std::string path;
  std::optional<std::string> schema;    // --schema FILE
  std::optional<std::string> revision;  // --revision REV (a Hugging Face cache repository)
};

// Returns an empty string when the arguments are good, else what is wrong.
std::string parse(const std::vector<std::string> &args, InspectArgs &out) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (a == "--schema" || a == "--revision") {
      if (i + 1 == args.size()) return a + " needs a value";
      const std::string &v = args[++i];
      if (a == "--schema") out.schema = v;
      if (a == "--revision") {
        if (v.empty()) return "--revision needs a branch, tag or commit, not ''";
        out.revision = v;
      }
    } else if (!a.empty() && a[0] == '-') {
      return "unknown option " + a;
    } else if (out.path.empty()) {
      out.path = a;
    } else {
      return "inspect takes one PATH; also got '" + a + "'";
    }
  }
  return out.path.empty() ? "inspect needs a PATH (a checkpoint file, folder, index file or Hugging Face cache "
                            "repository)"
                          : "";
}

void print_schema(const nlohmann::json &schema) {
  std::printf("schema %s: %zu component(s) would load, %zu skipped\n",
              terminal_safe(schema["path"].get<std::string>()).c_str(), schema["components"].size(),
              schema["skipped"].size());
  std::printf("  %-40s %-14s %12s %8s\n", "COMPONENT", "ROLE", "BYTES", "SEGMENTS");
  for (const auto &c : schema["components"]) {
    std::printf("  %-40s %-14s %12llu %8llu\n", terminal_safe(c["id"].get<std::string>()).c_str(),
                c["role"].get<std::string>().c_str(), static_cast<unsigned long long>(c["bytes"].get<std::uint64_t>()),
                static_cast<unsigned long long>(c["segments"].get<std::uint64_t>()));
  }
  for (const auto &s : schema["skipped"]) {
    std::printf("  skipped %s: %s\n", terminal_safe(s["id"].get<std::string>()).c_str(),
                terminal_safe(s["reason"].get<std::string>()).c_str());
  }
}

// safetensors metadata is a string; GGUF metadata a typed value, or an array
// summarized by its element type, length and first elements.
std::string metadata_text(const nlohmann::json &value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.value("type", "") == "array") {
    return "array of " + std::to_string(value["length"].get<std::uint64_t>()) + " " +
           value["element_type"].get<std::string>() + ", first " + value["first"].dump();
  }
  return value["type"].get<std::string>() + " " + value["value"].dump();
}

}  // namespace

int run_inspect(std::vector<std::string> args) {
  CommonOptions options;
  if (!take_common_options(args, options)) return kUsage;
  InspectArgs inspect;
  if (const std::string problem = parse(args, inspect); !problem.empty()) {
    return print_usage_error(options, problem);
  }
  rootspan_inspect_options opts{};
  opts.struct_size = sizeof opts;
  opts.schema_path = inspect.schema ? inspect.schema->c_str() : nullptr;
  opts.revision = inspect.revision ? inspect.revision->c_str() : nullptr;
  char *text = nullptr;
  rootspan_error *raw_error = nullptr;
  if (rootspan_checkpoint_inspect_with_options(inspect.path.c_str(), &opts, &text, &raw_error) != ROOTSPAN_OK) {
    ErrorPtr error(raw_error);
    return print_error(options, error.get());
  }
  const nlohmann::json document = nlohmann::json::parse(text);
  rootspan_string_free(text);
  if (options.json) {
    print_json(document);
    return kDone;
  }
  // Every string below comes from the files: escaped for the terminal.
  const auto shown = [](const nlohmann::json &value) { return terminal_safe(value.get<std::string>()); };
  const bool gguf = document["format"] == "gguf";
  std::printf("%s: %s, %zu shard(s), %zu tensors, valid\n", terminal_safe(inspect.path).c_str(),
              document["format"].get<std::string>().c_str(), document["shards"].size(), document["tensors"].size());
  if (document["folder"] != inspect.path) std::printf("  folder %s\n", shown(document["folder"]).c_str());
  for (const auto &shard : document["shards"]) {
    std::printf("  shard %s: %llu bytes, header %llu bytes\n", shown(shard["file"]).c_str(),
                static_cast<unsigned long long>(shard["bytes"].get<std::uint64_t>()),
                static_cast<unsigned long long>(shard["header_bytes"].get<std::uint64_t>()));
  }
  for (const auto &[key, value] : document["metadata"].items()) {
    std::printf("  metadata %s = %s\n", terminal_safe(key).c_str(), terminal_safe(metadata_text(value)).c_str());
  }
  std::printf("%-48s %-8s %-16s %-36s %12s %12s\n", "TENSOR", gguf ? "TYPE" : "DTYPE", "SHAPE", "FILE", "OFFSET",
              "BYTES");
  for (const auto &t : document["tensors"]) {
    std::printf("%-48s %-8s %-16s %-36s %12llu %12llu\n", shown(t["name"]).c_str(),
                shown(t[gguf ? "type" : "dtype"]).c_str(), t["shape"].dump().c_str(), shown(t["file"]).c_str(),
                static_cast<unsigned long long>(t["offset"].get<std::uint64_t>()),
                static_cast<unsigned long long>(t["bytes"].get<std::uint64_t>()));
  }
  for (const auto &note : document["notes"]) std::printf("note: %s\n", shown(note).c_str());
  if (document.contains("schema")) print_schema(document["schema"]);
  return kDone;
}

}  // namespace rootspan::cli
