#include "weights/digests/digest_manifest.hpp"

#include <nlohmann/json.hpp>

#include "core/sha256.hpp"
#include "core/text/quoting.hpp"
#include "core/text/strict_json.hpp"
#include "weights/files/input_file.hpp"
#include "weights/formats/limits.hpp"

namespace rootspan::weights {

namespace {

constexpr const char *kOperation = "read_digests";

class Reader {
 public:
  explicit Reader(std::string subject) : subject_(std::move(subject)) {}

  Diagnostic fail(const std::string &where, const std::string &cause) const {
    return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation, subject_ + ": " + where + " " + cause);
  }

  Result<const nlohmann::json *> member(const nlohmann::json &object, const char *key, nlohmann::json::value_t type,
                                        const std::string &where) const {
    const auto found = object.find(key);
    if (found == object.end()) return fail(where, std::string("has no \"") + key + "\"");
    if (found->type() != type && !(type == nlohmann::json::value_t::number_unsigned && found->is_number_unsigned())) {
      return fail(where + "." + key,
                  std::string("is a JSON ") + found->type_name() + ", expected " + nlohmann::json(type).type_name());
    }
    return &*found;
  }

  Result<DigestEntry> entry(const nlohmann::json &value, const std::string &where) const {
    if (!value.is_object()) return fail(where, std::string("is a JSON ") + value.type_name() + ", not an object");
    DigestEntry out;
    auto bytes = value.find("bytes");
    if (bytes == value.end() || !bytes->is_number_unsigned()) {
      return fail(where, "needs \"bytes\", a count of bytes");
    }
    out.bytes = bytes->get<std::uint64_t>();
    auto sha = value.find("sha256");
    if (sha == value.end() || !sha->is_string() || !is_sha256_hex(sha->get_ref<const std::string &>())) {
      return fail(where, "needs \"sha256\", 64 lowercase hex digits" +
                             (sha != value.end() ? ", not " + quoted_text(sha->dump()) : std::string()));
    }
    out.sha256 = sha->get<std::string>();
    return out;
  }

  Result<std::map<std::string, DigestEntry>> entries(const nlohmann::json &object, const std::string &where) const {
    if (!object.is_object()) return fail(where, std::string("is a JSON ") + object.type_name() + ", not an object");
    std::map<std::string, DigestEntry> out;
    for (const auto &[name, value] : object.items()) {
      auto e = entry(value, where + "[" + quoted_text(name) + "]");
      if (!e) return e.error();
      out.emplace(name, std::move(e).value());
    }
    return out;
  }

 private:
  std::string subject_;
};

nlohmann::json entries_json(const std::map<std::string, DigestEntry> &entries) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto &[name, e] : entries) out[name] = {{"bytes", e.bytes}, {"sha256", e.sha256}};
  return out;
}

}  // namespace

bool ComponentDigests::made_for(const ShardSpec *spec) const {
  if (spec == nullptr) return world_size == 1 && rules.empty();
  if (spec->world_size != world_size || spec->convention != convention || spec->rules.size() != rules.size()) {
    return false;
  }
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (spec->rules[i].pattern != rules[i].pattern || spec->rules[i].dimension != rules[i].dimension) return false;
  }
  return true;
}

