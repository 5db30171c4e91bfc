#include "weights/strict_json.hpp"

#include <cstdio>
#include <new>
#include <set>
#include <utility>
#include <vector>

#include "weights/describe.hpp"
#include "weights/utf8.hpp"

namespace rootspan::weights {

namespace {

// Thrown from the parser callback to stop parsing at the first violation.
struct StrictJsonViolation {
  std::string cause;
};

struct ObjectFrame {
  std::set<std::string, std::less<>> keys;
  std::string last_key;
};

// "the top-level object" or "the object at "a"."b"" (keys of the enclosing
// objects; arrays in between are not numbered).
std::string object_path(const std::vector<ObjectFrame> &objects) {
  if (objects.size() <= 1) return "the top-level object";
  std::string path = "the object at ";
  for (std::size_t i = 0; i + 1 < objects.size(); ++i) {
    if (i != 0) path += '.';
    path += quoted_text(objects[i].last_key);
  }
  return path;
}

}  // namespace

Result<nlohmann::json> parse_strict_json(std::string_view text, rootspan_status code, std::string operation,
                                         std::string_view subject, const JsonLimits &limits) {
  const std::string prefix = quoted_text(subject) + ": ";
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") {
    return make_error(code, std::move(operation), prefix + "JSON starts with a UTF-8 byte-order mark");
  }
  if (auto bad = first_invalid_utf8(text)) {
    return make_error(
        code, std::move(operation), prefix + "not valid UTF-8: byte 0x" + [&] {
          char buffer[4];
          std::snprintf(buffer, sizeof buffer, "%02X", static_cast<unsigned char>(text[*bad]));
          return std::string(buffer);
        }() + " at offset " + std::to_string(*bad));
  }

  // nlohmann takes a NUL byte for the end of input and would ignore whatever
  // follows it; JSON text never holds a raw NUL (in strings it is escaped).
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    return make_error(code, std::move(operation), prefix + "NUL byte at offset " + std::to_string(nul));
  }

  // Objects being parsed, innermost last; `depth` counts arrays too.
  std::vector<ObjectFrame> objects;
  std::size_t depth = 0;
  // Elements so far of each array being parsed, innermost last; `in_array`
  // says whether the innermost container is an array.
  std::vector<std::size_t> arrays;
  std::vector<bool> in_array;
  const std::string why = limits.why.empty() ? std::string() : " (" + limits.why + ")";
  auto callback = [&](int, nlohmann::json::parse_event_t event, nlohmann::json &parsed) -> bool {
    using Event = nlohmann::json::parse_event_t;
    const bool element = event == Event::value || event == Event::object_start || event == Event::array_start;
    if (element && !in_array.empty() && in_array.back() && ++arrays.back() > limits.max_array_elements) {
      throw StrictJsonViolation{"an array in " + object_path(objects) + " has more than " +
                                std::to_string(limits.max_array_elements) + " elements" + why};
    }
    if (event == Event::object_start || event == Event::array_start) in_array.push_back(event == Event::array_start);
    if (event == Event::array_start) arrays.push_back(0);
    if (event == Event::object_end || event == Event::array_end) in_array.pop_back();
    if (event == Event::array_end) arrays.pop_back();
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        if (++depth > kMaxJsonDepth) {
          throw StrictJsonViolation{"JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
        }
        if (event == Event::object_start) objects.emplace_back();
        break;
      case Event::object_end:
        --depth;
        objects.pop_back();
        break;
      case Event::array_end:
        --depth;
        break;
      case Event::key: {
        ObjectFrame &frame = objects.back();
        const auto &key = parsed.get_ref<const std::string &>();
        if (!frame.keys.insert(key).second) {
          throw StrictJsonViolation{"duplicate key " + quoted_text(key) + " in " + object_path(objects)};
        }
        if (frame.keys.size() > limits.max_object_members) {
          throw StrictJsonViolation{object_path(objects) + " has more than " +
                                    std::to_string(limits.max_object_members) + " members" + why};
        }
        frame.last_key = key;
        break;
      }
      case Event::value:
        break;
    }
    return true;
  };

  try {
    return nlohmann::json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true,
                                 /*ignore_comments=*/false);
  } catch (const StrictJsonViolation &violation) {
    return make_error(code, std::move(operation), prefix + violation.cause);
  } catch (const nlohmann::json::exception &error) {
    return make_error(code, std::move(operation), prefix + "not valid JSON: " + error.what());
  } catch (const std::bad_alloc &) {
    return make_error(ROOTSPAN_ERR_OUT_OF_MEMORY, std::move(operation), prefix + "out of memory parsing JSON");
  }
}

}  // namespace rootspan::weights
