// docs/weight-schema.md: the component schema, its physical byte counts, its JSON Schema
// and example, and the default schema.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "test_support.hpp"
#include "weights/checkpoints/checkpoint.hpp"
#include "weights/schema/component_selection.hpp"
#include "weights/schema/schema.hpp"

#ifndef ROOTSPAN_SOURCE_ROOT
#error "ROOTSPAN_SOURCE_ROOT must name the source tree (tests/weights/meson.build sets it)"
#endif

namespace rootspan::weights {
namespace {

using nlohmann::json;
using testing::FailsWith;
using testing::HasValues;
using testing::TempDir;

// A valid one-component schema; `edit` changes its JSON before parsing.
json base_schema() {
  return json::parse(R"({
    "schema_version": "1.0.0",
    "components": [{
      "id": "layers.0.mlp.gate_up",
      "role": "packed_values",
      "sources": ["gate", "up"],
      "dimensions": [2, 64, 32],
      "encoding": {"dense": {"element_type": "F32"}},
      "required": true
    }]
  })");
}

Result<ComponentSchema> parse(const json &schema) { return parse_component_schema(schema.dump(), "s.json"); }

Result<ComponentSchema> with_component(const std::function<void(json &)> &edit) {
  json schema = base_schema();
  edit(schema["components"][0]);
  return parse(schema);
}

ComponentSpec dense(std::vector<std::uint64_t> dims, const char *dtype) {
  ComponentSpec spec;
  spec.id = "c";
  spec.sources = {"t"};
  spec.dimensions = std::move(dims);
  spec.encoding = DenseEncoding{*safetensors_dtype(std::string_view(dtype))};
  return spec;
}

ComponentSpec block(std::vector<std::uint64_t> dims, std::uint64_t values, std::uint64_t bytes) {
  ComponentSpec spec;
  spec.id = "q";
  spec.sources = {"t"};
  spec.dimensions = std::move(dims);
  spec.encoding = BlockQuantizedEncoding{"quantization.gguf.q4-k", values, bytes};
  return spec;
}

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(ComponentSchema, ParsesAValidSchema) {
  auto schema = parse(base_schema());
  ASSERT_TRUE(schema) << schema.error()->message();
  ASSERT_EQ(schema.value().components.size(), 1u);
  const ComponentSpec &c = schema.value().components[0];
  EXPECT_EQ(c.id, "layers.0.mlp.gate_up");
  EXPECT_EQ(c.role, ComponentRole::kPackedValues);
  EXPECT_EQ(c.sources, (std::vector<std::string>{"gate", "up"}));
  EXPECT_EQ(c.dimensions, (std::vector<std::uint64_t>{2, 64, 32}));
  EXPECT_EQ(std::get<DenseEncoding>(c.encoding).element_type.dtype, ROOTSPAN_DTYPE_F32);
  EXPECT_TRUE(c.required);
  EXPECT_EQ(c.physical_bytes().value(), 2u * 64 * 32 * 4);
  EXPECT_NE(schema.value().find("layers.0.mlp.gate_up"), nullptr);
  EXPECT_EQ(schema.value().find("nope"), nullptr);
}

TEST(ComponentSchema, ASourceNamedTwiceInOneComponentIsRefused) {
  // One small tensor named thousands of times would make a packed copy
  // thousands of times its size: each source is held once.
  auto twice = with_component([](json &c) { c["sources"] = {"gate", "up", "gate"}; });
  EXPECT_TRUE(FailsWith(twice, ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"s.json", "sources[2] names tensor \"gate\" again (first at sources[0])"}));
}

TEST(ComponentSchema, TheExampleInConfigIsValid) {
  const std::string path = std::string(ROOTSPAN_SOURCE_ROOT) + "/config/examples/weight-schema.json";
  auto schema = load_component_schema(path);
  ASSERT_TRUE(schema) << schema.error()->message();
  ASSERT_EQ(schema.value().components.size(), 3u);
  const ComponentSpec &q = schema.value().components[2];
  EXPECT_FALSE(q.required);
  const auto &encoding = std::get<BlockQuantizedEncoding>(q.encoding);
  EXPECT_EQ(encoding.format_id, "quantization.gguf.q4-k");
  EXPECT_EQ(encoding.values_per_block, 256u);
  EXPECT_EQ(q.physical_bytes().value(), 64u * 144);
  EXPECT_EQ(q.physical_element_type().dtype, ROOTSPAN_DTYPE_U8);
  // "required" defaults to true.
  EXPECT_TRUE(schema.value().components[1].required);
}

