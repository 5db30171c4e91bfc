// GGUF files as checkpoints: opening by file, magic and folder; the default
// schema's components (dense, or block-quantized gguf.<type> over the block
// grid); user schemas; and split files with every part checked.
#include "weights/checkpoints/gguf_checkpoint.hpp"

#include <gtest/gtest.h>

#include "gguf_writer.hpp"
#include "test_support.hpp"
#include "weights/schema/resolve.hpp"
#include "weights/schema/schema.hpp"

namespace rootspan::testing {
namespace {

using namespace rootspan::weights;

GgufWriter mixed() {
  GgufWriter w;
  w.string("general.architecture", "llama")
      .tensor("token_embd.weight", 12, {512, 3})        // Q4_K
      .tensor("output_norm.weight", 0, {16})            // F32
      .tensor("blk.0.attn_q.weight", 14, {256, 2, 2});  // Q6_K
  return w;
}

// A split set: the tensors spread over `count` parts, each with split.*
// metadata as llama.cpp's splitter writes it.
std::vector<GgufWriter> split_parts(std::uint32_t count, std::uint64_t per_part = 2) {
  std::vector<GgufWriter> parts(count);
  for (std::uint32_t p = 0; p < count; ++p) {
    GgufWriter &w = parts[p];
    if (p == 0) w.string("general.architecture", "llama");
    w.key("split.no", kGgufU16);
    w.kvs.le(p, 2);
    w.key("split.count", kGgufU16);
    w.kvs.le(count, 2);
    w.key("split.tensors.count", kGgufI32);
    w.kvs.le(count * per_part, 4);
    for (std::uint64_t t = 0; t < per_part; ++t) w.tensor("t" + std::to_string(p * per_part + t), 8, {64});
  }
  return parts;
}

void write_parts(const TempDir &dir, const std::vector<GgufWriter> &parts, const std::string &stem = "model") {
  for (std::size_t p = 0; p < parts.size(); ++p) {
    dir.write(gguf_split_file_name(stem, static_cast<std::uint32_t>(p + 1), static_cast<std::uint32_t>(parts.size())),
              parts[p].bytes());
  }
}

TEST(GgufCheckpoint, OpensAFileByExtensionAndByMagic) {
  TempDir dir;
  const GgufWriter w = mixed();
  for (const char *name : {"m.gguf", "model.bin"}) {
    const auto path = dir.write(name, w.bytes());
    EXPECT_TRUE(is_gguf_file(name, InputFile::open(path, "test").value())) << name;
    auto checkpoint = Checkpoint::open(path);
    ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
    EXPECT_TRUE(checkpoint.value().is_gguf());
    EXPECT_EQ(checkpoint.value().tensor_names().size(), 3u);
    const TensorRef q = checkpoint.value().find("token_embd.weight");
    ASSERT_TRUE(q);
    EXPECT_EQ(q.tensor->dtype.name, "U8");
    EXPECT_EQ(q.tensor->shape, (std::vector<std::uint64_t>{3, 2 * 144}));
    EXPECT_EQ(q.file_offset(), w.data_offset());
    const TensorRef norm = checkpoint.value().find("output_norm.weight");
    EXPECT_EQ(norm.tensor->dtype.name, "F32");
    EXPECT_EQ(norm.file_offset(), w.data_offset() + w.offsets()[1]);
    std::filesystem::remove(path);
  }
}

TEST(GgufCheckpoint, ABadGgufFileByExtensionReportsTheGgufRule) {
  TempDir dir;
  GgufWriter w = mixed();
  w.version = 1;
  const auto path = dir.write("m.gguf", w.bytes());
  EXPECT_TRUE(FailsWith(Checkpoint::open(path), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"m.gguf\": at byte 4: version", "version 1 is not supported"}));
}

TEST(GgufCheckpoint, OpensAFolderHoldingOneGgufFile) {
  TempDir dir;
  dir.write("model-q4.gguf", mixed().bytes());
  EXPECT_TRUE(is_gguf_folder(dir.path()));
  auto checkpoint = Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  EXPECT_TRUE(checkpoint.value().is_gguf());
  dir.write("other.gguf", mixed().bytes());
  EXPECT_TRUE(
      FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                {"folder has 2 *.gguf files", "\"model-q4.gguf\", \"other.gguf\"", "not the parts of one split file"}));
}

