#include "weights/digests/digest_manifest.hpp"

#include <array>
#include <new>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "core/sha256.hpp"
#include "core/text/quoting.hpp"
#include "core/text/strict_json.hpp"
#include "weights/files/input_file.hpp"
#include "weights/formats/limits.hpp"

namespace rootspan::weights {

namespace {

using json = nlohmann::json;

constexpr const char *kOperation = "read_digests";

// Where the reader is: every object and array a manifest may hold, and
// nothing else. A value anywhere else is refused where it begins.
enum class Place { kTop, kFiles, kFile, kComponents, kRules, kRule, kRanks, kRank, kComponent, kShape };

// The members of the objects whose keys the format fixes, by Place (the
// maps, files and a rank, take any key). A member's index is its bit in
// Frame::seen.
struct Members {
  Place place;
  std::array<std::string_view, 4> names;
};
constexpr std::array<Members, 5> kMembers = {{
    {Place::kTop, {"format_version", "algorithm", "files", "components"}},
    {Place::kFile, {"bytes", "sha256", "header_sha256", ""}},
    {Place::kComponents, {"world_size", "split_convention", "rules", "ranks"}},
    {Place::kRule, {"pattern", "dimension", "", ""}},
    {Place::kComponent, {"bytes", "sha256", "dtype", "shape"}},
}};

const Members *members_of(Place place) {
  for (const Members &m : kMembers) {
    if (m.place == place) return &m;
  }
  return nullptr;
}

// "format_version", "algorithm", "files" and "components", quoted.
std::string listed(const Members &m) {
  std::string out;
  for (std::string_view name : m.names) {
    if (!name.empty()) out += (out.empty() ? "" : ", ") + quoted_text(name);
  }
  return out;
}

// What a JSON value is, for "..., not <what>".
enum class Kind { kNull, kBoolean, kUnsigned, kNegative, kFloat, kString, kArray, kObject };

std::string kind_name(Kind kind) {
  switch (kind) {
    case Kind::kNull:
      return "null";
    case Kind::kBoolean:
      return "a boolean";
    case Kind::kUnsigned:
      return "a number";
    case Kind::kNegative:
      return "a negative number";
    case Kind::kFloat:
      return "a number with a fraction or an exponent (or past 2^64)";
    case Kind::kString:
      return "a string";
    case Kind::kArray:
      return "an array";
    case Kind::kObject:
      return "an object";
  }
  return "a value";
}

// A scalar as the parser gave it.
struct Scalar {
  Kind kind;
  std::uint64_t unsigned_value = 0;
  std::int64_t signed_value = 0;
  std::string *text = nullptr;  // for kString: may be moved from
};

bool is_dtype_name(std::string_view name) {
  for (const auto &row : dtype_detail::kTable) {
    if (row.dtype != ROOTSPAN_DTYPE_NONE && name == row.name) return true;
  }
  return false;
}

// Reads a manifest from nlohmann's SAX events straight into a
// DigestManifest: no document tree is built, each value is checked where it
// is read and then stored in its place or refused, so memory grows with
// what the manifest holds, never with what a hostile text could make a tree
// of. nlohmann's own strict parser refuses bad syntax and anything after
// the document; this refuses a key twice in one object, a member the format
// does not have, and a value of the wrong kind. Nesting is bounded by the
// format itself (six levels).
class ManifestReader {
 public:
  DigestManifest &manifest() { return manifest_; }
  // Why parsing stopped, when this reader stopped it.
  const std::string &violation() const { return violation_; }
  // nlohmann's own syntax error, when there was one.
  const std::string &syntax_error() const { return syntax_error_; }

  bool null() { return scalar({Kind::kNull}); }
  bool boolean(bool) { return scalar({Kind::kBoolean}); }
  bool number_integer(json::number_integer_t value) {
    // nlohmann gives every non-negative integer as number_unsigned.
    return scalar({Kind::kNegative, 0, value});
  }
  bool number_unsigned(json::number_unsigned_t value) { return scalar({Kind::kUnsigned, value}); }
  bool number_float(json::number_float_t, const json::string_t &) { return scalar({Kind::kFloat}); }
  bool string(json::string_t &value) { return scalar({Kind::kString, 0, 0, &value}); }
  bool binary(json::binary_t &) { return fail(here(), "holds binary data"); }

