#include "core/text/strict_json.hpp"

#include <cstdio>
#include <new>
#include <utility>
#include <vector>

#include "core/text/quoting.hpp"
#include "core/text/utf8.hpp"

namespace rootspan {

namespace {

using json = nlohmann::json;

// Builds the document from nlohmann's SAX events, refusing a key its object
// already holds and nesting past kMaxJsonDepth. Each key is one insert into
// its object's map (logarithmic, no rescan of a parent when a child closes,
// unlike nlohmann's callback parser), so parsing stays linear-ish in the
// text even for hostile headers of many small objects.
class StrictDomBuilder {
 public:
  StrictDomBuilder(json &root, const JsonLimits &limits)
      : root_(root), limits_(limits), why_(limits.why.empty() ? std::string() : " (" + limits.why + ")") {}

  // Why parsing stopped, when the handler stopped it.
  const std::string &violation() const { return violation_; }
  // nlohmann's own syntax error, when there was one.
  const std::string &syntax_error() const { return syntax_error_; }

  bool null() { return room() && place(json(nullptr)); }
  bool boolean(bool value) { return room() && place(json(value)); }
  bool number_integer(json::number_integer_t value) { return room() && place(json(value)); }
  bool number_unsigned(json::number_unsigned_t value) { return room() && place(json(value)); }
  bool number_float(json::number_float_t value, const json::string_t &) { return room() && place(json(value)); }
  bool string(json::string_t &value) { return room() && place(json(std::move(value))); }
  bool binary(json::binary_t &value) { return room() && place(json(json::binary_t(std::move(value)))); }

  bool start_object(std::size_t) {
    if (!room() || !enter()) return false;
    json *object = place_container(json::value_t::object);
    open_.push_back({object, {}});
    return true;
  }
  bool key(json::string_t &key) {
    Open &object = open_.back();
    auto &members = object.value->get_ref<json::object_t &>();
    // Hinted at the end: writers emit keys sorted, and then each insert costs
    // one comparison instead of a descent through the whole map.
    const std::size_t before = members.size();
    auto slot = members.try_emplace(members.end(), key);
    if (members.size() == before) {
      violation_ = "duplicate key " + quoted_text(key) + " in " + object_path();
      return false;
    }
    if (object.value->size() > limits_.max_object_members) {
      violation_ = object_path() + " has more than " + std::to_string(limits_.max_object_members) + " members" + why_;
      return false;
    }
    object.key = std::move(key);
    pending_ = &slot->second;
    return true;
  }
  bool end_object() { return leave(); }

  bool start_array(std::size_t) {
    if (!room() || !enter()) return false;
    json *array = place_container(json::value_t::array);
    open_.push_back({array, {}});
    return true;
  }
  bool end_array() { return leave(); }

  bool parse_error(std::size_t, const std::string &, const json::exception &error) {
    syntax_error_ = error.what();
    return false;
  }

 private:
  // An open object or array, and for an object the key being read.
  struct Open {
    json *value;
    std::string key;
  };

  bool enter() {
    if (open_.size() + 1 > kMaxJsonDepth) {
      violation_ = "JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels";
      return false;
    }
    return true;
  }
  // False, with the violation, when the open array is already as long as
  // the limits allow: checked before an element is added, so a hostile
  // array never grows past the limit.
  bool room() {
    if (open_.empty() || !open_.back().value->is_array()) return true;
    if (open_.back().value->size() < limits_.max_array_elements) return true;
    violation_ = array_path() + " has more than " + std::to_string(limits_.max_array_elements) + " elements" + why_;
    return false;
  }

  // "the top-level array" or "the array at "t"."shape"".
  std::string array_path() const {
    std::string path;
    for (std::size_t i = 0; i + 1 < open_.size(); ++i) {
      if (!open_[i].value->is_object()) continue;
      path += (path.empty() ? "" : ".") + quoted_text(open_[i].key);
    }
    return path.empty() ? "the top-level array" : "the array at " + path;
  }

  bool leave() {
    open_.pop_back();
    return true;
  }

  // Where a value goes: the document itself, the slot of the key just read,
  // or the end of the open array.
  json *target() {
    if (open_.empty()) return &root_;
    if (open_.back().value->is_object()) return pending_;
    auto &array = open_.back().value->get_ref<json::array_t &>();
    array.emplace_back();
    return &array.back();
  }
  bool place(json &&value) {
    *target() = std::move(value);
    return true;
  }
  json *place_container(json::value_t type) {
    json *slot = target();
    *slot = json(type);
    return slot;
  }

  // "the top-level object" or "the object at "a"."b"" (keys of the enclosing
  // objects; arrays in between are not numbered).
  std::string object_path() const {
    std::vector<const std::string *> keys;
    for (std::size_t i = 0; i + 1 < open_.size(); ++i) {
      if (open_[i].value->is_object()) keys.push_back(&open_[i].key);
    }
    if (keys.empty()) return "the top-level object";
    std::string path = "the object at ";
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (i != 0) path += '.';
      path += quoted_text(*keys[i]);
    }
    return path;
  }

  json &root_;
  const JsonLimits &limits_;
  const std::string why_;
  std::vector<Open> open_;
  json *pending_ = nullptr;
  std::string violation_;
  std::string syntax_error_;
};

}  // namespace

Result<void> check_json_text(std::string_view text, rootspan_status code, const std::string &operation,
                             std::string_view subject) {
  const std::string prefix = quoted_text(subject) + ": ";
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") {
    return make_error(code, operation, prefix + "JSON starts with a UTF-8 byte-order mark");
  }
  if (auto bad = first_invalid_utf8(text)) {
    return make_error(
        code, operation, prefix + "not valid UTF-8: byte 0x" + [&] {
          char buffer[4];
          std::snprintf(buffer, sizeof buffer, "%02X", static_cast<unsigned char>(text[*bad]));
          return std::string(buffer);
        }() + " at offset " + std::to_string(*bad));
  }
  // nlohmann takes a NUL byte for the end of input and would ignore whatever
  // follows it; JSON text never holds a raw NUL (in strings it is escaped).
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    return make_error(code, operation, prefix + "NUL byte at offset " + std::to_string(nul));
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<nlohmann::json> parse_strict_json(std::string_view text, rootspan_status code, std::string operation,
                                         std::string_view subject, const JsonLimits &limits) {
  if (auto checked = check_json_text(text, code, operation, subject); !checked) return checked.error();
  const std::string prefix = quoted_text(subject) + ": ";
  json document;
  StrictDomBuilder builder(document, limits);
  try {
    if (json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json, /*strict=*/true,
                        /*ignore_comments=*/false)) {
      return document;
    }
  } catch (const std::bad_alloc &) {
    return make_error(ROOTSPAN_ERR_OUT_OF_MEMORY, std::move(operation), prefix + "out of memory parsing JSON");
  }
  if (!builder.violation().empty()) return make_error(code, std::move(operation), prefix + builder.violation());
  // nlohmann quotes the token it stopped in, which can be a whole long string: keep its start.
  std::string why = builder.syntax_error();
  constexpr std::string_view kLastRead = "; last read: '";
  constexpr std::size_t kShown = 40;
  const std::size_t at = why.find(kLastRead);
  const std::size_t from = at + kLastRead.size();
  const std::size_t to = why.rfind('\'');
  if (at != std::string::npos && to != std::string::npos && to > from + kShown) {
    std::size_t cut = from + kShown;
    while (cut > from && (static_cast<unsigned char>(why[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    why = why.substr(0, cut) + "..." + why.substr(to);
  }
  return make_error(code, std::move(operation), prefix + "not valid JSON: " + why);
}

}  // namespace rootspan