TEST(ComponentSchema, TheJsonSchemaNamesWhatTheReaderKnows) {
  const json schema = json::parse(read_text(std::string(ROOTSPAN_SOURCE_ROOT) + "/config/weight-schema.schema.json"));
  std::set<std::string> roles;
  for (const auto &role : schema["$defs"]["component"]["properties"]["role"]["enum"])
    roles.insert(role.get<std::string>());
  EXPECT_EQ(roles.size(), 8u);
  for (const auto &role : roles) EXPECT_TRUE(role_from_name(role)) << role;
  std::set<std::string> dtypes;
  for (const auto &dtype : schema["$defs"]["element_type"]["enum"]) dtypes.insert(dtype.get<std::string>());
  EXPECT_EQ(dtypes.size(), safetensors_dtypes().size());
  for (const auto &entry : safetensors_dtypes()) EXPECT_TRUE(dtypes.contains(std::string(entry.name)));
  EXPECT_EQ(schema["$defs"]["identifier"]["maxLength"], 160);
}

TEST(ComponentSchema, LoadingAMissingFileIsAnIoError) {
  EXPECT_TRUE(FailsWith(load_component_schema("/nonexistent/schema.json"), ROOTSPAN_ERR_IO, {"schema.json"}));
}

// ---- schema_version --------------------------------------------------------

TEST(ComponentSchema, MajorVersionIsChecked) {
  json schema = base_schema();
  schema["schema_version"] = "2.0.0";
  auto result = parse(schema);
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"load_schema", "s.json", "schema_version \"2.0.0\" has major 2", "understands major 1"}));
  EXPECT_TRUE(HasValues(result, 1, 2));
  schema["schema_version"] = "0.9.0";
  EXPECT_TRUE(HasValues(parse(schema), 1, 0));
  // A newer minor or patch is read.
  schema["schema_version"] = "1.7.3";
  EXPECT_TRUE(parse(schema));
}

TEST(ComponentSchema, VersionMustBeMajorMinorPatch) {
  for (const char *bad :
       {"1.0", "1", "1.0.0.0", "v1.0.0", "01.0.0", "1.00.0", "1..0", "1.0.x", "", " 1.0.0", "1.-1.0"}) {
    json schema = base_schema();
    schema["schema_version"] = bad;
    EXPECT_TRUE(FailsWith(parse(schema), ROOTSPAN_ERR_INVALID_SCHEMA, {"is not MAJOR.MINOR.PATCH"})) << bad;
  }
  json schema = base_schema();
  schema["schema_version"] = 1;
  EXPECT_TRUE(FailsWith(parse(schema), ROOTSPAN_ERR_INVALID_SCHEMA, {"schema_version is a JSON number"}));
  schema.erase("schema_version");
  EXPECT_TRUE(FailsWith(parse(schema), ROOTSPAN_ERR_INVALID_SCHEMA, {"missing field \"schema_version\""}));
}

TEST(ComponentSchema, TopLevelShape) {
  EXPECT_TRUE(FailsWith(parse(json::array()), ROOTSPAN_ERR_INVALID_SCHEMA, {"schema is a JSON array"}));
  json schema = base_schema();
  schema["components"] = json::object();
  EXPECT_TRUE(FailsWith(parse(schema), ROOTSPAN_ERR_INVALID_SCHEMA, {"components is a JSON object, not an array"}));
  schema.erase("components");
  EXPECT_TRUE(FailsWith(parse(schema), ROOTSPAN_ERR_INVALID_SCHEMA, {"missing field \"components\""}));
  schema = base_schema();
  schema["extra"] = 1;
  EXPECT_TRUE(FailsWith(parse(schema), ROOTSPAN_ERR_INVALID_SCHEMA, {"unknown field \"extra\""}));
  schema = base_schema();
  schema["$schema"] = "../weight-schema.schema.json";
  EXPECT_TRUE(parse(schema));
  schema = base_schema();
  schema["components"] = json::array();
  EXPECT_TRUE(parse(schema));
}