  bool start_object(std::size_t) { return open(Kind::kObject); }
  bool start_array(std::size_t) { return open(Kind::kArray); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t &key) {
    Frame &frame = stack_.back();
    switch (frame.place) {
      case Place::kFiles: {
        auto &files = manifest_.files;
        const std::size_t before = files.size();
        // Hinted at the end: a manifest's keys are sorted, and then each
        // insert costs one comparison.
        const auto slot = files.try_emplace(files.end(), std::move(key));
        if (files.size() == before) return fail("files", "holds " + quoted_text(slot->first) + " twice");
        file_ = &*slot;
        return true;
      }
      case Place::kRank: {
        auto &rank = manifest_.components->ranks.back();
        const std::size_t before = rank.size();
        const auto slot = rank.try_emplace(rank.end(), std::move(key));
        if (rank.size() == before) return fail(path(Place::kRank), "holds " + quoted_text(slot->first) + " twice");
        component_ = &*slot;
        return true;
      }
      default:
        break;
    }
    const Members &m = *members_of(frame.place);
    for (std::size_t i = 0; i < m.names.size(); ++i) {
      if (m.names[i].empty() || m.names[i] != key) continue;
      if ((frame.seen & (1u << i)) != 0) return fail(path(frame.place), "holds " + quoted_text(key) + " twice");
      frame.seen |= 1u << i;
      member_ = m.names[i];
      return true;
    }
    return fail(path(frame.place), "has a member " + quoted_text(key) +
                                       ", which a digest manifest does not have there (it has " + listed(m) + ")");
  }

  bool parse_error(std::size_t, const std::string &, const json::exception &error) {
    syntax_error_ = error.what();
    return false;
  }

 private:
  struct Frame {
    Place place;
    unsigned seen = 0;  // the fixed members read so far, a bit each
  };

  bool fail(const std::string &where, const std::string &cause) {
    violation_ = where + " " + cause;
    return false;
  }

  // Where a value begins: the member just named, or the array's next element.
  std::string here() const {
    if (stack_.empty()) return "the document";
    switch (stack_.back().place) {
      case Place::kFiles:
        return path(Place::kFile);
      case Place::kRank:
        return path(Place::kComponent);
      case Place::kRules:
        return path(Place::kRules) + "[" + std::to_string(manifest_.components->rules.size()) + "]";
      case Place::kRanks:
        return path(Place::kRanks) + "[" + std::to_string(manifest_.components->ranks.size()) + "]";
      case Place::kShape:
        return path(Place::kShape);
      default:
        return member_path(stack_.back().place, member_);
    }
  }

  std::string path(Place place) const {
    switch (place) {
      case Place::kTop:
        return "the document";
      case Place::kFiles:
        return "files";
      case Place::kFile:
        return "files[" + quoted_text(file_->first) + "]";
      case Place::kComponents:
        return "components";
      case Place::kRules:
        return "components.rules";
      case Place::kRule:
        return "components.rules[" + std::to_string(manifest_.components->rules.size() - 1) + "]";
      case Place::kRanks:
        return "components.ranks";
      case Place::kRank:
        return "components.ranks[" + std::to_string(manifest_.components->ranks.size() - 1) + "]";
      case Place::kComponent:
        return path(Place::kRank) + "[" + quoted_text(component_->first) + "]";
      case Place::kShape:
        return path(Place::kComponent) + ".shape";
    }
    return "the document";
  }
  std::string member_path(Place place, std::string_view member) const {
    return place == Place::kTop ? std::string(member) : path(place) + "." + std::string(member);
  }

  // "<object> needs "<member>", <what it is>[, not <what was there>]".
  bool needs(Place place, std::string_view member, const std::string &what, const std::string &found = {}) {
    return fail(path(place), "needs " + quoted_text(member) + ", " + what + (found.empty() ? "" : ", not " + found));
  }
  static std::string found(const Scalar &value) {
    if (value.kind == Kind::kString) return quoted_text(*value.text);
    if (value.kind == Kind::kNegative) return std::to_string(value.signed_value);
    return kind_name(value.kind);
  }

  bool push(Place place) {
    stack_.push_back({place});
    return true;
  }

