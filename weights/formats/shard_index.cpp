#include "weights/formats/shard_index.hpp"

#include <set>
#include <utility>

#include "core/text/quoting.hpp"
#include "core/text/strict_json.hpp"
#include "weights/files/portable_path.hpp"

namespace rootspan::weights {

namespace {

constexpr const char *kOperation = "open_checkpoint";

}  // namespace

Result<ShardIndex> parse_shard_index(std::string_view json_text, std::string_view index_name) {
  const auto fail = [&](const std::string &cause) {
    return make_error(ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, quoted_text(index_name) + ": " + cause);
  };
  auto parsed = parse_strict_json(json_text, ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, index_name);
  if (!parsed) return parsed.error();
  const nlohmann::json &root = parsed.value();
  if (!root.is_object()) return fail(std::string("index is a JSON ") + root.type_name() + ", not an object");

  ShardIndex index;
  if (const auto metadata = root.find("metadata"); metadata != root.end()) {
    if (!metadata->is_object())
      return fail(std::string("metadata is a JSON ") + metadata->type_name() + ", not an object");
    if (const auto total = metadata->find("total_size"); total != metadata->end() && total->is_number_unsigned()) {
      index.total_size = total->get<std::uint64_t>();
    }
  }

  const auto weight_map = root.find("weight_map");
  if (weight_map == root.end()) return fail("missing \"weight_map\"");
  if (!weight_map->is_object())
    return fail(std::string("weight_map is a JSON ") + weight_map->type_name() + ", not an object");
  std::set<std::string> files;
  for (const auto &[name, file] : weight_map->items()) {
    if (!file.is_string()) {
      return fail("weight_map entry for tensor " + quoted_text(name) + " is a JSON " + file.type_name() +
                  ", not a file name");
    }
    const auto &file_name = file.get_ref<const std::string &>();
    auto portable = check_portable_name(file_name, ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, index_name);
    if (!portable) {
      Diagnostic error = portable.error();
      error.cause += " (weight_map entry for tensor " + quoted_text(name) + ")";
      return error;
    }
    files.insert(file_name);
    index.weight_map.emplace(name, file_name);
  }
  index.files.assign(files.begin(), files.end());
  return index;
}

}  // namespace rootspan::weights