TEST(ComponentSchema, DuplicateKeysAreRejected) {
  const std::string text = R"({"schema_version": "1.0.0", "components": [{"id": "a", "id": "b", "role": "values",
      "sources": ["t"], "dimensions": [], "encoding": {"dense": {"element_type": "F32"}}}]})";
  EXPECT_TRUE(FailsWith(parse_component_schema(text, "s.json"), ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"s.json", "duplicate key \"id\""}));
}

// ---- components ------------------------------------------------------------

TEST(ComponentSchema, ComponentFieldsAreExact) {
  EXPECT_TRUE(FailsWith(with_component([](json &c) { c["requird"] = false; }), ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"component #0", "unknown field \"requird\""}));
  for (const char *field : {"id", "role", "sources", "dimensions", "encoding"}) {
    EXPECT_TRUE(FailsWith(with_component([&](json &c) { c.erase(field); }), ROOTSPAN_ERR_INVALID_SCHEMA,
                          {"component #0", std::string("missing field \"") + field + "\""}))
        << field;
  }
  json schema = base_schema();
  schema["components"][0] = "layers.0";
  EXPECT_TRUE(FailsWith(parse(schema), ROOTSPAN_ERR_INVALID_SCHEMA, {"component #0: is a JSON string"}));
}

TEST(ComponentSchema, IdIsOneTo160BytesOfTheAllowedCharacters) {
  EXPECT_TRUE(with_component([](json &c) { c["id"] = "AZaz09._-:/"; }));
  EXPECT_TRUE(with_component([](json &c) { c["id"] = std::string(160, 'x'); }));
  auto too_long = with_component([](json &c) { c["id"] = std::string(161, 'x'); });
  EXPECT_TRUE(FailsWith(too_long, ROOTSPAN_ERR_INVALID_SCHEMA, {"is not valid: it is 161 bytes, more than 160"}));
  EXPECT_TRUE(FailsWith(with_component([](json &c) { c["id"] = ""; }), ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"id \"\" is not valid: it is empty"}));
  for (const char *bad : {"a b", "a+b", "caf\xC3\xA9", "a\\b", "a@b", "a,b"}) {
    EXPECT_TRUE(FailsWith(with_component([&](json &c) { c["id"] = bad; }), ROOTSPAN_ERR_INVALID_SCHEMA,
                          {"is not one of A-Z a-z 0-9 . _ - : /"}))
        << bad;
  }
  EXPECT_TRUE(
      FailsWith(with_component([](json &c) { c["id"] = 7; }), ROOTSPAN_ERR_INVALID_SCHEMA, {"id is a JSON number"}));
}

TEST(ComponentSchema, IdsAreUnique) {
  json schema = base_schema();
  schema["components"].push_back(schema["components"][0]);
  EXPECT_TRUE(
      FailsWith(parse(schema), ROOTSPAN_ERR_INVALID_SCHEMA, {"component id \"layers.0.mlp.gate_up\" appears twice"}));
}

TEST(ComponentSchema, RolesAreTheEightOfTheDesign) {
  const std::vector<std::pair<std::string, ComponentRole>> roles = {
      {"values", ComponentRole::kValues},     {"packed_values", ComponentRole::kPackedValues},
      {"scales", ComponentRole::kScales},     {"zero_points", ComponentRole::kZeroPoints},
      {"indices", ComponentRole::kIndices},   {"permutation", ComponentRole::kPermutation},
      {"codebook", ComponentRole::kCodebook}, {"metadata", ComponentRole::kMetadata}};
  for (const auto &[name, role] : roles) {
    auto schema = with_component([&name = name](json &c) { c["role"] = name; });  // clang 14: no binding captures
    ASSERT_TRUE(schema) << name;
    EXPECT_EQ(schema.value().components[0].role, role);
    EXPECT_EQ(role_name(role), name);
  }
  EXPECT_TRUE(FailsWith(with_component([](json &c) { c["role"] = "weights"; }), ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"component \"layers.0.mlp.gate_up\": role \"weights\" is not one of values"}));
}