  bool open(Kind kind) {
    const bool object = kind == Kind::kObject;
    if (stack_.empty()) {
      if (!object) return fail("the document", "is " + kind_name(kind) + ", expected an object");
      return push(Place::kTop);
    }
    const Place place = stack_.back().place;
    switch (place) {
      case Place::kTop:
        if (member_ == "files") {
          if (!object) return fail("files", "is " + kind_name(kind) + ", expected an object: file name -> digest");
          return push(Place::kFiles);
        }
        if (member_ == "components") {
          if (!object) return fail("components", "is " + kind_name(kind) + ", expected an object");
          manifest_.components.emplace();
          return push(Place::kComponents);
        }
        break;
      case Place::kFiles:
        if (!object) return fail(path(Place::kFile), "is " + kind_name(kind) + ", expected an object");
        return push(Place::kFile);
      case Place::kComponents:
        if (member_ == "rules") {
          if (object) return fail("components.rules", "is an object, expected an array");
          return push(Place::kRules);
        }
        if (member_ == "ranks") {
          if (object) return fail("components.ranks", "is an object, expected an array: one object a rank");
          return push(Place::kRanks);
        }
        break;
      case Place::kRules:
        if (!object) break;
        manifest_.components->rules.emplace_back();
        return push(Place::kRule);
      case Place::kRanks:
        if (!object) break;
        if (manifest_.components->ranks.size() >= kMaxManifestRanks) {
          return fail("components.ranks", "holds more than " + std::to_string(kMaxManifestRanks) + " ranks");
        }
        manifest_.components->ranks.emplace_back();
        return push(Place::kRank);
      case Place::kRank:
        if (!object) return fail(path(Place::kComponent), "is " + kind_name(kind) + ", expected an object");
        return push(Place::kComponent);
      case Place::kComponent:
        if (member_ == "shape") {
          if (object) return fail(member_path(place, member_), "is an object, expected an array of dimensions");
          component_->second.shape.clear();
          return push(Place::kShape);
        }
        break;
      default:
        break;
    }
    return wrong(kind);
  }

  // A value of the wrong kind where it begins.
  bool wrong(Kind kind) {
    const Place place = stack_.back().place;
    switch (place) {
      case Place::kRules:
        return fail(here(), "is " + kind_name(kind) + ", expected {\"pattern\": glob, \"dimension\": -1 or more}");
      case Place::kRanks:
        return fail(here(), "is " + kind_name(kind) + ", expected an object: component id -> digest");
      case Place::kFiles:
      case Place::kRank:
        return fail(here(), "is " + kind_name(kind) + ", expected an object");
      case Place::kShape:
        return fail(here(), "holds " + kind_name(kind) + ", not a dimension (a count)");
      case Place::kFile:
      case Place::kComponent:
        if (member_ == "bytes") return needs(place, member_, "a count of bytes", kind_name(kind));
        if (member_ == "dtype") return needs(place, member_, "an element type name", kind_name(kind));
        if (member_ == "shape") return needs(place, member_, "an array of dimensions", kind_name(kind));
        return needs(place, member_, "64 lowercase hex digits", kind_name(kind));
      case Place::kRule:
        if (member_ == "pattern") return needs(place, member_, "a glob", kind_name(kind));
        return needs(place, member_, "-1 (replicated) or a dimension", kind_name(kind));
      default:
        return fail(here(), "is " + kind_name(kind) + ", expected " + expected_at_top());
    }
  }
  std::string expected_at_top() const {
    if (member_ == "format_version" || member_ == "world_size") return "a count";
    if (member_ == "files" || member_ == "components") return "an object";
    if (member_ == "rules" || member_ == "ranks") return "an array";
    return "a string";
  }