TEST(GgufCheckpoint, AFolderWithSafetensorsStaysSafetensors) {
  TempDir dir;
  dir.write("m.gguf", mixed().bytes());
  dir.write("model.safetensors", safetensors_file({{"w", "F32", {2}}}));
  EXPECT_FALSE(is_gguf_folder(dir.path()));
  auto checkpoint = Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  EXPECT_FALSE(checkpoint.value().is_gguf());
}

TEST(GgufCheckpoint, AGgufFileOrSplitPartLinkedOutOfItsFolderIsRefused) {
  TempDir elsewhere;
  const auto outside = elsewhere.write("private.gguf", mixed().bytes());
  // The folder's one GGUF file, and the file named directly.
  TempDir folder;
  std::filesystem::create_symlink(outside, folder.path() / "m.gguf");
  for (const auto &path : {folder.path(), folder.path() / "m.gguf"}) {
    EXPECT_TRUE(FailsWith(Checkpoint::open(path), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                          {"m.gguf", "leads out", std::filesystem::canonical(outside).string()}));
  }
  // One part of a split set.
  TempDir split;
  const auto parts = split_parts(3);
  write_parts(split, parts);
  const std::string part2 = gguf_split_file_name("model", 2, 3);
  const auto moved = elsewhere.write(part2, parts[1].bytes());
  std::filesystem::remove(split.path() / part2);
  std::filesystem::create_symlink(moved, split.path() / part2);
  EXPECT_TRUE(FailsWith(Checkpoint::open(split.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {part2, "leads out", std::filesystem::canonical(moved).string()}));
  // Back inside the folder, the set opens.
  std::filesystem::remove(split.path() / part2);
  std::filesystem::copy_file(moved, split.path() / part2);
  auto opened = Checkpoint::open(split.path() / gguf_split_file_name("model", 3, 3));
  ASSERT_TRUE(opened) << opened.error()->message();
  EXPECT_EQ(opened.value().shards().size(), 3u);
}

TEST(GgufCheckpoint, DefaultSchemaMakesDenseAndBlockQuantizedComponents) {
  TempDir dir;
  auto checkpoint = Checkpoint::open(dir.write("m.gguf", mixed().bytes()));
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  const ComponentSchema schema = default_schema(checkpoint.value());
  ASSERT_EQ(schema.components.size(), 3u);
  const ComponentSpec *q4 = schema.find("token_embd.weight");
  ASSERT_NE(q4, nullptr);
  const auto &block = std::get<BlockQuantizedEncoding>(q4->encoding);
  EXPECT_EQ(block.format_id, "gguf.q4_k");
  EXPECT_EQ(block.values_per_block, 256u);
  EXPECT_EQ(block.bytes_per_block, 144u);
  EXPECT_EQ(q4->dimensions, (std::vector<std::uint64_t>{3, 2}));
  const ComponentSpec *q6 = schema.find("blk.0.attn_q.weight");
  EXPECT_EQ(std::get<BlockQuantizedEncoding>(q6->encoding).format_id, "gguf.q6_k");
  EXPECT_EQ(q6->dimensions, (std::vector<std::uint64_t>{2, 2, 1}));
  const ComponentSpec *norm = schema.find("output_norm.weight");
  EXPECT_EQ(std::get<DenseEncoding>(norm->encoding).element_type.name, "F32");
  EXPECT_EQ(norm->dimensions, (std::vector<std::uint64_t>{16}));

  auto resolved = resolve_schema(checkpoint.value(), schema);
  ASSERT_TRUE(resolved) << resolved.error()->message();
  ASSERT_EQ(resolved.value().payloads.size(), 3u);
  for (const ComponentPayload &payload : resolved.value().payloads) {
    EXPECT_EQ(payload.total_bytes(), payload.component().physical_bytes().value()) << payload.component_id();
  }
}

TEST(GgufCheckpoint, EveryTypeResolvesWithItsBytes) {
  TempDir dir;
  GgufWriter w;
  for (const GgufTestType &type : gguf_test_types()) {
    w.tensor(std::string("t.") + type.name, type.id, {type.values_per_block * 2, 2});
  }
  auto checkpoint = Checkpoint::open(dir.write("all.gguf", w.bytes()));
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  auto resolved = resolve_schema(checkpoint.value(), default_schema(checkpoint.value()));
  ASSERT_TRUE(resolved) << resolved.error()->message();
  ASSERT_EQ(resolved.value().payloads.size(), w.tensors.size());
  for (std::size_t i = 0; i < w.tensors.size(); ++i) {
    const GgufTestType &type = gguf_test_type(w.tensors[i].type);
    const ComponentPayload *payload = nullptr;
    for (const auto &p : resolved.value().payloads) {
      if (p.component_id() == w.tensors[i].name) payload = &p;
    }
    ASSERT_NE(payload, nullptr) << type.name;
    EXPECT_EQ(payload->total_bytes(), 4 * type.bytes_per_block) << type.name;
    EXPECT_EQ(payload->segments().front().file_offset(), w.data_offset() + w.offsets()[i]) << type.name;
    if (type.dense) {
      EXPECT_EQ(std::get<DenseEncoding>(payload->component().encoding).element_type.name, type.dense);
    } else {
      std::string id = "gguf.";
      for (const char *c = type.name; *c; ++c) id += static_cast<char>(std::tolower(*c));
      EXPECT_EQ(std::get<BlockQuantizedEncoding>(payload->component().encoding).format_id, id);
      EXPECT_EQ(payload->dimensions(), (std::vector<std::uint64_t>{2, 2})) << type.name;
    }
  }
}

TEST(GgufCheckpoint, AUserSchemaNamesABlockQuantizedTensor) {
  TempDir dir;
  auto checkpoint = Checkpoint::open(dir.write("m.gguf", mixed().bytes()));
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  auto schema = parse_component_schema(R"({"schema_version": "1.0.0", "components": [
      {"id": "embed", "role": "packed_values", "sources": ["token_embd.weight"], "dimensions": [3, 2],
       "encoding": {"block_quantized": {"format_id": "gguf.q4_k", "values_per_block": 256, "bytes_per_block": 144}}},
      {"id": "norm", "role": "values", "sources": ["output_norm.weight"], "dimensions": [16],
       "encoding": {"dense": {"element_type": "F32"}}}]})",
                                       "schema.json");
  ASSERT_TRUE(schema) << schema.error()->message();
  auto resolved = resolve_schema(checkpoint.value(), schema.value());
  ASSERT_TRUE(resolved) << resolved.error()->message();
  EXPECT_EQ(resolved.value().payloads[0].total_bytes(), 6u * 144);
  // A wrong block size is caught by the block grid.
  auto wrong = parse_component_schema(R"({"schema_version": "1.0.0", "components": [
      {"id": "embed", "role": "packed_values", "sources": ["token_embd.weight"], "dimensions": [3, 2],
       "encoding": {"block_quantized": {"format_id": "gguf.q4_k", "values_per_block": 256, "bytes_per_block": 84}}}]})",
                                      "schema.json");
  ASSERT_TRUE(wrong);
  EXPECT_TRUE(FailsWith(resolve_schema(checkpoint.value(), wrong.value()), ROOTSPAN_ERR_INVALID_PAYLOAD,
                        {"token_embd.weight", "84-byte blocks"}));
}