TEST(ComponentSchema, SourcesAreANonEmptyListOfNames) {
  EXPECT_TRUE(FailsWith(with_component([](json &c) { c["sources"] = json::array(); }), ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"component \"layers.0.mlp.gate_up\": names no source tensor"}));
  EXPECT_TRUE(FailsWith(with_component([](json &c) { c["sources"] = "gate"; }), ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"sources is a JSON string, not an array"}));
  EXPECT_TRUE(FailsWith(with_component([](json &c) {
                          c["sources"] = json::array({"gate", 3});
                        }),
                        ROOTSPAN_ERR_INVALID_SCHEMA, {"sources[1] is a JSON number"}));
}

TEST(ComponentSchema, DimensionsAreNonNegativeIntegers) {
  EXPECT_TRUE(FailsWith(with_component([](json &c) {
                          c["dimensions"] = json::array({2, -64, 32});
                        }),
                        ROOTSPAN_ERR_INVALID_SCHEMA, {"dimensions[1] is -64, not a non-negative integer"}));
  EXPECT_TRUE(FailsWith(with_component([](json &c) { c["dimensions"] = json::array({2.5}); }),
                        ROOTSPAN_ERR_INVALID_SCHEMA, {"dimensions[0] is 2.5"}));
  EXPECT_TRUE(FailsWith(with_component([](json &c) { c["dimensions"] = 4; }), ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"dimensions is a JSON number"}));
}

TEST(ComponentSchema, DenseEncodingUsesSafetensorsDtypeNames) {
  for (const auto &entry : safetensors_dtypes()) {
    auto schema = with_component([&](json &c) {
      c["encoding"] = {{"dense", {{"element_type", std::string(entry.name)}}}};
      c["dimensions"] = json::array({2, 4});
    });
    ASSERT_TRUE(schema) << entry.name << ": " << schema.error()->message();
    EXPECT_EQ(schema.value().components[0].physical_element_type().dtype, entry.dtype);
  }
  EXPECT_TRUE(FailsWith(with_component([](json &c) {
                          c["encoding"] = {{"dense", {{"element_type", "float32"}}}};
                        }),
                        ROOTSPAN_ERR_INVALID_SCHEMA, {"element_type \"float32\" is not a safetensors dtype name"}));
  EXPECT_TRUE(FailsWith(with_component([](json &c) {
                          c["encoding"] = {{"dense", json::object()}};
                        }),
                        ROOTSPAN_ERR_INVALID_SCHEMA, {"encoding.dense has no element_type"}));
  EXPECT_TRUE(FailsWith(with_component([](json &c) {
                          c["encoding"] = {{"dense", {{"element_type", "F32"}, {"order", "C"}}}};
                        }),
                        ROOTSPAN_ERR_INVALID_SCHEMA, {"encoding.dense has unknown field \"order\""}));
}

TEST(ComponentSchema, EncodingIsExactlyOneKind) {
  auto both = with_component([](json &c) {
    c["encoding"]["block_quantized"] = {{"format_id", "f"}, {"values_per_block", 1}, {"bytes_per_block", 1}};
  });
  EXPECT_TRUE(FailsWith(both, ROOTSPAN_ERR_INVALID_SCHEMA, {"exactly one of \"dense\" and \"block_quantized\""}));
  EXPECT_TRUE(HasValues(both, 1, 2));
  EXPECT_TRUE(FailsWith(with_component([](json &c) {
                          c["encoding"] = {{"sparse", 1}};
                        }),
                        ROOTSPAN_ERR_INVALID_SCHEMA, {"encoding field \"sparse\" is neither"}));
  EXPECT_TRUE(FailsWith(with_component([](json &c) { c["encoding"] = "F32"; }), ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"encoding is a JSON string"}));
}