  bool scalar(const Scalar &value) {
    if (stack_.empty()) return fail("the document", "is " + kind_name(value.kind) + ", expected an object");
    Frame &frame = stack_.back();
    switch (frame.place) {
      case Place::kTop:
        if (member_ == "format_version") {
          if (value.kind != Kind::kUnsigned) return wrong(value.kind);
          if (value.unsigned_value != 1 && value.unsigned_value != kDigestManifestVersion) {
            return fail("format_version", "is " + std::to_string(value.unsigned_value) + ", expected " +
                                              std::to_string(kDigestManifestVersion) +
                                              " (or 1, for a manifest without per-component digests)");
          }
          manifest_.format_version = static_cast<std::uint32_t>(value.unsigned_value);
          return true;
        }
        if (member_ == "algorithm") {
          if (value.kind != Kind::kString) return wrong(value.kind);
          if (*value.text != "sha256")
            return fail("algorithm", "is " + quoted_text(*value.text) + ", expected \"sha256\"");
          return true;
        }
        return wrong(value.kind);
      case Place::kFile:
        if (member_ == "bytes") {
          if (value.kind != Kind::kUnsigned) return wrong(value.kind);
          file_->second.bytes = value.unsigned_value;
          return true;
        }
        if (!sha256(value, Place::kFile)) return false;
        if (member_ == "sha256") {
          file_->second.sha256 = std::move(*value.text);
        } else {
          if (first_v2_member_.empty()) first_v2_member_ = member_path(Place::kFile, member_);
          file_->second.header_sha256 = std::move(*value.text);
        }
        return true;
      case Place::kComponents:
        if (member_ == "world_size") {
          if (value.kind != Kind::kUnsigned || value.unsigned_value == 0 || value.unsigned_value > UINT32_MAX) {
            return fail("components.world_size",
                        "is " + (value.kind == Kind::kUnsigned ? std::to_string(value.unsigned_value) : found(value)) +
                            ", expected a count of ranks from 1 to " + std::to_string(UINT32_MAX));
          }
          manifest_.components->world_size = static_cast<std::uint32_t>(value.unsigned_value);
          return true;
        }
        if (member_ == "split_convention") {
          if (value.kind == Kind::kString && *value.text == "chunk") {
            manifest_.components->convention = SplitConvention::kChunk;
          } else if (value.kind != Kind::kString || *value.text != "tensor_split") {
            return fail("components.split_convention",
                        "is " + found(value) + ", expected \"tensor_split\" or \"chunk\"");
          }
          return true;
        }
        return wrong(value.kind);
      case Place::kRule: {
        SplitRule &rule = manifest_.components->rules.back();
        if (member_ == "pattern") {
          if (value.kind != Kind::kString) return wrong(value.kind);
          rule.pattern = std::move(*value.text);
          return true;
        }
        const bool in_range = (value.kind == Kind::kUnsigned && value.unsigned_value <= INT32_MAX) ||
                              (value.kind == Kind::kNegative && value.signed_value == SplitRule::kReplicate);
        if (!in_range) {
          return needs(Place::kRule, member_, "-1 (replicated) or a dimension",
                       value.kind == Kind::kUnsigned ? std::to_string(value.unsigned_value) : found(value));
        }
        rule.dimension = value.kind == Kind::kUnsigned ? static_cast<int>(value.unsigned_value) : SplitRule::kReplicate;
        return true;
      }
      case Place::kComponent:
        if (member_ == "bytes") {
          if (value.kind != Kind::kUnsigned) return wrong(value.kind);
          component_->second.bytes = value.unsigned_value;
          return true;
        }
        if (member_ == "dtype") {
          if (value.kind != Kind::kString || !is_dtype_name(*value.text)) {
            return needs(Place::kComponent, member_, "an element type name (\"F32\", \"BF16\", ...)", found(value));
          }
          component_->second.dtype = std::move(*value.text);
          return true;
        }
        if (member_ == "sha256") {
          if (!sha256(value, Place::kComponent)) return false;
          component_->second.sha256 = std::move(*value.text);
          return true;
        }
        return wrong(value.kind);
      case Place::kShape: {
        auto &shape = component_->second.shape;
        if (value.kind != Kind::kUnsigned) return wrong(value.kind);
        if (shape.size() >= kMaxTensorRank) {
          return fail(path(Place::kShape), "has more than " + std::to_string(kMaxTensorRank) + " dimensions");
        }
        shape.push_back(value.unsigned_value);
        return true;
      }
      default:
        return wrong(value.kind);
    }
  }

  bool sha256(const Scalar &value, Place place) {
    if (value.kind == Kind::kString && is_sha256_hex(*value.text)) return true;
    return needs(place, member_, "64 lowercase hex digits", found(value));
  }

  // The end of an object or array: what it needs, checked.
  bool close() {
    const Frame frame = stack_.back();
    stack_.pop_back();
    const auto has = [&](std::size_t bit) { return (frame.seen & (1u << bit)) != 0; };
    switch (frame.place) {
      case Place::kFile:
        // Restored for messages: the member of the parent was this entry.
        if (!has(0)) return needs(Place::kFile, "bytes", "a count of bytes");
        if (!has(1)) return needs(Place::kFile, "sha256", "64 lowercase hex digits");
        return true;
      case Place::kRule:
        if (!has(0)) return needs(Place::kRule, "pattern", "a glob");
        if (!has(1)) return needs(Place::kRule, "dimension", "-1 (replicated) or a dimension");
        return true;
      case Place::kComponent:
        if (!has(0)) return needs(Place::kComponent, "bytes", "a count of bytes");
        if (!has(1)) return needs(Place::kComponent, "sha256", "64 lowercase hex digits");
        // Format version 1 has neither: said at the end, once the version is known.
        if (first_incomplete_.empty() && (!has(2) || !has(3))) {
          first_incomplete_ = path(Place::kComponent) + " has no " + (has(2) ? "\"shape\"" : "\"dtype\"");
        }
        return true;
      case Place::kComponents: {
        const Members &m = *members_of(Place::kComponents);
        for (std::size_t i = 0; i < m.names.size(); ++i) {
          if (!has(i)) return fail("components", "has no " + quoted_text(m.names[i]));
        }
        const ComponentDigests &c = *manifest_.components;
        if (c.ranks.size() != c.world_size) {
          return fail("components.ranks", "holds " + std::to_string(c.ranks.size()) +
                                              " ranks, expected one per rank of world_size " +
                                              std::to_string(c.world_size));
        }
        return true;
      }
      case Place::kTop:
        return finish(frame);
      default:
        return true;
    }
  }