// ---- split files ------------------------------------------------------------

TEST(GgufSplit, ParsesAndMakesSplitNames) {
  const auto name = parse_gguf_split_name("llama-7b-00002-of-00003.gguf");
  ASSERT_TRUE(name);
  EXPECT_EQ(name->stem, "llama-7b");
  EXPECT_EQ(name->part, 2u);
  EXPECT_EQ(name->count, 3u);
  EXPECT_EQ(gguf_split_file_name("llama-7b", 2, 3), "llama-7b-00002-of-00003.gguf");
  for (const char *bad : {"m.gguf", "m-00004-of-00003.gguf", "m-00000-of-00003.gguf", "m-0001-of-00003.gguf",
                          "-00001-of-00003.gguf", "m-00001-of-00003.safetensors", "m-0000a-of-00003.gguf"}) {
    EXPECT_FALSE(parse_gguf_split_name(bad)) << bad;
  }
}

TEST(GgufSplit, LoadsAsOneCheckpointFromTheFirstPartOrTheFolder) {
  TempDir dir;
  write_parts(dir, split_parts(3));
  for (const auto &path : {dir.path() / "model-00001-of-00003.gguf", dir.path()}) {
    auto checkpoint = Checkpoint::open(path);
    ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
    EXPECT_EQ(checkpoint.value().shards().size(), 3u);
    EXPECT_EQ(checkpoint.value().tensor_names().size(), 6u);
    EXPECT_EQ(checkpoint.value().find("t5").shard->file, "model-00003-of-00003.gguf");
  }
}

