// docs/weight-schema.md: sharded checkpoints — the index, its cross-checks with the
// shards, portable file names — and opening a checkpoint file or folder.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/sha256.hpp"
#include "test_support.hpp"
#include "weights/checkpoints/checkpoint.hpp"
#include "weights/files/portable_path.hpp"
#include "weights/formats/shard_index.hpp"
#include "weights/pipeline/load_pipeline.hpp"

namespace rootspan::weights {
namespace {

using testing::FailsWith;
using testing::header_json;
using testing::safetensors_file;
using testing::TempDir;
using testing::TensorSpec;
namespace fs = std::filesystem;

const std::vector<TensorSpec> kShard1 = {{"embed", "F32", {4, 2}}, {"layer.0", "F16", {3}}};
const std::vector<TensorSpec> kShard2 = {{"layer.1", "F16", {3}}, {"head", "BF16", {2, 2}}};

std::string index_json(const std::vector<std::pair<std::string, std::string>> &map,
                       const std::string &metadata = "{\"total_size\": 52}") {
  std::string out = "{\"metadata\": " + metadata + ", \"weight_map\": {";
  for (std::size_t i = 0; i < map.size(); ++i) {
    out += (i ? ", " : "") + ("\"" + map[i].first + "\": \"" + map[i].second + "\"");
  }
  return out + "}}";
}

const std::vector<std::pair<std::string, std::string>> kMap = {{"embed", "model-00001-of-00002.safetensors"},
                                                               {"layer.0", "model-00001-of-00002.safetensors"},
                                                               {"layer.1", "model-00002-of-00002.safetensors"},
                                                               {"head", "model-00002-of-00002.safetensors"}};

// A valid two-shard checkpoint in `dir`.
void write_sharded(const TempDir &dir, const std::string &index = index_json(kMap)) {
  dir.write("model-00001-of-00002.safetensors", safetensors_file(kShard1));
  dir.write("model-00002-of-00002.safetensors", safetensors_file(kShard2));
  dir.write_text("model.safetensors.index.json", index);
}

// ---- opening ---------------------------------------------------------------

TEST(Checkpoint, OpensASingleFile) {
  TempDir dir;
  const auto path = dir.write("weights.safetensors", safetensors_file(kShard1));
  auto checkpoint = Checkpoint::open(path);
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  EXPECT_FALSE(checkpoint.value().sharded());
  ASSERT_EQ(checkpoint.value().shards().size(), 1u);
  EXPECT_EQ(checkpoint.value().shards()[0].file, "weights.safetensors");
  EXPECT_EQ(checkpoint.value().folder(), dir.path());
  const TensorRef layer = checkpoint.value().find("layer.0");
  ASSERT_TRUE(layer);
  EXPECT_EQ(layer.file_offset(), 8 + header_json(kShard1).size() + 32);
  EXPECT_FALSE(checkpoint.value().find("nothing"));
  EXPECT_EQ(checkpoint.value().tensor_names(), (std::vector<std::string>{"embed", "layer.0"}));
  EXPECT_EQ(checkpoint.value().tensor_bytes(), 38u);
}

TEST(Checkpoint, FolderPrefersModelSafetensors) {
  TempDir dir;
  dir.write("model.safetensors", safetensors_file(kShard1));
  dir.write("other.safetensors", safetensors_file(kShard2));
  auto checkpoint = Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  EXPECT_EQ(checkpoint.value().shards()[0].file, "model.safetensors");
}

TEST(Checkpoint, FolderWithTheOnlySafetensorsFile) {
  TempDir dir;
  dir.write("pytorch_model.safetensors", safetensors_file(kShard2));
  dir.write_text("config.json", "{}");
  auto checkpoint = Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  EXPECT_EQ(checkpoint.value().shards()[0].file, "pytorch_model.safetensors");
  EXPECT_TRUE(checkpoint.value().find("head"));
}

TEST(Checkpoint, FolderWithSeveralFilesNeedsAnIndex) {
  TempDir dir;
  dir.write("a.safetensors", safetensors_file(kShard1));
  dir.write("b.safetensors", safetensors_file(kShard2));
  auto result = Checkpoint::open(dir.path());
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"open_checkpoint", "2 *.safetensors files", "\"a.safetensors\", \"b.safetensors\"",
                         "model.safetensors.index.json"}));
  EXPECT_TRUE(testing::HasValues(result, 1, 2));
}

TEST(Checkpoint, FolderWithoutAnyCheckpoint) {
  TempDir dir;
  dir.write_text("README.md", "nothing here");
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"no checkpoint rootspan reads: no model.safetensors.index.json, no *.safetensors file",
                         "it holds 1 entries: \"README.md\""}));
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path() / "absent"), ROOTSPAN_ERR_IO, {"absent", "no such file"}));
}