  // The whole document read: what only the end can tell.
  bool finish(const Frame &top) {
    const Members &m = *members_of(Place::kTop);
    for (std::size_t i = 0; i < 3; ++i) {
      if ((top.seen & (1u << i)) == 0) return fail("the document", "has no " + quoted_text(m.names[i]));
    }
    if (manifest_.format_version == 1) {
      if (manifest_.components) {
        return fail("format_version",
                    "is 1, whose per-component digests bind neither each component's dtype and shape nor the "
                    "files' headers, so a load cannot trust them: write the manifest again with `rootspan hash "
                    "--per-tensor` (format_version " +
                        std::to_string(kDigestManifestVersion) + ")");
      }
      if (!first_v2_member_.empty()) {
        return fail(first_v2_member_, "is a member of format_version " + std::to_string(kDigestManifestVersion) +
                                          ", but the manifest says format_version 1");
      }
    }
    if (!first_incomplete_.empty()) {
      violation_ = first_incomplete_ + ": format_version " + std::to_string(kDigestManifestVersion) +
                   " gives each component its \"dtype\" and \"shape\"";
      return false;
    }
    return true;
  }

  DigestManifest manifest_;
  std::vector<Frame> stack_;
  std::string_view member_;  // the fixed member just named (a name in kMembers)
  std::pair<const std::string, FileDigest> *file_ = nullptr;
  std::pair<const std::string, ComponentDigest> *component_ = nullptr;
  std::string first_v2_member_;   // where a member version 1 lacks was read first
  std::string first_incomplete_;  // the first component entry without its dtype or shape
  std::string violation_;
  std::string syntax_error_;
};

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

Result<DigestManifest> parse_digest_manifest(std::string_view text, const std::string &name) {
  const std::string subject = "digest manifest " + quoted_text(name);
  // No byte-order mark, valid UTF-8, no NUL byte: its cause is "<name quoted>: <why>", said here after "digest
  // manifest" as every other refusal is.
  if (auto checked = check_json_text(text, ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation, name); !checked) {
    Diagnostic error = checked.error();
    error.cause = "digest manifest " + error.cause;
    return error;
  }
  ManifestReader reader;
  try {
    if (json::sax_parse(text.begin(), text.end(), &reader, json::input_format_t::json, /*strict=*/true,
                        /*ignore_comments=*/false)) {
      return std::move(reader.manifest());
    }
  } catch (const std::bad_alloc &) {
    return make_error(ROOTSPAN_ERR_OUT_OF_MEMORY, kOperation, subject + ": out of memory reading it");
  }
  if (!reader.violation().empty()) {
    return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation, subject + ": " + reader.violation());
  }
  return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation, subject + ": not valid JSON: " + reader.syntax_error());
}

Result<DigestManifest> read_digest_manifest(const std::filesystem::path &path) {
  auto text = read_whole_file(path, kMaxManifestBytes, ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation);
  if (!text) return text.error();
  return parse_digest_manifest(text.value(), path.string());
}

std::string digest_manifest_json(const DigestManifest &manifest) {
  json files = json::object();
  for (const auto &[name, e] : manifest.files) {
    json entry = {{"bytes", e.bytes}, {"sha256", e.sha256}};
    if (!e.header_sha256.empty()) entry["header_sha256"] = e.header_sha256;
    files[name] = std::move(entry);
  }
  json doc = {{"format_version", kDigestManifestVersion}, {"algorithm", "sha256"}, {"files", std::move(files)}};
  if (manifest.components) {
    const ComponentDigests &c = *manifest.components;
    json rules = json::array();
    for (const SplitRule &rule : c.rules) rules.push_back({{"pattern", rule.pattern}, {"dimension", rule.dimension}});
    json ranks = json::array();
    for (const auto &rank : c.ranks) {
      json entries = json::object();
      for (const auto &[id, e] : rank) {
        entries[id] = {{"bytes", e.bytes}, {"sha256", e.sha256}, {"dtype", e.dtype}, {"shape", e.shape}};
      }
      ranks.push_back(std::move(entries));
    }
    doc["components"] = {{"world_size", c.world_size},
                         {"split_convention", split_convention_name(c.convention)},
                         {"rules", std::move(rules)},
                         {"ranks", std::move(ranks)}};
  }
  return doc.dump(2);
}

}  // namespace rootspan::weights