TEST(ComponentSchema, BlockSizesAreNonZero) {
  const auto block_encoding = [](json values, json bytes) {
    return [=](json &c) {
      c["encoding"] = {
          {"block_quantized",
           {{"format_id", "quantization.gguf.q4-k"}, {"values_per_block", values}, {"bytes_per_block", bytes}}}};
    };
  };
  EXPECT_TRUE(with_component(block_encoding(256, 144)));
  EXPECT_TRUE(FailsWith(with_component(block_encoding(0, 144)), ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"values_per_block is 0, not a positive integer"}));
  EXPECT_TRUE(FailsWith(with_component(block_encoding(256, 0)), ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"bytes_per_block is 0, not a positive integer"}));
  EXPECT_TRUE(
      FailsWith(with_component(block_encoding(-1, 144)), ROOTSPAN_ERR_INVALID_SCHEMA, {"values_per_block is -1"}));
  EXPECT_TRUE(FailsWith(
      with_component([](json &c) {
        c["encoding"] = {{"block_quantized", {{"format_id", "q4 k"}, {"values_per_block", 1}, {"bytes_per_block", 1}}}};
      }),
      ROOTSPAN_ERR_INVALID_SCHEMA, {"format_id \"q4 k\" is not valid"}));
  EXPECT_TRUE(FailsWith(with_component([](json &c) {
                          c["encoding"] = {{"block_quantized", {{"format_id", "f"}, {"values_per_block", 1}}}};
                        }),
                        ROOTSPAN_ERR_INVALID_SCHEMA, {"has no bytes_per_block"}));
  // Built in code rather than parsed, validate() says the same.
  EXPECT_TRUE(FailsWith(block({4}, 0, 144).validate(), ROOTSPAN_ERR_INVALID_SCHEMA, {"values_per_block is 0"}));
  EXPECT_TRUE(FailsWith(block({4}, 256, 0).validate(), ROOTSPAN_ERR_INVALID_SCHEMA, {"bytes_per_block is 0"}));
}

TEST(ComponentSchema, RequiredIsABoolean) {
  EXPECT_TRUE(FailsWith(with_component([](json &c) { c["required"] = "yes"; }), ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"required is a JSON string, not a boolean"}));
  auto optional = with_component([](json &c) { c["required"] = false; });
  ASSERT_TRUE(optional);
  EXPECT_FALSE(optional.value().components[0].required);
}

// ---- physical bytes --------------------------------------------------------

TEST(PhysicalBytes, DenseIsTheCheckedProductTimesTheElementSize) {
  EXPECT_EQ(dense({2, 64, 32}, "F32").physical_bytes().value(), 16384u);
  EXPECT_EQ(dense({}, "F64").physical_bytes().value(), 8u);  // empty dimensions count 1
  EXPECT_EQ(dense({3, 0}, "F32").physical_bytes().value(), 0u);
  EXPECT_EQ(dense({4}, "F4").physical_bytes().value(), 2u);
  EXPECT_EQ(dense({4}, "F6_E2M3").physical_bytes().value(), 3u);
  EXPECT_EQ(dense({5}, "C64").physical_bytes().value(), 40u);
}

TEST(PhysicalBytes, BlockQuantizedIsTheGridTimesBytesPerBlock) {
  EXPECT_EQ(block({64, 1}, 256, 144).physical_bytes().value(), 9216u);
  EXPECT_EQ(block({}, 32, 18).physical_bytes().value(), 18u);
}

TEST(PhysicalBytes, OverflowIsAnError) {
  EXPECT_TRUE(FailsWith(dense({1ull << 32, 1ull << 32}, "U8").physical_bytes(), ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"component \"c\": dimensions [4294967296, 4294967296] have more elements than 64 bits"}));
  EXPECT_TRUE(FailsWith(dense({1ull << 62}, "F32").physical_bytes(), ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"have more bits than 64 bits can count"}));
  EXPECT_TRUE(FailsWith(block({1ull << 60}, 256, 144).physical_bytes(), ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"component \"q\": block grid [1152921504606846976] of 144-byte blocks has more bytes"}));
  // A schema with such a component is refused when it is read.
  EXPECT_TRUE(FailsWith(with_component([](json &c) {
                          c["dimensions"] = json::array({1ull << 40, 1ull << 40});
                        }),
                        ROOTSPAN_ERR_INVALID_SCHEMA, {"s.json", "more elements than 64 bits"}));
}