TEST(Checkpoint, AnInvalidFileIsReportedByName) {
  TempDir dir;
  dir.write("model.safetensors", testing::file_bytes("{}", 3));
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"model.safetensors", "3 trailing bytes"}));
}

// ---- sharded ---------------------------------------------------------------

TEST(ShardedCheckpoint, OpensAndLocatesEveryTensor) {
  TempDir dir;
  write_sharded(dir);
  auto checkpoint = Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  const Checkpoint &ckpt = checkpoint.value();
  EXPECT_TRUE(ckpt.sharded());
  ASSERT_EQ(ckpt.shards().size(), 2u);
  EXPECT_EQ(ckpt.find("embed").shard->file, "model-00001-of-00002.safetensors");
  EXPECT_EQ(ckpt.find("head").shard->file, "model-00002-of-00002.safetensors");
  EXPECT_EQ(ckpt.find("head").file_offset(), 8 + header_json(kShard2).size() + 6);
  EXPECT_EQ(ckpt.index()->total_size, 52u);
  EXPECT_TRUE(ckpt.notes().empty());
  EXPECT_EQ(ckpt.tensor_names().size(), 4u);
}

// What opening parsed is hashed only when asked (ParsedDigests): a verified
// load proves with those digests that it hashed the very bytes it parsed, a
// digest manifest records them, and any other open skips the work.
TEST(ShardedCheckpoint, DigestsOfWhatWasParsedAreTakenOnlyWhenAsked) {
  TempDir dir;
  write_sharded(dir);
  auto taken = Checkpoint::open(dir.path(), std::nullopt, ParsedDigests::kTake);
  auto skipped = Checkpoint::open(dir.path(), std::nullopt, ParsedDigests::kSkip);
  ASSERT_TRUE(taken) << taken.error()->message();
  ASSERT_TRUE(skipped) << skipped.error()->message();
  const std::string header = header_json(kShard1);
  const std::vector<std::byte> shard1 = safetensors_file(kShard1);
  Sha256 parsed;
  parsed.update(std::span(shard1).first(8 + header.size()));
  EXPECT_EQ(taken.value().shards()[0].header_sha256, parsed.hex_digest()) << "the prefix and header, as parsed";
  const std::string index = index_json(kMap);
  Sha256 index_digest;
  index_digest.update(std::as_bytes(std::span(index)));
  EXPECT_EQ(taken.value().index_file()->sha256, index_digest.hex_digest());
  for (const Shard &shard : skipped.value().shards()) EXPECT_EQ(shard.header_sha256, "") << shard.file;
  EXPECT_EQ(skipped.value().index_file()->sha256, "");
  EXPECT_EQ(skipped.value().tensor_names(), taken.value().tensor_names()) << "the same checkpoint either way";

  // Which requests ask: those that check digests (a verified or signed load)
  // or record them (rootspan_checkpoint_hash); not a plain load or inspect.
  LoadRequest plain;
  plain.path = dir.path();
  LoadRequest verified = plain, manifest = plain, recorded = plain;
  verified.check_digests = true;
  manifest.digests_manifest = dir.path() / "digests.json";
  recorded.record_digests = true;
  const struct {
    const char *name;
    const LoadRequest &request;
    bool hashed;
  } cases[] = {{"plain", plain, false},
               {"verified", verified, true},
               {"manifest", manifest, true},
               {"recorded", recorded, true}};
  for (const auto &c : cases) {
    auto opened = open_requested_checkpoint(c.request);
    ASSERT_TRUE(opened) << opened.error()->message();
    EXPECT_EQ(opened.value().shards()[1].header_sha256.empty(), !c.hashed) << c.name;
    EXPECT_EQ(opened.value().index_file()->sha256.empty(), !c.hashed) << c.name;
  }
}

TEST(ShardedCheckpoint, TotalSizeIsAdvisory) {
  TempDir dir;
  write_sharded(dir, index_json(kMap, "{\"total_size\": 1000}"));
  auto checkpoint = Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  ASSERT_EQ(checkpoint.value().notes().size(), 1u);
  EXPECT_NE(checkpoint.value().notes()[0].find("total_size 1000 differs from the tensors' 52 bytes"),
            std::string::npos);
  // Not a number, or absent: no harm either.
  TempDir other;
  write_sharded(other, index_json(kMap, "{\"total_size\": \"big\"}"));
  EXPECT_TRUE(Checkpoint::open(other.path()));
}