Result<DigestManifest> read_digest_manifest(const std::filesystem::path &path) {
  auto text = read_whole_file(path, kMaxManifestBytes, ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation);
  if (!text) return text.error();
  const std::string subject = "digest manifest " + quoted_text(path.string());
  auto parsed = parse_strict_json(text.value(), ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation, path.string());
  if (!parsed) return parsed.error();
  const nlohmann::json &doc = parsed.value();
  const Reader reader(subject);
  if (!doc.is_object()) return reader.fail("the document", std::string("is a JSON ") + doc.type_name());
  using T = nlohmann::json::value_t;
  auto version = reader.member(doc, "format_version", T::number_unsigned, "the document");
  if (!version) return version.error();
  if (*version.value() != 1) return reader.fail("format_version", "is " + version.value()->dump() + ", expected 1");
  auto algorithm = reader.member(doc, "algorithm", T::string, "the document");
  if (!algorithm) return algorithm.error();
  if (*algorithm.value() != "sha256") {
    return reader.fail("algorithm", "is " + algorithm.value()->dump() + ", expected \"sha256\"");
  }
  auto files = reader.member(doc, "files", T::object, "the document");
  if (!files) return files.error();
  DigestManifest manifest;
  auto file_entries = reader.entries(*files.value(), "files");
  if (!file_entries) return file_entries.error();
  manifest.files = std::move(file_entries).value();

  if (const auto components = doc.find("components"); components != doc.end()) {
    if (!components->is_object()) return reader.fail("components", "is not an object");
    ComponentDigests digests;
    auto world = reader.member(*components, "world_size", T::number_unsigned, "components");
    if (!world) return world.error();
    const std::uint64_t w = world.value()->get<std::uint64_t>();
    if (w == 0 || w > UINT32_MAX) return reader.fail("components.world_size", "is " + std::to_string(w));
    digests.world_size = static_cast<std::uint32_t>(w);
    auto convention = reader.member(*components, "split_convention", T::string, "components");
    if (!convention) return convention.error();
    if (*convention.value() == "chunk") {
      digests.convention = SplitConvention::kChunk;
    } else if (*convention.value() != "tensor_split") {
      return reader.fail("components.split_convention",
                         "is " + convention.value()->dump() + ", expected \"tensor_split\" or \"chunk\"");
    }
    auto rules = reader.member(*components, "rules", T::array, "components");
    if (!rules) return rules.error();
    for (const nlohmann::json &rule : *rules.value()) {
      const auto pattern = rule.is_object() ? rule.find("pattern") : rule.end();
      const auto dimension = rule.is_object() ? rule.find("dimension") : rule.end();
      if (!rule.is_object() || pattern == rule.end() || !pattern->is_string() || dimension == rule.end() ||
          !dimension->is_number_integer() || dimension->get<std::int64_t>() < -1 ||
          dimension->get<std::int64_t>() > INT32_MAX) {
        return reader.fail("components.rules", "holds " + quoted_text(rule.dump()) +
                                                   ", expected {\"pattern\": glob, \"dimension\": -1 or more}");
      }
      digests.rules.push_back({pattern->get<std::string>(), static_cast<int>(dimension->get<std::int64_t>())});
    }
    auto ranks = reader.member(*components, "ranks", T::array, "components");
    if (!ranks) return ranks.error();
    if (ranks.value()->size() != w) {
      return reader.fail("components.ranks", "holds " + std::to_string(ranks.value()->size()) +
                                                 " ranks, expected one per rank of world_size " + std::to_string(w));
    }
    for (std::size_t r = 0; r < ranks.value()->size(); ++r) {
      auto rank = reader.entries((*ranks.value())[r], "components.ranks[" + std::to_string(r) + "]");
      if (!rank) return rank.error();
      digests.ranks.push_back(std::move(rank).value());
    }
    manifest.components = std::move(digests);
  }
  return manifest;
}

std::string digest_manifest_json(const DigestManifest &manifest) {
  nlohmann::json doc = {{"format_version", 1}, {"algorithm", "sha256"}, {"files", entries_json(manifest.files)}};
  if (manifest.components) {
    const ComponentDigests &c = *manifest.components;
    nlohmann::json rules = nlohmann::json::array();
    for (const SplitRule &rule : c.rules) rules.push_back({{"pattern", rule.pattern}, {"dimension", rule.dimension}});
    nlohmann::json ranks = nlohmann::json::array();
    for (const auto &rank : c.ranks) ranks.push_back(entries_json(rank));
    doc["components"] = {{"world_size", c.world_size},
                         {"split_convention", split_convention_name(c.convention)},
                         {"rules", std::move(rules)},
                         {"ranks", std::move(ranks)}};
  }
  return doc.dump(2);
}

}  // namespace rootspan::weights