TEST(GgufSplit, RefusesAMissingPart) {
  TempDir dir;
  write_parts(dir, split_parts(3));
  std::filesystem::remove(dir.path() / "model-00002-of-00003.gguf");
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path() / "model-00001-of-00003.gguf"), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"split part 2 of 3, \"model-00002-of-00003.gguf\", is missing"}));
}

TEST(GgufSplit, RefusesWrongNumbering) {
  TempDir dir;
  auto parts = split_parts(2);
  std::swap(parts[0], parts[1]);
  write_parts(dir, parts);
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"model-00001-of-00002.gguf\": split.no is 1 but the file name says part 1"}));
}

TEST(GgufSplit, RefusesACountThatDisagreesWithTheName) {
  TempDir dir;
  write_parts(dir, split_parts(2));
  // Part 3 of 3 is named, but the parts say they are two.
  std::filesystem::rename(dir.path() / "model-00001-of-00002.gguf", dir.path() / "model-00001-of-00001.gguf");
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path() / "model-00001-of-00001.gguf"), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"split.count is 2 but the file name says 1 parts"}));
}

TEST(GgufSplit, RefusesAWrongTensorTotal) {
  TempDir dir;
  auto parts = split_parts(2);
  parts[1].tensors.pop_back();
  write_parts(dir, parts);
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"split.tensors.count is 4 but the 2 parts hold 3 tensors"}));
}

TEST(GgufSplit, RefusesPartsWithoutSplitKeys) {
  TempDir dir;
  auto parts = split_parts(2);
  parts[1] = GgufWriter();
  parts[1].tensor("t9", 0, {4});
  write_parts(dir, parts);
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"model-00002-of-00002.gguf\": split part has no split.no key"}));
}

TEST(GgufSplit, RefusesATensorInTwoParts) {
  TempDir dir;
  auto parts = split_parts(2);
  parts[1].tensors[0].name = "t0";
  write_parts(dir, parts);
  EXPECT_TRUE(
      FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                {"tensor \"t0\" appears in two shards", "model-00001-of-00002.gguf", "model-00002-of-00002.gguf"}));
}

TEST(GgufSplit, RefusesAPartOfASplitFileUnderAnotherName) {
  TempDir dir;
  auto parts = split_parts(2);
  const auto path = dir.write("renamed.gguf", parts[0].bytes());
  EXPECT_TRUE(FailsWith(Checkpoint::open(path), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"split.count is 2", "NAME-00001-of-NNNNN.gguf"}));
}

}  // namespace
}  // namespace rootspan::testing