TEST(ShardedCheckpoint, MappedTensorMustExistInTheNamedFile) {
  TempDir dir;
  auto map = kMap;
  map.push_back({"ghost", "model-00001-of-00002.safetensors"});
  write_sharded(dir, index_json(map));
  EXPECT_TRUE(
      FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                {"model.safetensors.index.json", "maps tensor \"ghost\" to \"model-00001-of-00002.safetensors\"",
                 "no shard has such a tensor"}));
}

TEST(ShardedCheckpoint, MappedTensorInTheWrongFileIsRejected) {
  TempDir dir;
  auto map = kMap;
  map[3].second = "model-00001-of-00002.safetensors";  // head lies in shard 2
  write_sharded(dir, index_json(map));
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"maps tensor \"head\" to \"model-00001-of-00002.safetensors\"",
                         "it lies in \"model-00002-of-00002.safetensors\""}));
}

TEST(ShardedCheckpoint, EveryShardTensorMustBeInTheMap) {
  TempDir dir;
  auto map = kMap;
  map.erase(map.begin() + 2);  // layer.1
  write_sharded(dir, index_json(map));
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"tensor \"layer.1\" of shard \"model-00002-of-00002.safetensors\" is not in the weight_map"}));
}

TEST(ShardedCheckpoint, NoTensorNameInTwoShards) {
  TempDir dir;
  dir.write("a.safetensors", safetensors_file({{"shared", "F32", {1}}, {"x", "F32", {1}}}));
  dir.write("b.safetensors", safetensors_file({{"shared", "F32", {1}}}));
  dir.write_text("model.safetensors.index.json",
                 index_json({{"shared", "a.safetensors"}, {"x", "a.safetensors"}, {"y", "b.safetensors"}}));
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"tensor \"shared\" appears in two shards: \"a.safetensors\" and \"b.safetensors\""}));
}

TEST(ShardedCheckpoint, MissingOrBrokenShardIsNamed) {
  TempDir dir;
  dir.write("model-00001-of-00002.safetensors", safetensors_file(kShard1));
  dir.write_text("model.safetensors.index.json", index_json(kMap));
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_IO, {"model-00002-of-00002.safetensors"}));
  dir.write("model-00002-of-00002.safetensors", testing::file_bytes("{\"head\":1}", 0));
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"model-00002-of-00002.safetensors", "tensor \"head\": entry is 1"}));
}

// ---- the index file --------------------------------------------------------

TEST(ShardIndex, ParsesWeightMapFilesAndTotalSize) {
  auto index = parse_shard_index(index_json(kMap), "index.json");
  ASSERT_TRUE(index) << index.error()->message();
  EXPECT_EQ(index.value().weight_map.size(), 4u);
  EXPECT_EQ(index.value().files,
            (std::vector<std::string>{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}));
  EXPECT_EQ(index.value().total_size, 52u);
  // Metadata is optional.
  EXPECT_TRUE(parse_shard_index("{\"weight_map\": {}}", "index.json"));
}

TEST(ShardIndex, StructureRules) {
  EXPECT_TRUE(FailsWith(parse_shard_index("[]", "index.json"), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"index.json", "index is a JSON array"}));
  EXPECT_TRUE(FailsWith(parse_shard_index("{\"metadata\": {}}", "index.json"), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"missing \"weight_map\""}));
  EXPECT_TRUE(FailsWith(parse_shard_index("{\"weight_map\": []}", "index.json"), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"weight_map is a JSON array"}));
  EXPECT_TRUE(FailsWith(parse_shard_index("{\"weight_map\": {\"w\": 3}}", "index.json"),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"weight_map entry for tensor \"w\" is a JSON number"}));
  EXPECT_TRUE(FailsWith(parse_shard_index("{\"metadata\": 1, \"weight_map\": {}}", "index.json"),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"metadata is a JSON number"}));
  EXPECT_TRUE(FailsWith(parse_shard_index("{\"weight_map\": {\"w\": \"a\", \"w\": \"b\"}}", "index.json"),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"duplicate key \"w\" in the object at \"weight_map\""}));
  EXPECT_TRUE(FailsWith(parse_shard_index("{\"weight_map\": {}", "index.json"), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"not valid JSON"}));
}

struct NameCase {
  std::string name;
  std::string rule;
};

class PortableNames : public ::testing::TestWithParam<NameCase> {};

TEST_P(PortableNames, AreRejectedWithTheirRule) {
  const auto &[name, rule] = GetParam();
  auto result = parse_shard_index("{\"weight_map\": {\"w\": " + nlohmann::json(name).dump() + "}}", "index.json");
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"index.json", "is not a portable relative path", rule, "tensor \"w\""}));
  EXPECT_FALSE(is_portable_name(name));  // the same rules, without the error
}

