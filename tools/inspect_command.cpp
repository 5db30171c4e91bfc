// `rootspan inspect PATH`: a checkpoint's shards, tensors and the validation
// verdict (DESIGN 7).
#include <cstdio>

#include "command.hpp"
#include "rootspan/weights.h"

namespace rootspan::cli {

namespace {

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
  if (args.size() != 1 || (!args[0].empty() && args[0][0] == '-')) {
    return print_usage_error(options, "inspect takes one PATH (a checkpoint file or folder)" +
                                          (args.empty() ? std::string() : ", not '" + args[0] + "'"));
  }
  char *text = nullptr;
  rootspan_error *raw_error = nullptr;
  if (rootspan_checkpoint_inspect(args[0].c_str(), &text, &raw_error) != ROOTSPAN_OK) {
    ErrorPtr error(raw_error);
    return print_error(options, error.get());
  }
  const nlohmann::json document = nlohmann::json::parse(text);
  rootspan_string_free(text);
  if (options.json) {
    print_json(document);
    return kDone;
  }
  const bool gguf = document["format"] == "gguf";
  std::printf("%s: %s, %zu shard(s), %zu tensors, valid\n", args[0].c_str(),
              document["format"].get<std::string>().c_str(), document["shards"].size(), document["tensors"].size());
  for (const auto &shard : document["shards"]) {
    std::printf("  shard %s: %llu bytes, header %llu bytes\n", shard["file"].get<std::string>().c_str(),
                static_cast<unsigned long long>(shard["bytes"].get<std::uint64_t>()),
                static_cast<unsigned long long>(shard["header_bytes"].get<std::uint64_t>()));
  }
  for (const auto &[key, value] : document["metadata"].items()) {
    std::printf("  metadata %s = %s\n", key.c_str(), metadata_text(value).c_str());
  }
  std::printf("%-48s %-8s %-16s %-36s %12s %12s\n", "TENSOR", gguf ? "TYPE" : "DTYPE", "SHAPE", "FILE", "OFFSET",
              "BYTES");
  for (const auto &t : document["tensors"]) {
    std::printf("%-48s %-8s %-16s %-36s %12llu %12llu\n", t["name"].get<std::string>().c_str(),
                t[gguf ? "type" : "dtype"].get<std::string>().c_str(), t["shape"].dump().c_str(),
                t["file"].get<std::string>().c_str(), static_cast<unsigned long long>(t["offset"].get<std::uint64_t>()),
                static_cast<unsigned long long>(t["bytes"].get<std::uint64_t>()));
  }
  for (const auto &note : document["notes"]) std::printf("note: %s\n", note.get<std::string>().c_str());
  return kDone;
}

}  // namespace rootspan::cli
