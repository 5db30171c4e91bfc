// `rootspan inspect PATH`: a checkpoint's shards, tensors and the validation
// verdict, and with --schema the verdict on a schema too, loading nothing
// (docs/cli.md).
#include <cstdio>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>

#include "byte_size.hpp"
#include "command.hpp"
#include "rootspan/weights.h"
#include "terminal_text.hpp"
#include "text_table.hpp"

namespace rootspan::cli {

namespace {

struct InspectArgs {
  std::string path;
  std::optional<std::string> schema;    // --schema FILE
  std::optional<std::string> revision;  // --revision REV (a Hugging Face cache repository)
};

void print_schema(const nlohmann::json &schema) {
  const std::size_t width = output_width();
  print_wrapped("schema " + terminal_safe(schema["path"].get<std::string>()) + ": " +
                    counted(schema["components"].size(), "component") + " would load, " +
                    std::to_string(schema["skipped"].size()) + " skipped",
                width);
  TextTable table({{"COMPONENT", false, true}, {"ROLE"}, {"SIZE", true}, {"SEGMENTS", true}});
  for (const auto &c : schema["components"]) {
    table.add_row({terminal_safe(c["id"].get<std::string>()), c["role"].get<std::string>(),
                   byte_size(c["bytes"].get<std::uint64_t>()), std::to_string(c["segments"].get<std::uint64_t>())});
  }
  table.print(stdout, width);
  for (const auto &s : schema["skipped"]) {
    print_wrapped(
        "skipped " + terminal_safe(s["id"].get<std::string>()) + ": " + terminal_safe(s["reason"].get<std::string>()),
        width);
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

int run_inspect(const InspectArgs &inspect, const CommonOptions &options) {
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
  const std::size_t width = output_width();
  print_wrapped(terminal_safe(inspect.path) + ": " + document["format"].get<std::string>() + ", " +
                    counted(document["shards"].size(), "shard") + ", " + counted(document["tensors"].size(), "tensor") +
                    ", valid",
                width);
  if (document["folder"] != inspect.path) print_wrapped("  folder " + shown(document["folder"]), width);
  for (const auto &shard : document["shards"]) {
    print_wrapped("  shard " + shown(shard["file"]) + ": " + byte_size(shard["bytes"].get<std::uint64_t>()) +
                      ", header " + byte_size(shard["header_bytes"].get<std::uint64_t>()),
                  width);
  }
  for (const auto &[key, value] : document["metadata"].items()) {
    const std::string line = "  metadata " + terminal_safe(key) + " = " + terminal_safe(metadata_text(value));
    std::printf("%s\n", (width == 0 ? line : fit_width(line, width)).c_str());
  }
  TextTable table({{"TENSOR", false, true},
                   {gguf ? "TYPE" : "DTYPE"},
                   {"SHAPE"},
                   {"FILE", false, true},
                   {"OFFSET", true},
                   {"SIZE", true}});
  for (const auto &t : document["tensors"]) {
    table.add_row({shown(t["name"]), shown(t[gguf ? "type" : "dtype"]), t["shape"].dump(), shown(t["file"]),
                   std::to_string(t["offset"].get<std::uint64_t>()), byte_size(t["bytes"].get<std::uint64_t>())});
  }
  table.print(stdout, width);
  for (const auto &note : document["notes"]) print_wrapped("note: " + shown(note), width);
  if (document.contains("schema")) print_schema(document["schema"]);
  return kDone;
}

}  // namespace

Runner add_inspect_command(CLI::App &rootspan, CommonOptions &common) {
  CLI::App *app = rootspan.add_subcommand(
      "inspect", "validate a checkpoint and show its shards, metadata and tensors, reading only headers");
  auto args = std::make_shared<InspectArgs>();
  app->add_option("PATH", args->path,
                  "a checkpoint: .safetensors or .gguf file, folder, index file, or Hugging Face cache repository")
      ->required();
  app->add_option("--schema", args->schema, "also resolve this weight schema against the checkpoint")
      ->type_name("FILE");
  app->add_option("--revision", args->revision,
                  "the ref or snapshot of a Hugging Face cache repository (default refs/main)")
      ->type_name("REV")
      ->check(non_empty("a branch, tag or commit"));
  add_common_options(*app, common);
  return [args, &common] { return run_inspect(*args, common); };
}

}  // namespace rootspan::cli