TEST(PhysicalBytes, APartialByteIsAnError) {
  EXPECT_TRUE(FailsWith(dense({3}, "F4").physical_bytes(), ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"dimensions [3] of F4 are 12 bits, not a whole number of bytes"}));
}

// ---- the default schema ----------------------------------------------------

TEST(DefaultSchema, OneDenseComponentPerTensor) {
  TempDir dir;
  const auto path = dir.write(
      "model.safetensors",
      testing::safetensors_file(
          {{"model.embed_tokens.weight", "BF16", {4, 2}}, {"lm_head.weight", "F32", {2}}, {"empty", "F32", {0}}}));
  auto checkpoint = Checkpoint::open(path);
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  const ComponentSchema schema = default_schema(checkpoint.value());
  EXPECT_EQ(schema.schema_version, "1.0.0");
  ASSERT_EQ(schema.components.size(), 3u);
  const ComponentSpec *embed = schema.find("model.embed_tokens.weight");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->role, ComponentRole::kValues);
  EXPECT_EQ(embed->sources, (std::vector<std::string>{"model.embed_tokens.weight"}));
  EXPECT_EQ(embed->dimensions, (std::vector<std::uint64_t>{4, 2}));
  EXPECT_EQ(embed->physical_element_type().dtype, ROOTSPAN_DTYPE_BF16);
  EXPECT_TRUE(embed->required);
  EXPECT_TRUE(embed->validate());
  // An empty tensor cannot be loaded: its component is optional.
  EXPECT_FALSE(schema.find("empty")->required);
}

TEST(DefaultSchema, NamesThatAreNotValidIdsGetGeneratedOnes) {
  TempDir dir;
  const auto path = dir.write("model.safetensors", testing::safetensors_file({{"a weight", "F32", {1}},
                                                                              {"tensor.0", "F32", {1}},
                                                                              {std::string(200, 'n'), "F32", {1}}}));
  auto checkpoint = Checkpoint::open(path);
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  const ComponentSchema schema = default_schema(checkpoint.value());
  ASSERT_EQ(schema.components.size(), 3u);
  std::set<std::string> ids;
  for (const auto &component : schema.components) {
    EXPECT_TRUE(is_component_id(component.id)) << component.id;
    ids.insert(component.id);
  }
  EXPECT_EQ(ids.size(), 3u);  // unique, though "a weight" is tensor 0 and "tensor.0" exists
  EXPECT_EQ(schema.components[0].sources[0], "a weight");
  EXPECT_EQ(schema.components[0].id, "tensor.0.1");
  EXPECT_EQ(schema.components[2].id, "tensor.0");
}

TEST(DefaultSchema, ATensorNameOutsideTheIdRuleStillSelectsItsComponent) {
  // --tensors and --split name a one-tensor component by its tensor's own name too.
  TempDir dir;
  const auto path =
      dir.write("model.safetensors",
                testing::safetensors_file({{"a weight", "F32", {1}}, {"caf\xc3\xa9", "F32", {1}}, {"b", "F32", {1}}}));
  auto checkpoint = Checkpoint::open(path);
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  const ComponentSchema schema = default_schema(checkpoint.value());
  const std::vector<std::string> patterns = {"a weight", "caf*"};
  auto selected = select_components(schema, patterns);
  ASSERT_TRUE(selected) << selected.error()->message();
  ASSERT_EQ(selected.value().components.size(), 2u);
  EXPECT_EQ(selected.value().components[0].sources[0], "a weight");
  EXPECT_TRUE(pattern_names("tensor.*", selected.value().components[0]));  // and by the id it loads as
  EXPECT_EQ(selected.value().components[1].sources[0], "caf\xc3\xa9");
  const std::vector<std::string> missing = {"a weigh"};
  EXPECT_TRUE(testing::FailsWith(select_components(schema, missing), ROOTSPAN_ERR_NOT_FOUND,
                                 {"matches no component id or tensor name"}));
}

// ---- select_default_components: the selection made without the components left out ----------------------------

