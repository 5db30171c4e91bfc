#include "weights/schema/component_selection.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "core/text/quoting.hpp"

namespace rootspan::weights {

namespace {

// How many ids an error lists before "and N more".
constexpr std::size_t kIdsShown = 8;

// A pattern ready to match. One that holds no '*', '?' or '[' (each of its
// backslashes quoting a character) names exactly the text it spells, and is
// compared as such: fnmatch(3), in the UTF-8 locale a Python process sets,
// turns both strings into wide characters first, which over 10,000 names
// took a tenth of the load of one of them.
class Glob {
 public:
  explicit Glob(std::string &&) = delete;  // it keeps a reference to the pattern
  explicit Glob(const std::string &pattern) : pattern_(pattern) {
    std::string text;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
      char c = pattern[i];
      if (c == '*' || c == '?' || c == '[') return;
      if (c == '\\') {
        if (++i == pattern.size()) return;  // a lone backslash at the end: fnmatch says what it means
        c = pattern[i];
      }
      if (c == '\0') return;  // fnmatch reads up to a NUL only, quoted or not
      text += c;
    }
    literal_ = std::move(text);
  }
  bool matches(const std::string &name) const {
    return literal_ ? name == *literal_ : ::fnmatch(pattern_.c_str(), name.c_str(), 0) == 0;
  }

 private:
  const std::string &pattern_;
  std::optional<std::string> literal_;  // the text the pattern spells, where it has no wildcard
};

std::vector<Glob> globs_of(std::span<const std::string> patterns) { return {patterns.begin(), patterns.end()}; }

bool glob_names(const Glob &glob, const ComponentSpec &component) {
  if (glob.matches(component.id)) return true;
  const auto &sources = component.sources;
  return sources.size() == 1 && !is_component_id(sources[0]) && glob.matches(sources[0]);
}

std::string some_ids(const ComponentSchema &schema) {
  std::vector<std::string> ids;  // an error's path only
  for (const auto &component : schema.components) ids.push_back(component.id);
  const std::string out = quoted_list(ids, kIdsShown);
  return out.empty() ? "none" : out;
}

}  // namespace

bool pattern_names(const std::string &pattern, const ComponentSpec &component) {
  return glob_names(Glob(pattern), component);
}

Result<ComponentSchema> select_components(ComponentSchema schema, std::span<const std::string> patterns) {
  if (patterns.empty()) return schema;
  const std::vector<Glob> globs = globs_of(patterns);
  std::vector<bool> used(patterns.size(), false);
  std::vector<bool> keep(schema.components.size(), false);
  for (std::size_t c = 0; c < schema.components.size(); ++c) {
    for (std::size_t p = 0; p < globs.size(); ++p) {
      if (glob_names(globs[p], schema.components[c])) used[p] = keep[c] = true;
    }
  }
  for (std::size_t p = 0; p < patterns.size(); ++p) {
    if (!used[p]) {
      return make_error(ROOTSPAN_ERR_NOT_FOUND, "select_components",
                        "tensor pattern " + quoted_text(patterns[p]) + " matches no component id or tensor name; the " +
                            std::to_string(schema.components.size()) + " components include " + some_ids(schema));
    }
  }
  ComponentSchema selected;
  selected.schema_version = std::move(schema.schema_version);
  for (std::size_t c = 0; c < schema.components.size(); ++c) {
    if (!keep[c]) continue;
    selected.components.push_back(std::move(schema.components[c]));
    if (const TensorRef *found = schema.found_source(c)) selected.found_sources.push_back(*found);
  }
  return selected;
}

std::optional<ComponentSchema> select_default_components(const Checkpoint &checkpoint,
                                                         std::span<const std::string> patterns) {
  const std::vector<Glob> globs = globs_of(patterns);
  std::vector<bool> used(patterns.size(), false);
  std::vector<TensorRef> kept;  // in name order, as the checkpoint keeps them
  for (const TensorRef &tensor : checkpoint.tensors_by_name()) {
    const std::string &name = tensor.tensor->name;
    if (!is_component_id(name)) return std::nullopt;
    bool keep = false;
    for (std::size_t p = 0; p < globs.size(); ++p) {
      if (globs[p].matches(name)) used[p] = keep = true;
    }
    if (keep) kept.push_back(tensor);
  }
  if (std::find(used.begin(), used.end(), false) != used.end()) return std::nullopt;
  ComponentSchema schema;
  schema.schema_version = kDefaultSchemaVersion;
  schema.components.reserve(kept.size());
  for (const TensorRef &tensor : kept) schema.components.push_back(default_component(tensor, tensor.tensor->name));
  schema.found_sources = std::move(kept);
  return schema;
}

}  // namespace rootspan::weights