INSTANTIATE_TEST_SUITE_P(
    ShardIndex, PortableNames,
    ::testing::Values(NameCase{"", "it is empty"}, NameCase{"/etc/model.safetensors", "starts with '/'"},
                      NameCase{"shards\\a.safetensors", "contains '\\'"},
                      NameCase{"C:model.safetensors", "contains ':'"}, NameCase{"a:b.safetensors", "contains ':'"},
                      NameCase{"a\x01.safetensors", "control character"},
                      NameCase{"a\x7F.safetensors", "control character"},
                      NameCase{"a\n.safetensors", "control character"}, NameCase{"a//b.safetensors", "empty segment"},
                      NameCase{"a/", "empty segment"}, NameCase{"./a.safetensors", "'.' segment"},
                      NameCase{"a/./b.safetensors", "'.' segment"}, NameCase{"../a.safetensors", "'..' segment"},
                      NameCase{"a/../../b.safetensors", "'..' segment"}, NameCase{"a/..", "'..' segment"}));

TEST(PortableName, AcceptsPlainRelativeNames) {
  for (const char *name : {"model.safetensors", "shards/part-1.safetensors", "a b/c-d_e.safetensors", "..a", "a..",
                           ".hidden", "caf\xC3\xA9.safetensors"}) {
    EXPECT_TRUE(check_portable_name(name, ROOTSPAN_ERR_INVALID_CHECKPOINT, "open_checkpoint", "index")) << name;
    EXPECT_TRUE(is_portable_name(name)) << name;
  }
}

TEST(ShardedCheckpoint, ShardsInSubfoldersAreFine) {
  TempDir dir;
  dir.write("shards/one.safetensors", safetensors_file(kShard1));
  dir.write_text("model.safetensors.index.json",
                 index_json({{"embed", "shards/one.safetensors"}, {"layer.0", "shards/one.safetensors"}}));
  auto checkpoint = Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  EXPECT_EQ(checkpoint.value().find("embed").shard->file, "shards/one.safetensors");
}

TEST(ShardedCheckpoint, ASymbolicLinkMustNotLeadOutOfTheFolder) {
  TempDir outside;
  const auto secret = outside.write("secret.safetensors", safetensors_file(kShard1));
  TempDir dir;
  fs::create_directory(dir.path() / "ckpt");
  const fs::path folder = dir.path() / "ckpt";
  fs::create_symlink(secret, folder / "link.safetensors");
  std::string index = index_json({{"embed", "link.safetensors"}, {"layer.0", "link.safetensors"}});
  dir.write_text("ckpt/model.safetensors.index.json", index);
  EXPECT_TRUE(FailsWith(
      Checkpoint::open(folder), ROOTSPAN_ERR_INVALID_CHECKPOINT,
      {"file name \"link.safetensors\" leads out of the checkpoint's trusted folders", "secret.safetensors"}));

  // Through a linked folder, and through a relative link to a sibling.
  fs::create_directory_symlink(outside.path(), folder / "sub");
  dir.write_text("ckpt/model.safetensors.index.json",
                 index_json({{"embed", "sub/secret.safetensors"}, {"layer.0", "sub/secret.safetensors"}}));
  EXPECT_TRUE(
      FailsWith(Checkpoint::open(folder), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"\"sub/secret.safetensors\" leads out"}));
  dir.write("ckpt-sibling/x.safetensors", safetensors_file(kShard1));
  fs::create_symlink("../ckpt-sibling/x.safetensors", folder / "rel.safetensors");
  dir.write_text("ckpt/model.safetensors.index.json",
                 index_json({{"embed", "rel.safetensors"}, {"layer.0", "rel.safetensors"}}));
  EXPECT_TRUE(FailsWith(Checkpoint::open(folder), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"\"rel.safetensors\" leads out"}));
}

TEST(ShardedCheckpoint, ASymbolicLinkInsideTheFolderIsFine) {
  TempDir dir;
  dir.write("blobs/abc123", safetensors_file(kShard1));
  fs::create_symlink("blobs/abc123", dir.path() / "one.safetensors");
  dir.write_text("model.safetensors.index.json",
                 index_json({{"embed", "one.safetensors"}, {"layer.0", "one.safetensors"}}));
  auto checkpoint = Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  EXPECT_EQ(checkpoint.value().shards()[0].path, fs::canonical(dir.path() / "blobs/abc123"));
}

}  // namespace
}  // namespace rootspan::weights
