// Subsets of a checkpoint (`rootspan load --tensors`): shell-style patterns
// over component ids, every pattern must match something, the components
// left out are simply gone, and a pattern without wildcards names what
// fnmatch(3) would.
#include <gtest/gtest.h>

#include <fnmatch.h>

#include <clocale>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "weights/schema/component_selection.hpp"

namespace rootspan::weights {
namespace {

using testing::FailsWith;

ComponentSchema schema_of(const std::vector<std::string> &ids) {
  ComponentSchema schema;
  schema.schema_version = "1.0.0";
  for (const std::string &id : ids) {
    ComponentSpec spec;
    spec.id = id;
    spec.sources = {id};
    schema.components.push_back(spec);
  }
  return schema;
}

std::vector<std::string> ids_of(const Result<ComponentSchema> &schema) {
  std::vector<std::string> ids;
  if (!schema) return {"error: " + schema.error()->message()};
  for (const ComponentSpec &c : schema.value().components) ids.push_back(c.id);
  return ids;
}

const std::vector<std::string> kIds = {"model.embed_tokens.weight", "model.layers.0.mlp.up",  "model.layers.0.attn/q",
                                       "model.layers.1.mlp.up",     "model.layers.10.mlp.up", "lm_head.weight"};

std::vector<std::string> select(std::vector<std::string> patterns) {
  return ids_of(select_components(schema_of(kIds), patterns));
}

TEST(ComponentSelection, NoPatternKeepsEverything) { EXPECT_EQ(select({}), kIds); }

TEST(ComponentSelection, GlobsCrossDotsAndSlashesAndKeepSchemaOrder) {
  EXPECT_EQ(select({"model.layers.*"}), (std::vector<std::string>{"model.layers.0.mlp.up", "model.layers.0.attn/q",
                                                                  "model.layers.1.mlp.up", "model.layers.10.mlp.up"}));
  // '*' crosses '/' (no FNM_PATHNAME).
  EXPECT_EQ(select({"*q"}), (std::vector<std::string>{"model.layers.0.attn/q"}));
  EXPECT_EQ(select({"model.layers.?.mlp.up"}),
            (std::vector<std::string>{"model.layers.0.mlp.up", "model.layers.1.mlp.up"}));
  EXPECT_EQ(select({"model.layers.[1-9]*.mlp.up"}),
            (std::vector<std::string>{"model.layers.1.mlp.up", "model.layers.10.mlp.up"}));
  // Patterns add up; a component two patterns match is kept once, in order.
  EXPECT_EQ(select({"lm_head.weight", "*embed*", "*.weight"}),
            (std::vector<std::string>{"model.embed_tokens.weight", "lm_head.weight"}));
  // A pattern without wildcards is an exact id; '\' quotes.
  EXPECT_EQ(select({"model.layers.0.mlp.up"}), (std::vector<std::string>{"model.layers.0.mlp.up"}));
  EXPECT_EQ(select({"model.layers.0.mlp.u\\p"}), (std::vector<std::string>{"model.layers.0.mlp.up"}));
}

// Each pattern against each name, as pattern_names and fnmatch(3) decide.
void expect_patterns_as_fnmatch(const std::vector<std::string> &patterns, const std::vector<std::string> &names) {
  for (const std::string &name : names) {
    ComponentSpec component;  // named by its id, or, a tensor whose name is not an id, loaded as tensor.<n>
    component.id = is_component_id(name) ? name : "tensor.0";
    component.sources = {name};
    for (const std::string &pattern : patterns) {
      EXPECT_EQ(pattern_names(pattern, component), ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0)
          << "pattern \"" << pattern << "\", name \"" << name << "\"";
    }
  }
}

// A pattern without wildcards is compared as the text it spells, not
// through fnmatch(3): on every pattern and name here, both decide alike, in
// the C locale (fnmatch compares bytes) and a UTF-8 one, as a Python process
// sets (wide characters).
TEST(ComponentSelection, APatternWithoutWildcardsNamesWhatFnmatchWouldName) {
  const std::vector<std::string> patterns = {"a*b",
                                             "a\\*b",
                                             "a?b",
                                             "a\\?b",
                                             "a[b",
                                             "a\\[b",
                                             "a]b",
                                             "a\\]b",
                                             "a\\",
                                             "a\\\\",
                                             "a b",
                                             "a\\ b",
                                             "",
                                             "\xc3\xa9 x",
                                             "\\\xc3\xa9 x",
                                             "model.layers.0.up",
                                             "model.layers.0.u\\p",
                                             "[a]b",
                                             "ab\\",
                                             std::string("a\0b", 3)};  // fnmatch reads up to the NUL
  const std::vector<std::string> names = {
      "a*b", "axb", "a?b", "a[b", "a]b", "a\\", "a b", "\xc3\xa9 x", "model.layers.0.up", "ab", "ab\\", "a\\*b", "a"};
  const std::string before = std::setlocale(LC_ALL, nullptr);
  for (const char *locale : {"C", "C.UTF-8"}) {
    if (std::setlocale(LC_ALL, locale) == nullptr) continue;  // not on this system
    SCOPED_TRACE(locale);
    expect_patterns_as_fnmatch(patterns, names);
  }
  std::setlocale(LC_ALL, before.c_str());
}

TEST(ComponentSelection, APatternThatMatchesNothingIsNotFoundNamingItAndSomeIds) {
  auto result = select_components(schema_of(kIds), std::vector<std::string>{"*embed*", "model.layer.*"});
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_NOT_FOUND,
                        {"select_components", "tensor pattern \"model.layer.*\" matches no component id",
                         "the 6 components include \"model.embed_tokens.weight\"", "\"lm_head.weight\""}));
  // Many ids: a few are shown, and how many more there are.
  std::vector<std::string> many;
  for (int i = 0; i < 20; ++i) many.push_back("t." + std::to_string(i));
  EXPECT_TRUE(FailsWith(select_components(schema_of(many), std::vector<std::string>{"x"}), ROOTSPAN_ERR_NOT_FOUND,
                        {"the 20 components include \"t.0\"", "\"t.7\" and 12 more"}));
  EXPECT_TRUE(FailsWith(select_components(schema_of({}), std::vector<std::string>{"x"}), ROOTSPAN_ERR_NOT_FOUND,
                        {"the 0 components include none"}));
  // The empty pattern matches no id (ids are never empty).
  EXPECT_TRUE(FailsWith(select_components(schema_of(kIds), std::vector<std::string>{""}), ROOTSPAN_ERR_NOT_FOUND,
                        {"tensor pattern \"\""}));
}

}  // namespace
}  // namespace rootspan::weights