// What a load sees of a component: its id, source, shape, element type and whether it is required.
std::vector<std::string> described(const ComponentSchema &schema) {
  std::vector<std::string> out;
  for (const ComponentSpec &c : schema.components) {
    std::string text = c.id + " <- " + c.sources.at(0) + " [";
    for (std::uint64_t d : c.dimensions) text += std::to_string(d) + ",";
    text += "] dtype " + std::to_string(static_cast<int>(c.physical_element_type().dtype));
    out.push_back(text + (c.required ? " required" : " optional"));
  }
  return out;
}

TEST(SelectDefaultComponents, GivesWhatSelectingFromTheWholeDefaultSchemaGives) {
  // Two shards whose tensors lie out of name order, within a shard and across the two.
  TempDir dir;
  dir.write("model-00001-of-00002.safetensors",
            testing::safetensors_file({{"model.z", "F32", {4, 2}}, {"model.layers.1.w", "F16", {3}}}));
  dir.write("model-00002-of-00002.safetensors",
            testing::safetensors_file(
                {{"model.layers.0.w", "F16", {3}}, {"a.head", "BF16", {2, 2}}, {"model.layers.10.w", "F32", {0}}}));
  dir.write_text("model.safetensors.index.json",
                 R"({"metadata": {"total_size": 52}, "weight_map": {"model.z": "model-00001-of-00002.safetensors",
                     "model.layers.1.w": "model-00001-of-00002.safetensors",
                     "model.layers.0.w": "model-00002-of-00002.safetensors",
                     "a.head": "model-00002-of-00002.safetensors",
                     "model.layers.10.w": "model-00002-of-00002.safetensors"}})");
  auto checkpoint = Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  const ComponentSchema whole = default_schema(checkpoint.value());
  for (const std::vector<std::string> &patterns : std::vector<std::vector<std::string>>{
           {"model.layers.0.w"}, {"model.layers.*"}, {"a.head", "model.z", "*.w"}, {"*"}, {"model.layers.1?.w"}}) {
    const auto quick = select_default_components(checkpoint.value(), patterns);
    ASSERT_TRUE(quick.has_value()) << patterns.front();
    auto long_way = select_components(whole, patterns);
    ASSERT_TRUE(long_way) << long_way.error()->message();
    EXPECT_EQ(described(*quick), described(long_way.value())) << patterns.front();
    EXPECT_EQ(quick->schema_version, long_way.value().schema_version);
  }
  // In name order across the shards; the empty tensor is there, optional.
  const std::string f16 = std::to_string(ROOTSPAN_DTYPE_F16), f32 = std::to_string(ROOTSPAN_DTYPE_F32);
  EXPECT_EQ(described(*select_default_components(checkpoint.value(), std::vector<std::string>{"*"})),
            (std::vector<std::string>{
                "a.head <- a.head [2,2,] dtype " + std::to_string(ROOTSPAN_DTYPE_BF16) + " required",
                "model.layers.0.w <- model.layers.0.w [3,] dtype " + f16 + " required",
                "model.layers.1.w <- model.layers.1.w [3,] dtype " + f16 + " required",
                "model.layers.10.w <- model.layers.10.w [0,] dtype " + f32 + " optional",
                "model.z <- model.z [4,2,] dtype " + f32 + " required",
            }));
  // A pattern that names nothing: the long way, which words the error.
  EXPECT_FALSE(select_default_components(checkpoint.value(), std::vector<std::string>{"*.w", "model.layer.*"}));
}

TEST(SelectDefaultComponents, ANameOutsideTheIdRuleTakesTheLongWay) {
  // "a weight" loads as "tensor.0": its id depends on every name, so the quick way declines.
  TempDir dir;
  const auto path =
      dir.write("model.safetensors", testing::safetensors_file({{"b", "F32", {1}}, {"a weight", "F32", {1}}}));
  auto checkpoint = Checkpoint::open(path);
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  EXPECT_FALSE(select_default_components(checkpoint.value(), std::vector<std::string>{"b"}));
  EXPECT_FALSE(select_default_components(checkpoint.value(), std::vector<std::string>{"a weight"}));
}

}  // namespace
}  // namespace rootspan::weights
