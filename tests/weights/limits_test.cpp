// The limits every reader enforces (weights/formats/limits.hpp), each broken by one
// more than it allows and kept by exactly what it allows: tensor rank in a
// safetensors shape and in schema dimensions, entries of a header, tensors
// of a GGUF file, components and sources of a schema. The long arrays are
// refused while parsing, so a header of one huge shape costs no more than
// its text.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.hpp"
#include "weights/checkpoints/checkpoint.hpp"
#include "weights/formats/gguf.hpp"
#include "weights/formats/limits.hpp"
#include "weights/formats/safetensors.hpp"
#include "weights/schema/schema.hpp"

namespace rootspan::weights {
namespace {

using testing::FailsWith;

// A safetensors file: the length prefix, `header`, then `data` bytes.
std::vector<std::byte> file_of(const std::string &header, std::size_t data = 0) {
  std::vector<std::byte> out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((header.size() >> (8 * i)) & 0xFF));
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  out.resize(out.size() + data, std::byte{7});
  return out;
}

// One U8 tensor of `rank` dimensions of 1: one byte of data.
std::string header_of_rank(std::size_t rank) {
  std::string shape;
  for (std::size_t i = 0; i < rank; ++i) shape += (i ? ",1" : "1");
  return R"({"t":{"dtype":"U8","shape":[)" + shape + R"(],"data_offsets":[0,1]}})";
}

TEST(Limits, ATensorRankAbove64IsRefused) {
  EXPECT_TRUE(parse_safetensors(file_of(header_of_rank(kMaxTensorRank), 1), "m.safetensors"));
  EXPECT_TRUE(FailsWith(parse_safetensors(file_of(header_of_rank(kMaxTensorRank + 1), 1), "m.safetensors"),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"m.safetensors", "the array at \"t\".\"shape\" has more than 64 elements",
                         "a tensor's shape has at most 64 dimensions"}));
}

TEST(Limits, OneHugeShapeIsRefusedWhileParsing) {
  // The audit's header, scaled down: one shape of millions of zeros. Refused
  // at the 65th number, before the parsed array grows.
  std::string header = R"({"t":{"dtype":"U8","shape":[0)";
  for (int i = 0; i < 5'000'000; ++i) header += ",0";
  header += R"(],"data_offsets":[0,0]}})";
  EXPECT_TRUE(FailsWith(parse_safetensors(file_of(header), "big.safetensors"), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"has more than 64 elements"}));
}

TEST(Limits, AHeaderOfMoreThanTheEntryLimitIsRefused) {
  // Entries need not be valid tensors: the count is refused first.
  std::string header = "{";
  for (std::size_t i = 0; i <= kMaxTensorsPerFile; ++i) header += (i ? ",\"" : "\"") + std::to_string(i) + "\":0";
  header += "}";
  EXPECT_TRUE(FailsWith(
      parse_safetensors(file_of(header), "many.safetensors"), ROOTSPAN_ERR_INVALID_CHECKPOINT,
      {"many.safetensors", "the top-level object has more than 1048576 members", "a header at most 1048576 entries"}));
}

TEST(Limits, AGgufFileOfMoreThanTheTensorLimitIsRefused) {
  std::vector<std::byte> bytes;
  auto put = [&](std::uint64_t value, int size) {
    for (int i = 0; i < size; ++i) bytes.push_back(static_cast<std::byte>((value >> (8 * i)) & 0xFF));
  };
  for (char c : std::string("GGUF")) bytes.push_back(static_cast<std::byte>(c));
  put(3, 4);                       // version
  put(kMaxTensorsPerFile + 1, 8);  // tensor count
  put(0, 8);                       // key-value count
  // Room enough that the count alone is what is refused.
  bytes.resize(bytes.size() + (kMaxTensorsPerFile + 1) * 64);
  EXPECT_TRUE(FailsWith(parse_gguf(bytes, "m.gguf"), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"m.gguf", "1048577 tensors, more than the limit of 1048576 tensors in one file"}));
}

nlohmann::json schema_with(const nlohmann::json &component) {
  return {{"schema_version", "1.0.0"}, {"components", nlohmann::json::array({component})}};
}

nlohmann::json component(std::size_t rank, std::size_t sources) {
  nlohmann::json names = nlohmann::json::array();
  for (std::size_t i = 0; i < sources; ++i) names.push_back("t" + std::to_string(i));
  return {{"id", "c"},
          {"role", "values"},
          {"sources", names},
          {"dimensions", std::vector<std::uint64_t>(rank, 1)},
          {"encoding", {{"dense", {{"element_type", "U8"}}}}}};
}

TEST(Limits, SchemaDimensionsAboveTheRankLimitAreRefused) {
  EXPECT_TRUE(parse_component_schema(schema_with(component(kMaxTensorRank, 1)).dump(), "s.json"));
  EXPECT_TRUE(FailsWith(parse_component_schema(schema_with(component(kMaxTensorRank + 1, 1)).dump(), "s.json"),
                        ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"s.json", "component \"c\"", "dimensions has 65 entries, more than the limit of 64"}));
}

TEST(Limits, SchemaSourcesAboveTheirLimitAreRefused) {
  EXPECT_TRUE(parse_component_schema(schema_with(component(1, kMaxComponentSources)).dump(), "s.json"));
  EXPECT_TRUE(FailsWith(parse_component_schema(schema_with(component(1, kMaxComponentSources + 1)).dump(), "s.json"),
                        ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"s.json", "component \"c\"", "sources has 65537 entries, more than the limit of 65536"}));
}

TEST(Limits, SchemaComponentsAboveTheirLimitAreRefusedWhileParsing) {
  std::string text = R"({"schema_version":"1.0.0","components":[0)";
  for (std::size_t i = 0; i < kMaxSchemaComponents; ++i) text += ",0";
  text += "]}";
  EXPECT_TRUE(FailsWith(parse_component_schema(text, "s.json"), ROOTSPAN_ERR_INVALID_SCHEMA,
                        {"s.json", "has more than 1048576 elements", "a schema holds at most 1048576 components"}));
}

TEST(Limits, TensorsAreCountedPerCheckpointNotPerFile) {
  // Each shard within its own limit, the checkpoint over it: refused.
  EXPECT_TRUE(check_tensor_count(kMaxTensorsPerCheckpoint, 3, kMaxTensorsPerCheckpoint));
  const auto refused = check_tensor_count(kMaxTensorsPerCheckpoint + 1, 3, kMaxTensorsPerCheckpoint);
  EXPECT_TRUE(FailsWith(refused, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"3 files hold 1048577 tensors in all", "more than the 1048576 a checkpoint may hold"}));
  EXPECT_EQ(refused.error()->values->first, kMaxTensorsPerCheckpoint);
}

}  // namespace
}  // namespace rootspan::weights
