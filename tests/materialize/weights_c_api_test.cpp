// Materialization through the C API of weights.h (docs/weight-schema.md):
// rootspan_weights_load and its accessors, as an embedding program sees them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "../weights/allocation_tracking.hpp"
#include "c_api_load_fixture.hpp"

namespace rootspan::testing {
namespace {

class WeightsCApiTest : public UploadCApiLoadTest {
 protected:
  // No provider releases a block twice.
  void TearDown() override {
    UploadCApiLoadTest::TearDown();
    EXPECT_EQ(upload_counters().double_release.load(), 0);
  }

  static rootspan_load_options options(const char *provider = "host") {
    rootspan_load_options o = CApiLoadTest::options(provider);
    o.strategy = ROOTSPAN_LOAD_MMAP;
    return o;
  }

  std::size_t count() const {
    std::size_t n = 0;
    EXPECT_EQ(rootspan_weights_component_count(weights_, &n), ROOTSPAN_OK);
    return n;
  }

  rootspan_component_info info(std::size_t index) const {
    rootspan_component_info i{};
    i.struct_size = sizeof i;
    EXPECT_EQ(rootspan_weights_component(weights_, index, &i), ROOTSPAN_OK);
    return i;
  }

  static rootspan_root_info root_info(const rootspan_root *root) {
    rootspan_root_info i{};
    i.struct_size = sizeof i;
    EXPECT_EQ(rootspan_root_get_info(root, &i), ROOTSPAN_OK);
    return i;
  }

  // The component's bytes as the provider holds them, through a shared claim
  // and rootspan_copy_to_host.
  static std::vector<std::byte> read_back(rootspan_root *root) {
    const rootspan_root_info ri = root_info(root);
    std::vector<std::byte> out(ri.byte_length);
    rootspan_claim *claim = nullptr;
    rootspan_error *raw = nullptr;
    if (rootspan_claim_acquire(root, 0, ri.byte_length, ROOTSPAN_CLAIM_SHARED, &claim, &raw) != ROOTSPAN_OK) {
      ADD_FAILURE() << describe(raw);
      rootspan_error_free(raw);
      return {};
    }
    EXPECT_EQ(rootspan_copy_to_host(claim, 0, out.data(), out.size(), &raw), ROOTSPAN_OK) << describe(raw);
    EXPECT_EQ(rootspan_claim_release(claim, nullptr), ROOTSPAN_OK);
    return out;
  }

  // The component's bytes through a read mapping (host roots only).
  static std::vector<std::byte> map_back(rootspan_root *root, rootspan_dtype dtype) {
    const rootspan_root_info ri = root_info(root);
    rootspan_claim *claim = nullptr;
    rootspan_mapping *mapping = nullptr;
    rootspan_error *raw = nullptr;
    if (rootspan_claim_acquire(root, 0, ri.byte_length, ROOTSPAN_CLAIM_SHARED, &claim, &raw) != ROOTSPAN_OK) {
      ADD_FAILURE() << describe(raw);
      rootspan_error_free(raw);
      return {};
    }
    std::vector<std::byte> out;
    if (rootspan_map_read(claim, dtype, 0, ri.byte_length, &mapping, &raw) == ROOTSPAN_OK) {
      const auto *data = static_cast<const std::byte *>(rootspan_mapping_data(mapping));
      out.assign(data, data + rootspan_mapping_length(mapping));
      rootspan_unmap(mapping);
    } else {
      ADD_FAILURE() << describe(raw);
      rootspan_error_free(raw);
    }
    EXPECT_EQ(rootspan_claim_release(claim, nullptr), ROOTSPAN_OK);
    return out;
  }

  TempDir dir_;
};

// ---- zero-copy and copies on the host -----------------------------------

TEST_F(WeightsCApiTest, AnAlignedSingleSegmentComponentIsAZeroCopyReadOnlyRoot) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"w", "F32", {8, 16}}}, 21, 64, 0);
  ASSERT_EQ(file.tensors.at("w").first % 64, 0u);
  ASSERT_EQ(load(file.path, options()), ROOTSPAN_OK) << message();
  ASSERT_EQ(count(), 1u);
  const rootspan_component_info c = info(0);
  EXPECT_STREQ(c.id, "w");
  EXPECT_EQ(c.byte_length, 512u);
  EXPECT_EQ(c.segments, 1u);
  EXPECT_EQ(c.zero_copy, 1);
  const rootspan_root_info ri = root_info(c.root);
  EXPECT_EQ(ri.read_only, 1);
  EXPECT_EQ(ri.host_accessible, 1);
  EXPECT_EQ(ri.byte_length, 512u);
  EXPECT_EQ(ri.dtype, ROOTSPAN_DTYPE_F32);
  EXPECT_STREQ(ri.provider, "host");
  EXPECT_STREQ(rootspan_weights_provider(weights_), "host");
  EXPECT_EQ(map_back(c.root, ROOTSPAN_DTYPE_F32), file.tensor("w"));
  EXPECT_EQ(read_back(c.root), file.tensor("w"));

  // Read-only: no exclusive claim.
  rootspan_claim *claim = nullptr;
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_claim_acquire(c.root, 0, 4, ROOTSPAN_CLAIM_EXCLUSIVE, &claim, &raw), ROOTSPAN_ERR_READ_ONLY);
  rootspan_error_free(raw);
}

TEST_F(WeightsCApiTest, AZeroCopyRootKeepsItsBytesAfterTheFileIsRemoved) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"w", "U8", {4096}}}, 22);
  ASSERT_EQ(load(file.path, options()), ROOTSPAN_OK) << message();
  ASSERT_EQ(info(0).zero_copy, 1);
  ASSERT_TRUE(fs::remove(file.path));
  EXPECT_EQ(read_back(info(0).root), file.tensor("w"));
}

TEST_F(WeightsCApiTest, APackedComponentAcrossTwoShardsIsOneRootOfTheConcatenation) {
  const WrittenFile a = write_safetensors(dir_, "model-00001-of-00002.safetensors",
                                          {{"layer.gate", "F32", {16, 8}}, {"other", "U8", {5}}}, 31);
  const WrittenFile b = write_safetensors(dir_, "model-00002-of-00002.safetensors", {{"layer.up", "F32", {16, 8}}}, 32);
  write_index(dir_, {{"model-00001-of-00002.safetensors", &a}, {"model-00002-of-00002.safetensors", &b}});
  const fs::path schema = dir_.write_text(
      "schema.json",
      schema_json({dense_component("layer.gate_up", "packed_values", {"layer.gate", "layer.up"}, {2, 16, 8}, "F32")}));
  rootspan_load_options o = options();
  o.schema_path = schema.c_str();
  ASSERT_EQ(load(dir_.path(), o), ROOTSPAN_OK) << message();
  ASSERT_EQ(count(), 1u);
  const rootspan_component_info c = info(0);
  EXPECT_STREQ(c.id, "layer.gate_up");
  EXPECT_EQ(c.segments, 2u);
  EXPECT_EQ(c.zero_copy, 0);
  EXPECT_EQ(c.byte_length, 1024u);
  const rootspan_root_info ri = root_info(c.root);
  EXPECT_EQ(ri.read_only, 0);
  EXPECT_EQ(ri.byte_length, 1024u);
  EXPECT_EQ(read_back(c.root), concat({a.tensor("layer.gate"), b.tensor("layer.up")}));
  EXPECT_EQ(live_roots(), 1u);  // one root, no per-segment roots
}

TEST_F(WeightsCApiTest, ThePackedOrderIsTheSchemaOrder) {
  const WrittenFile a = write_safetensors(dir_, "a.safetensors", {{"x", "I16", {40}}}, 41);
  const WrittenFile b = write_safetensors(dir_, "b.safetensors", {{"y", "I16", {40}}}, 42);
  write_index(dir_, {{"a.safetensors", &a}, {"b.safetensors", &b}});
  const fs::path schema =
      dir_.write_text("schema.json", schema_json({dense_component("yx", "packed_values", {"y", "x"}, {80}, "I16")}));
  rootspan_load_options o = options();
  o.schema_path = schema.c_str();
  ASSERT_EQ(load(dir_.path(), o), ROOTSPAN_OK) << message();
  ASSERT_NE(a.tensor("x"), b.tensor("y"));
  EXPECT_EQ(read_back(info(0).root), concat({b.tensor("y"), a.tensor("x")}));
}

TEST_F(WeightsCApiTest, TheReadStrategyIsNeverZeroCopy) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"w", "F32", {8, 16}}}, 23, 64, 0);
  rootspan_load_options o = options();
  o.strategy = ROOTSPAN_LOAD_READ;
  ASSERT_EQ(load(file.path, o), ROOTSPAN_OK) << message();
  const rootspan_component_info c = info(0);
  EXPECT_EQ(c.zero_copy, 0);
  EXPECT_EQ(root_info(c.root).read_only, 0);
  EXPECT_EQ(read_back(c.root), file.tensor("w"));
}

TEST_F(WeightsCApiTest, AnF32AtAnOddFileOffsetIsCopiedNotZeroCopy) {
  // The header is padded so that the data section, and with it the F32
  // tensor, starts at an odd file offset.
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"w", "F32", {33}}}, 24, 8, 1);
  ASSERT_EQ(file.tensors.at("w").first % 2, 1u);
  ASSERT_EQ(load(file.path, options()), ROOTSPAN_OK) << message();
  const rootspan_component_info c = info(0);
  EXPECT_EQ(c.zero_copy, 0);
  EXPECT_EQ(c.segments, 1u);
  const rootspan_root_info ri = root_info(c.root);
  EXPECT_EQ(ri.dtype, ROOTSPAN_DTYPE_F32);
  EXPECT_GE(ri.alignment, 4u);
  EXPECT_EQ(map_back(c.root, ROOTSPAN_DTYPE_F32), file.tensor("w"));
}

TEST_F(WeightsCApiTest, AnF32AtAnOffsetOfTwoModFourIsCopiedToo) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"w", "F32", {33}}}, 25, 8, 2);
  ASSERT_EQ(load(file.path, options()), ROOTSPAN_OK) << message();
  EXPECT_EQ(info(0).zero_copy, 0);
  EXPECT_EQ(read_back(info(0).root), file.tensor("w"));
}

TEST_F(WeightsCApiTest, BytesAtAnOddOffsetNeedNoAlignmentAndStayZeroCopy) {
  // U8 has alignment 1: an odd file offset does not stop a zero-copy root.
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"w", "U8", {33}}}, 26, 8, 1);
  ASSERT_EQ(load(file.path, options()), ROOTSPAN_OK) << message();
  EXPECT_EQ(info(0).zero_copy, 1);
  EXPECT_EQ(read_back(info(0).root), file.tensor("w"));
}

// ---- a provider without host access --------------------------------------

TEST_F(WeightsCApiTest, AProviderWithoutHostAccessGetsItsBytesUploaded) {
  const WrittenFile a = write_safetensors(dir_, "a.safetensors", {{"p", "F16", {300}}, {"q", "F32", {7}}}, 51);
  const WrittenFile b = write_safetensors(dir_, "b.safetensors", {{"r", "F16", {300}}}, 52);
  write_index(dir_, {{"a.safetensors", &a}, {"b.safetensors", &b}});
  const fs::path schema =
      dir_.write_text("schema.json", schema_json({dense_component("pr", "packed_values", {"p", "r"}, {600}, "F16"),
                                                  dense_component("q", "values", {"q"}, {7}, "F32")}));
  rootspan_load_options o = options(kUploadProviderName);
  o.schema_path = schema.c_str();
  ASSERT_EQ(load(dir_.path(), o), ROOTSPAN_OK) << message();
  ASSERT_EQ(count(), 2u);
  EXPECT_STREQ(rootspan_weights_provider(weights_), kUploadProviderName);
  const rootspan_component_info pr = info(0);
  const rootspan_component_info q = info(1);
  EXPECT_EQ(pr.zero_copy, 0);
  EXPECT_EQ(q.zero_copy, 0);
  EXPECT_EQ(root_info(pr.root).host_accessible, 0);
  EXPECT_STREQ(root_info(pr.root).provider, kUploadProviderName);
  EXPECT_EQ(read_back(pr.root), concat({a.tensor("p"), b.tensor("r")}));
  EXPECT_EQ(read_back(q.root), a.tensor("q"));
  EXPECT_EQ(upload_counters().allocated.load(), 2);
}

// ---- cancellation and failures -------------------------------------------

struct CancelAt {
  int calls = 0;
  int cancel_at = 0;
  std::vector<std::string> components;
};

int cancel_progress(void *context, const rootspan_load_progress *progress) {
  auto *c = static_cast<CancelAt *>(context);
  c->components.emplace_back(progress->component);
  return ++c->calls >= c->cancel_at ? 1 : 0;
}

TEST_F(WeightsCApiTest, CancellingFromTheProgressCallbackLeavesNoRoot) {
  const WrittenFile file = write_safetensors(
      dir_, "model.safetensors", {{"a", "F32", {16}}, {"b", "F32", {16}}, {"c", "F32", {16}}, {"d", "U8", {3}}}, 61);
  CancelAt cancel;
  cancel.cancel_at = 2;
  rootspan_load_options o = options();
  o.progress = cancel_progress;
  o.progress_context = &cancel;
  ASSERT_EQ(load(file.path, o), ROOTSPAN_ERR_CANCELLED) << message();
  EXPECT_EQ(rootspan_error_code(error_.get()), ROOTSPAN_ERR_CANCELLED);
  EXPECT_EQ(cancel.calls, 2);
  EXPECT_EQ(live_roots(), 0u);
  EXPECT_EQ(weights_, nullptr);
}

TEST_F(WeightsCApiTest, CancellingAnUploadLeavesNoRootInTheProvider) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"a", "U8", {100}}, {"b", "U8", {100}}}, 62);
  CancelAt cancel;
  cancel.cancel_at = 2;
  rootspan_load_options o = options(kUploadProviderName);
  o.progress = cancel_progress;
  o.progress_context = &cancel;
  ASSERT_EQ(load(file.path, o), ROOTSPAN_ERR_CANCELLED) << message();
  EXPECT_EQ(live_roots(), 0u);
  EXPECT_EQ(upload_live_blocks(), 0);
  EXPECT_EQ(upload_counters().allocated.load(), 2);
  EXPECT_EQ(upload_counters().release.load(), 2);
}

TEST_F(WeightsCApiTest, AnAllocationFailureOnTheSecondComponentReleasesTheFirst) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"a", "U8", {100}}, {"b", "U8", {100}}}, 63);
  upload_behaviour().fail_allocate_at = 2;
  ASSERT_EQ(load(file.path, options(kUploadProviderName)), ROOTSPAN_ERR_OUT_OF_MEMORY) << message();
  EXPECT_NE(message().find("\"b\""), std::string::npos) << message();
  EXPECT_EQ(live_roots(), 0u);
  EXPECT_EQ(upload_live_blocks(), 0);
}

TEST_F(WeightsCApiTest, AFileTruncatedAfterItsHeaderWasReadFailsWithNoRootLeft) {
  // The C API opens and loads in one call; a file that is already short when
  // it is opened is rejected by the header check (docs/weight-schema.md), with exit
  // status 3 in the CLI. Truncation between open and load is covered by
  // materialize_test.cpp (TruncatedAfterOpen).
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"a", "F32", {16}}, {"b", "F32", {64}}}, 64);
  ASSERT_EQ(::truncate(file.path.c_str(), static_cast<off_t>(file.bytes.size() - 10)), 0);
  ASSERT_EQ(load(file.path, options()), ROOTSPAN_ERR_INVALID_CHECKPOINT) << message();
  EXPECT_EQ(live_roots(), 0u);
}

// ---- schema outcomes ------------------------------------------------------

TEST_F(WeightsCApiTest, ARequiredComponentWithMissingSourcesFailsNamingComponentAndTensor) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"a", "F32", {16}}}, 71);
  const fs::path schema = dir_.write_text(
      "schema.json", schema_json({dense_component("a", "values", {"a"}, {16}, "F32"),
                                  dense_component("attn.q", "values", {"model.q_proj.weight"}, {16}, "F32")}));
  rootspan_load_options o = options();
  o.schema_path = schema.c_str();
  ASSERT_EQ(load(file.path, o), ROOTSPAN_ERR_INVALID_PAYLOAD) << message();
  EXPECT_NE(message().find("\"attn.q\""), std::string::npos) << message();
  EXPECT_NE(message().find("\"model.q_proj.weight\""), std::string::npos) << message();
  EXPECT_NE(message().find("required"), std::string::npos) << message();
  EXPECT_STREQ(rootspan_error_operation(error_.get()), "load_component");
  std::uint64_t expected = 0, actual = 0;
  ASSERT_EQ(rootspan_error_values(error_.get(), &expected, &actual), 1);
  EXPECT_EQ(expected, 1u);  // sources named
  EXPECT_EQ(actual, 0u);    // sources found
  EXPECT_EQ(live_roots(), 0u);
}

TEST_F(WeightsCApiTest, AnOptionalComponentWithMissingSourcesIsSkipped) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"a", "F32", {16}}}, 72);
  const fs::path schema = dir_.write_text(
      "schema.json",
      schema_json({dense_component("a", "values", {"a"}, {16}, "F32"),
                   dense_component("a.scales", "scales", {"a.scales"}, {4}, "F16", /*required=*/false)}));
  rootspan_load_options o = options();
  o.schema_path = schema.c_str();
  ASSERT_EQ(load(file.path, o), ROOTSPAN_OK) << message();
  EXPECT_EQ(count(), 1u);
  std::size_t skipped = 0;
  ASSERT_EQ(rootspan_weights_skipped_count(weights_, &skipped), ROOTSPAN_OK);
  ASSERT_EQ(skipped, 1u);
  const char *id = nullptr;
  const char *reason = nullptr;
  ASSERT_EQ(rootspan_weights_skipped(weights_, 0, &id, &reason), ROOTSPAN_OK);
  EXPECT_STREQ(id, "a.scales");
  EXPECT_NE(std::string(reason).find("\"a.scales\""), std::string::npos) << reason;
  EXPECT_EQ(rootspan_weights_skipped(weights_, 1, &id, &reason), ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_EQ(live_roots(), 1u);
}

// ---- verify and free ------------------------------------------------------

TEST_F(WeightsCApiTest, ComponentSha256EqualsAnIndependentDigestOfTheFileBytes) {
  const WrittenFile a = write_safetensors(dir_, "a.safetensors", {{"z", "F32", {64}}, {"m", "F32", {5}}}, 81, 8, 4);
  const WrittenFile b = write_safetensors(dir_, "b.safetensors", {{"n", "F32", {5}}}, 82);
  write_index(dir_, {{"a.safetensors", &a}, {"b.safetensors", &b}});
  const fs::path schema =
      dir_.write_text("schema.json", schema_json({dense_component("z", "values", {"z"}, {64}, "F32"),
                                                  dense_component("mn", "packed_values", {"m", "n"}, {10}, "F32")}));
  for (const char *provider : {"host", kUploadProviderName}) {
    SCOPED_TRACE(provider);
    rootspan_load_options o = options(provider);
    o.schema_path = schema.c_str();
    ASSERT_EQ(load(dir_.path(), o), ROOTSPAN_OK) << message();
    ASSERT_EQ(count(), 2u);
    const std::vector<std::vector<std::byte>> expected = {a.tensor("z"), concat({a.tensor("m"), b.tensor("n")})};
    for (std::size_t i = 0; i < 2; ++i) {
      char hex[65] = {};
      rootspan_error *raw = nullptr;
      ASSERT_EQ(rootspan_weights_component_sha256(weights_, i, hex, &raw), ROOTSPAN_OK) << describe(raw);
      EXPECT_EQ(std::string(hex), sha256_hex(expected[i])) << info(i).id;
      EXPECT_EQ(std::string(hex).size(), 64u);
    }
    if (std::string(provider) == "host") {
      EXPECT_EQ(info(0).zero_copy, 1);
    }
    char hex[65];
    rootspan_error *raw = nullptr;
    EXPECT_EQ(rootspan_weights_component_sha256(weights_, 2, hex, &raw), ROOTSPAN_ERR_INVALID_ARGUMENT);
    rootspan_error_free(raw);
    ASSERT_EQ(rootspan_weights_free(weights_, nullptr), ROOTSPAN_OK);
    weights_ = nullptr;
    EXPECT_EQ(live_roots(), 0u);
  }
}

// The component info says where each component's bytes lie: the file of its
// first segment, the offset there, and whether that range is all of it.
TEST_F(WeightsCApiTest, ComponentInfoSaysWhereItsBytesLie) {
  const WrittenFile a = write_safetensors(dir_, "a.safetensors", {{"z", "F32", {64}}, {"m", "F32", {5}}}, 83, 8, 4);
  const WrittenFile b = write_safetensors(dir_, "b.safetensors", {{"n", "F32", {5}}, {"c", "F32", {4, 8}}}, 84);
  write_index(dir_, {{"a.safetensors", &a}, {"b.safetensors", &b}});
  const fs::path schema =
      dir_.write_text("schema.json", schema_json({dense_component("z", "values", {"z"}, {64}, "F32"),
                                                  dense_component("mn", "packed_values", {"m", "n"}, {10}, "F32"),
                                                  dense_component("c", "values", {"c"}, {4, 8}, "F32")}));
  rootspan_load_options o = options();
  o.schema_path = schema.c_str();
  ASSERT_EQ(load(dir_.path(), o), ROOTSPAN_OK) << message();
  ASSERT_EQ(count(), 3u);
  EXPECT_STREQ(info(0).source_file, "a.safetensors");
  EXPECT_EQ(info(0).source_offset, a.tensors.at("z").first);
  EXPECT_EQ(info(0).source_contiguous, 1);
  EXPECT_STREQ(info(1).source_file, "a.safetensors");  // its first segment, m
  EXPECT_EQ(info(1).source_offset, a.tensors.at("m").first);
  EXPECT_EQ(info(1).source_contiguous, 0);  // m in a, then n in b
  EXPECT_STREQ(info(2).source_file, "b.safetensors");
  EXPECT_EQ(info(2).source_offset, b.tensors.at("c").first);
  EXPECT_EQ(info(2).source_contiguous, 1);
  ASSERT_EQ(rootspan_weights_free(weights_, nullptr), ROOTSPAN_OK);
  weights_ = nullptr;

  // Rank 1 of a column split of c: 4 rows of 4 floats, the first 16 bytes in.
  const rootspan_split_rule rule = {sizeof(rootspan_split_rule), "c", 1};
  o.rank = 1;
  o.world_size = 2;
  o.split_rules = &rule;
  o.split_rule_count = 1;
  ASSERT_EQ(load(dir_.path(), o), ROOTSPAN_OK) << message();
  std::size_t c = 0;
  ASSERT_EQ(rootspan_weights_find(weights_, "c", &c), ROOTSPAN_OK);
  EXPECT_STREQ(info(c).source_file, "b.safetensors");
  EXPECT_EQ(info(c).source_offset, b.tensors.at("c").first + 16);
  EXPECT_EQ(info(c).byte_length, 64u);
  EXPECT_EQ(info(c).source_contiguous, 0);  // rows 32 bytes apart
}

// source_digests: each component's file bytes hashed while the load reads
// them, equal to the digest of provider memory, whatever the strategy.
TEST_F(WeightsCApiTest, SourceDigestsAreTheFileBytesTheLoadRead) {
  const WrittenFile a = write_safetensors(dir_, "a.safetensors", {{"z", "F32", {64}}, {"m", "F32", {5}}}, 85, 8, 4);
  const WrittenFile b = write_safetensors(dir_, "b.safetensors", {{"n", "F32", {5}}}, 86);
  write_index(dir_, {{"a.safetensors", &a}, {"b.safetensors", &b}});
  const fs::path schema =
      dir_.write_text("schema.json", schema_json({dense_component("z", "values", {"z"}, {64}, "F32"),
                                                  dense_component("mn", "packed_values", {"m", "n"}, {10}, "F32")}));
  const std::vector<std::vector<std::byte>> expected = {a.tensor("z"), concat({a.tensor("m"), b.tensor("n")})};
  struct Case {
    const char *provider;
    rootspan_load_strategy strategy;
  };
  for (const Case &k : {Case{"host", ROOTSPAN_LOAD_MMAP}, Case{"host", ROOTSPAN_LOAD_READ},
                        Case{kUploadProviderName, ROOTSPAN_LOAD_READ}}) {
    SCOPED_TRACE(std::string(k.provider) + " strategy " + std::to_string(k.strategy));
    rootspan_load_options o = options(k.provider);
    o.schema_path = schema.c_str();
    o.strategy = k.strategy;
    o.source_digests = 1;
    // The progress counts the source hashing too: every byte loaded, once more.
    std::pair<std::uint64_t, std::uint64_t> last;  // done, total
    o.progress_context = &last;
    o.progress = [](void *context, const rootspan_load_progress *p) {
      *static_cast<std::pair<std::uint64_t, std::uint64_t> *>(context) = {p->bytes_done, p->bytes_total};
      return 0;
    };
    ASSERT_EQ(load(dir_.path(), o), ROOTSPAN_OK) << message();
    EXPECT_EQ(last.second, 2 * (expected[0].size() + expected[1].size()));
    EXPECT_EQ(last.first, last.second) << "the last report says all is done";
    for (std::size_t i = 0; i < 2; ++i) {
      char source[65] = {}, held[65] = {};
      rootspan_error *raw = nullptr;
      ASSERT_EQ(rootspan_weights_source_sha256(weights_, i, source, &raw), ROOTSPAN_OK) << describe(raw);
      ASSERT_EQ(rootspan_weights_component_sha256(weights_, i, held, &raw), ROOTSPAN_OK) << describe(raw);
      EXPECT_EQ(std::string(source), sha256_hex(expected[i])) << info(i).id;
      EXPECT_STREQ(source, held);
    }
    rootspan_error *raw = nullptr;
    char hex[65];
    EXPECT_EQ(rootspan_weights_source_sha256(weights_, 2, hex, &raw), ROOTSPAN_ERR_INVALID_ARGUMENT);
    ASSERT_NE(raw, nullptr);
    EXPECT_NE(std::string(rootspan_error_cause(raw)).find("index 2 is past the 2 components"), std::string::npos)
        << rootspan_error_cause(raw);
    rootspan_error_free(raw);
    EXPECT_EQ(rootspan_weights_source_sha256(weights_, 0, nullptr, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(rootspan_weights_source_sha256(nullptr, 0, hex, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
    ASSERT_EQ(rootspan_weights_free(weights_, nullptr), ROOTSPAN_OK);
    weights_ = nullptr;
  }

  // Not asked for: NotFound, naming the component and the option.
  rootspan_load_options o = options();
  o.schema_path = schema.c_str();
  ASSERT_EQ(load(dir_.path(), o), ROOTSPAN_OK) << message();
  char hex[65];
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_weights_source_sha256(weights_, 1, hex, &raw), ROOTSPAN_ERR_NOT_FOUND);
  ASSERT_NE(raw, nullptr);
  EXPECT_STREQ(rootspan_error_operation(raw), "weights_source_sha256");
  EXPECT_NE(std::string(rootspan_error_cause(raw)).find("component \"mn\" has no source digest"), std::string::npos);
  rootspan_error_free(raw);
}

TEST_F(WeightsCApiTest, FreeIsBusyWhileAComponentIsClaimedThenSucceeds) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"a", "F32", {16}}, {"b", "U8", {16}}}, 91);
  ASSERT_EQ(load(file.path, options()), ROOTSPAN_OK) << message();
  ASSERT_EQ(count(), 2u);
  rootspan_claim *claim = nullptr;
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_claim_acquire(info(1).root, 0, 16, ROOTSPAN_CLAIM_SHARED, &claim, &raw), ROOTSPAN_OK)
      << describe(raw);

  ASSERT_EQ(rootspan_weights_free(weights_, &raw), ROOTSPAN_ERR_BUSY);
  ErrorPtr busy(raw);
  EXPECT_NE(std::string(rootspan_error_message(busy.get())).find("\"b\""), std::string::npos)
      << rootspan_error_message(busy.get());
  // Nothing was released: both components are still there and readable.
  EXPECT_EQ(live_roots(), 2u);
  EXPECT_EQ(count(), 2u);
  EXPECT_EQ(read_back(info(0).root), file.tensor("a"));

  ASSERT_EQ(rootspan_claim_release(claim, nullptr), ROOTSPAN_OK);
  raw = nullptr;
  ASSERT_EQ(rootspan_weights_free(weights_, &raw), ROOTSPAN_OK) << describe(raw);
  weights_ = nullptr;
  EXPECT_EQ(live_roots(), 0u);
  EXPECT_EQ(rootspan_weights_free(nullptr, nullptr), ROOTSPAN_OK);
}

// ---- copy-on-write, one component at a time, in-memory headers -----------

std::vector<std::byte> read_file(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

TEST_F(WeightsCApiTest, ACopyOnWriteRootIsWritableAndTheFileNeverChanges) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"w", "F32", {8, 16}}}, 23, 64, 0);
  rootspan_load_options o = options();
  o.copy_on_write = 1;
  ASSERT_EQ(load(file.path, o), ROOTSPAN_OK) << message();
  const rootspan_component_info c = info(0);
  EXPECT_EQ(c.zero_copy, 1);
  EXPECT_EQ(c.read_only, 0);
  EXPECT_EQ(root_info(c.root).read_only, 0);

  rootspan_claim *claim = nullptr;
  rootspan_mapping *mapping = nullptr;
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_claim_acquire(c.root, 0, 512, ROOTSPAN_CLAIM_EXCLUSIVE, &claim, &raw), ROOTSPAN_OK)
      << describe(raw);
  ASSERT_EQ(rootspan_map_write(claim, ROOTSPAN_DTYPE_F32, 0, 512, &mapping, &raw), ROOTSPAN_OK) << describe(raw);
  std::memset(rootspan_mapping_data(mapping), 0x5a, 512);
  rootspan_unmap(mapping);
  ASSERT_EQ(rootspan_claim_release(claim, nullptr), ROOTSPAN_OK);

  EXPECT_EQ(read_back(c.root), std::vector<std::byte>(512, std::byte{0x5a})) << "the write is in memory";
  EXPECT_EQ(read_file(file.path), file.bytes) << "and never in the file";
  EXPECT_STREQ(c.source_name, "w");
}

TEST_F(WeightsCApiTest, ReleasingOneComponentKeepsTheOthersAndFreeSkipsIt) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"a", "F32", {16}}, {"b", "U8", {16}}}, 92);
  ASSERT_EQ(load(file.path, options()), ROOTSPAN_OK) << message();
  rootspan_claim *claim = nullptr;
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_claim_acquire(info(1).root, 0, 16, ROOTSPAN_CLAIM_SHARED, &claim, &raw), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_weights_release_component(weights_, 1, &raw), ROOTSPAN_ERR_BUSY) << "b is claimed";
  ErrorPtr busy(raw);
  EXPECT_NE(std::string(rootspan_error_message(busy.get())).find("\"b\""), std::string::npos);
  EXPECT_EQ(live_roots(), 2u);

  raw = nullptr;
  ASSERT_EQ(rootspan_weights_release_component(weights_, 0, &raw), ROOTSPAN_OK) << describe(raw);
  EXPECT_EQ(live_roots(), 1u);
  EXPECT_EQ(info(0).root, nullptr) << "a released component reports no root";
  EXPECT_STREQ(info(0).id, "a") << "but keeps its id";
  EXPECT_EQ(rootspan_weights_release_component(weights_, 0, nullptr), ROOTSPAN_OK) << "a second release does nothing";
  char hex[65];
  EXPECT_EQ(rootspan_weights_component_sha256(weights_, 0, hex, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rootspan_weights_release_component(weights_, 2, &raw), ROOTSPAN_ERR_NOT_FOUND);
  ErrorPtr missing(raw);
  EXPECT_NE(std::string(rootspan_error_message(missing.get())).find("no component at index 2; the weights hold 2"),
            std::string::npos)
      << rootspan_error_message(missing.get());
  EXPECT_EQ(rootspan_weights_release_component(nullptr, 0, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
  // With a released, the first root free checks is b's: the error names it by its component.
  raw = nullptr;
  ASSERT_EQ(rootspan_weights_free(weights_, &raw), ROOTSPAN_ERR_BUSY);
  ErrorPtr still(raw);
  EXPECT_NE(std::string(rootspan_error_message(still.get())).find("component \"b\" is still claimed"),
            std::string::npos)
      << rootspan_error_message(still.get());

  ASSERT_EQ(rootspan_claim_release(claim, nullptr), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_weights_free(weights_, &raw), ROOTSPAN_OK) << describe(raw);  // only b was left
  weights_ = nullptr;
  EXPECT_EQ(live_roots(), 0u);
}

// ---- every component claimed and mapped in one call -----------------------

class MapComponentsTest : public WeightsCApiTest {
 protected:
  static std::vector<rootspan_component_mapping> sized(std::size_t n) {
    std::vector<rootspan_component_mapping> m(n);
    for (rootspan_component_mapping &one : m) one.struct_size = sizeof one;
    return m;
  }
  static void unmap_all(const std::vector<rootspan_component_mapping> &mappings) {
    for (const rootspan_component_mapping &m : mappings) {
      EXPECT_EQ(rootspan_unmap(m.mapping), ROOTSPAN_OK);
      EXPECT_EQ(rootspan_claim_release(m.claim, nullptr), ROOTSPAN_OK);
    }
  }
  // The error's message after a failed call (and the error freed).
  static std::string failure(rootspan_error *raw) {
    ErrorPtr e(raw);
    return e ? rootspan_error_message(e.get()) : std::string("(no error)");
  }
  // Loads tensors_ (written with `seed`) and maps all three components in one call.
  void load_and_map_all(int seed, std::vector<rootspan_component_mapping> &mappings) {
    const WrittenFile file = write_safetensors(dir_, "model.safetensors", tensors_, seed);
    ASSERT_EQ(load(file.path, options()), ROOTSPAN_OK) << message();
    mappings = sized(3);
    rootspan_error *raw = nullptr;
    ASSERT_EQ(rootspan_weights_map_components(weights_, 0, 3, mappings.data(), &raw), ROOTSPAN_OK) << failure(raw);
  }
  const std::vector<TensorSpec> tensors_{{"a", "F32", {16}}, {"b", "U8", {16}}, {"c", "F32", {8}}};
};

TEST_F(MapComponentsTest, EachComponentIsClaimedAndMappedWholeForTheCaller) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", tensors_, 93);
  for (const rootspan_load_strategy strategy : {ROOTSPAN_LOAD_MMAP, ROOTSPAN_LOAD_READ}) {
    rootspan_load_options o = options();
    o.strategy = strategy;
    ASSERT_EQ(load(file.path, o), ROOTSPAN_OK) << message();
    std::vector<rootspan_component_mapping> mappings = sized(3);
    rootspan_error *raw = nullptr;
    ASSERT_EQ(rootspan_weights_map_components(weights_, 0, 3, mappings.data(), &raw), ROOTSPAN_OK) << failure(raw);
    for (std::size_t i = 0; i < 3; ++i) {
      const rootspan_component_info c = info(i);
      const rootspan_component_mapping &m = mappings[i];
      ASSERT_EQ(m.byte_length, c.byte_length) << c.id;
      EXPECT_EQ(m.writable, c.read_only ? 0 : 1) << c.id << " strategy " << strategy;
      EXPECT_EQ(m.data, rootspan_mapping_data(m.mapping));
      EXPECT_EQ(m.byte_length, rootspan_mapping_length(m.mapping));
      const auto *bytes = static_cast<const std::byte *>(m.data);
      EXPECT_EQ(std::vector<std::byte>(bytes, bytes + m.byte_length), file.tensor(c.id)) << c.id;
      rootspan_span span{};
      span.struct_size = sizeof span;
      rootspan_claim_mode mode{};
      ASSERT_EQ(rootspan_claim_get_span(m.claim, &span, &mode), ROOTSPAN_OK);
      EXPECT_EQ(span.length, c.byte_length) << "the whole component is claimed";
      EXPECT_EQ(mode, c.read_only ? ROOTSPAN_CLAIM_SHARED : ROOTSPAN_CLAIM_EXCLUSIVE) << c.id;
    }
    EXPECT_EQ(rootspan_weights_free(weights_, &raw), ROOTSPAN_ERR_BUSY) << "the caller's claims hold the roots";
    EXPECT_NE(failure(raw).find("\"a\""), std::string::npos);
    unmap_all(mappings);
  }
}

TEST_F(MapComponentsTest, AComponentClaimedElsewhereFailsTheCallAndLeavesNothingMapped) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", tensors_, 94);
  rootspan_load_options o = options();
  o.strategy = ROOTSPAN_LOAD_READ;  // writable roots: exclusive claims
  ASSERT_EQ(load(file.path, o), ROOTSPAN_OK) << message();
  rootspan_claim *held = nullptr;
  ASSERT_EQ(rootspan_claim_acquire(info(1).root, 0, 16, ROOTSPAN_CLAIM_SHARED, &held, nullptr), ROOTSPAN_OK);
  std::vector<rootspan_component_mapping> mappings = sized(3);
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_weights_map_components(weights_, 0, 3, mappings.data(), &raw), ROOTSPAN_ERR_CONFLICT);
  const std::string why = failure(raw);
  EXPECT_NE(why.find("component \"b\" (index 1)"), std::string::npos) << why;
  EXPECT_EQ(mappings[0].claim, nullptr) << "nothing written on failure";
  ASSERT_EQ(rootspan_claim_release(held, nullptr), ROOTSPAN_OK);
  // a, mapped before b failed, was handed back: the component can be released.
  EXPECT_EQ(rootspan_weights_release_component(weights_, 0, &raw), ROOTSPAN_OK) << failure(raw);

  // A released component in the range fails the call the same way.
  raw = nullptr;
  ASSERT_EQ(rootspan_weights_map_components(weights_, 0, 2, mappings.data(), &raw), ROOTSPAN_ERR_INVALID_ARGUMENT);
  const std::string released = failure(raw);
  EXPECT_NE(released.find("component \"a\" (index 0) was released"), std::string::npos) << released;
  raw = nullptr;
  ASSERT_EQ(rootspan_weights_map_components(weights_, 1, 2, mappings.data(), &raw), ROOTSPAN_OK) << failure(raw);
  mappings.resize(2);
  unmap_all(mappings);
}

TEST_F(MapComponentsTest, BadArgumentsAreRefusedNamingWhatWasWrong) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", tensors_, 95);
  ASSERT_EQ(load(file.path, options()), ROOTSPAN_OK) << message();
  std::vector<rootspan_component_mapping> mappings = sized(3);
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_weights_map_components(nullptr, 0, 1, mappings.data(), &raw), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(failure(raw).find("weights or mappings is NULL"), std::string::npos);
  raw = nullptr;
  EXPECT_EQ(rootspan_weights_map_components(weights_, 0, 1, nullptr, &raw), ROOTSPAN_ERR_INVALID_ARGUMENT);
  rootspan_error_free(raw);

  mappings[1].struct_size = 4;
  raw = nullptr;
  EXPECT_EQ(rootspan_weights_map_components(weights_, 0, 3, mappings.data(), &raw), ROOTSPAN_ERR_INVALID_ARGUMENT);
  const std::string short_struct = failure(raw);
  EXPECT_NE(short_struct.find("mappings[1].struct_size 4"), std::string::npos) << short_struct;
  EXPECT_NE(short_struct.find("expected " + std::to_string(ROOTSPAN_COMPONENT_MAPPING_STRUCT_SIZE) + ", actual 4"),
            std::string::npos)
      << short_struct;
  EXPECT_EQ(mappings[0].claim, nullptr) << "nothing mapped before the structs were checked";

  raw = nullptr;
  EXPECT_EQ(rootspan_weights_map_components(weights_, 2, 2, mappings.data(), &raw), ROOTSPAN_ERR_NOT_FOUND);
  const std::string past = failure(raw);
  EXPECT_NE(past.find("components [2, 2 + 2) run past the 3 the weights hold"), std::string::npos) << past;
  EXPECT_EQ(rootspan_weights_map_components(weights_, 4, 0, mappings.data(), nullptr), ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_EQ(rootspan_weights_map_components(weights_, 3, 0, mappings.data(), nullptr), ROOTSPAN_OK) << "none: nothing";

  rootspan_weights *freed = weights_;
  free_weights();
  raw = nullptr;
  EXPECT_EQ(rootspan_weights_map_components(freed, 0, 1, mappings.data(), &raw), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(failure(raw).find("not a live handle"), std::string::npos);
}

TEST_F(MapComponentsTest, UnmapComponentsEndsEveryMappingAndClaimAtOnce) {
  std::vector<rootspan_component_mapping> mappings;
  ASSERT_NO_FATAL_FAILURE(load_and_map_all(96, mappings));
  rootspan_error *raw = nullptr;
  // A second mapping under b's claim keeps that claim in use: the call stops there.
  rootspan_mapping *extra = nullptr;
  ASSERT_EQ(rootspan_map_read(mappings[1].claim, ROOTSPAN_DTYPE_U8, 0, 16, &extra, nullptr), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_weights_unmap_components(mappings.data(), 3, &raw), ROOTSPAN_ERR_BUSY);
  ASSERT_NE(raw, nullptr);
  EXPECT_STREQ(rootspan_error_operation(raw), "weights_unmap_components");
  const std::string busy = failure(raw);
  EXPECT_NE(busy.find("mappings[1]: "), std::string::npos) << busy;
  EXPECT_EQ(mappings[0].claim, nullptr) << "a, before it, is ended";
  EXPECT_EQ(mappings[0].mapping, nullptr);
  EXPECT_EQ(mappings[1].mapping, nullptr) << "b's mapping is ended, its claim kept";
  EXPECT_NE(mappings[1].claim, nullptr);
  EXPECT_NE(mappings[2].mapping, nullptr) << "c, after it, untouched";
  EXPECT_NE(mappings[2].claim, nullptr);
  EXPECT_EQ(rootspan_weights_free(weights_, nullptr), ROOTSPAN_ERR_BUSY) << "b and c are still claimed";

  ASSERT_EQ(rootspan_unmap(extra), ROOTSPAN_OK);
  raw = nullptr;
  ASSERT_EQ(rootspan_weights_unmap_components(mappings.data(), 3, &raw), ROOTSPAN_OK) << failure(raw);
  for (const rootspan_component_mapping &m : mappings) {
    EXPECT_EQ(m.claim, nullptr);
    EXPECT_EQ(m.mapping, nullptr);
    EXPECT_EQ(m.data, nullptr);
  }
  EXPECT_EQ(rootspan_weights_unmap_components(mappings.data(), 3, nullptr), ROOTSPAN_OK) << "ended: nothing to do";
  raw = nullptr;
  EXPECT_EQ(rootspan_weights_free(weights_, &raw), ROOTSPAN_OK) << failure(raw);
  weights_ = nullptr;
}

TEST_F(MapComponentsTest, UnmapComponentsRefusesBadArgumentsEndingNothing) {
  std::vector<rootspan_component_mapping> mappings;
  ASSERT_NO_FATAL_FAILURE(load_and_map_all(97, mappings));
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_weights_unmap_components(nullptr, 1, &raw), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(failure(raw).find("mappings is NULL with a non-zero count"), std::string::npos);
  EXPECT_EQ(rootspan_weights_unmap_components(nullptr, 0, nullptr), ROOTSPAN_OK) << "none: nothing";
  const std::vector<rootspan_component_mapping> before = mappings;
  mappings[2].struct_size = 4;
  raw = nullptr;
  EXPECT_EQ(rootspan_weights_unmap_components(mappings.data(), 3, &raw), ROOTSPAN_ERR_INVALID_ARGUMENT);
  const std::string short_struct = failure(raw);
  EXPECT_NE(short_struct.find("mappings[2].struct_size 4"), std::string::npos) << short_struct;
  EXPECT_EQ(mappings[0].mapping, before[0].mapping) << "nothing ended before the structs were checked";
  EXPECT_EQ(mappings[0].claim, before[0].claim);
  mappings[2].struct_size = sizeof(rootspan_component_mapping);
  unmap_all(mappings);
}

TEST_F(WeightsCApiTest, AnInMemoryFileIsDescribedByTheSameRules) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"w", "F32", {2, 3}}, {"n", "U8", {5}}}, 24);
  char *json = nullptr;
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_safetensors_describe(file.bytes.data(), file.bytes.size(), "mem", &json, &raw), ROOTSPAN_OK)
      << describe(raw);
  const auto document = nlohmann::json::parse(json);
  rootspan_string_free(json);
  EXPECT_EQ(document["format"], "safetensors");
  EXPECT_EQ(document["bytes"], file.bytes.size());
  ASSERT_EQ(document["tensors"].size(), 2u);
  for (const auto &t : document["tensors"]) {  // [name, dtype, shape, offset, bytes]
    const auto &[offset, length] = file.tensors.at(t[0].get<std::string>());
    EXPECT_EQ(t[3], offset) << t.dump();
    EXPECT_EQ(t[4], length) << t.dump();
  }
  ASSERT_EQ(rootspan_safetensors_describe_file(file.path.c_str(), &json, &raw), ROOTSPAN_OK) << describe(raw);
  EXPECT_EQ(nlohmann::json::parse(json), document) << "the file on disk says the same";
  rootspan_string_free(json);
  ASSERT_EQ(rootspan_safetensors_describe_file(dir_.path().c_str(), &json, &raw), ROOTSPAN_ERR_INVALID_CHECKPOINT)
      << "a folder";
  rootspan_error_free(raw);

  std::vector<std::byte> cut(file.bytes.begin(), file.bytes.end() - 1);
  ASSERT_EQ(rootspan_safetensors_describe(cut.data(), cut.size(), "mem", &json, &raw), ROOTSPAN_ERR_INVALID_CHECKPOINT);
  ErrorPtr refused(raw);
  EXPECT_NE(std::string(rootspan_error_message(refused.get())).find("\"mem\""), std::string::npos)
      << rootspan_error_message(refused.get());
  EXPECT_EQ(json, nullptr);
  EXPECT_EQ(rootspan_safetensors_describe(nullptr, 8, "mem", &json, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rootspan_safetensors_describe(file.bytes.data(), 8, "mem", nullptr, nullptr),
            ROOTSPAN_ERR_INVALID_ARGUMENT);
}

TEST_F(WeightsCApiTest, ADescriptionWritesEveryTensorNameAsTheHeaderHasIt) {
  // Plain names are written as they are; a quote, a backslash or a control character is escaped, and
  // UTF-8 stays UTF-8: the description parses back to the header's names.
  const std::vector<std::string> names = {"model.w", "a\"quote", "back\\slash", "tab\there", "caf\xc3\xa9", "\x7f"};
  std::vector<TensorSpec> specs;
  for (const std::string &name : names) {
    const std::string quoted = nlohmann::json(name).dump();  // the header holds each name as JSON writes it
    specs.push_back({quoted.substr(1, quoted.size() - 2), "F32", {1}});
  }
  const WrittenFile file = write_safetensors(dir_, "names.safetensors", specs, 8);
  char *json = nullptr;
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_safetensors_describe_file(file.path.c_str(), &json, &raw), ROOTSPAN_OK) << describe(raw);
  const auto document = nlohmann::json::parse(json);
  rootspan_string_free(json);
  std::vector<std::string> described;
  for (const auto &t : document["tensors"]) described.push_back(t[0].get<std::string>());
  std::vector<std::string> expected = names;
  std::sort(expected.begin(), expected.end());
  std::sort(described.begin(), described.end());
  EXPECT_EQ(described, expected);
}

// ---- a file's tensors handed over one by one ------------------------------

int count_tensor(void *calls, const rootspan_safetensors_tensor * /*tensor*/) {
  ++*static_cast<int *>(calls);
  return 0;
}

TEST_F(WeightsCApiTest, EachTensorHandsOverWhatTheDescriptionLists) {
  // The walk hands over each tensor as the JSON description lists it, in file order: a scalar (no shape), an
  // empty tensor (no bytes) and a sub-byte type among them.
  const WrittenFile file = write_safetensors(
      dir_, "model.safetensors", {{"w", "F32", {2, 3}}, {"s", "I64", {}}, {"e", "U8", {0, 4}}, {"q", "F4", {8}}}, 31);
  char *json = nullptr;
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_safetensors_describe_file(file.path.c_str(), &json, &raw), ROOTSPAN_OK) << describe(raw);
  const auto document = nlohmann::json::parse(json);
  rootspan_string_free(json);
  nlohmann::json walked = nlohmann::json::array();
  const rootspan_safetensors_tensor_fn each = [](void *context, const rootspan_safetensors_tensor *t) {
    EXPECT_EQ(t->struct_size, ROOTSPAN_SAFETENSORS_TENSOR_STRUCT_SIZE);
    EXPECT_EQ(t->shape == nullptr, t->rank == 0) << t->name;
    const std::vector<std::uint64_t> shape(t->shape, t->shape + t->rank);
    static_cast<nlohmann::json *>(context)->push_back({t->name, t->dtype, shape, t->offset, t->byte_length});
    return 0;
  };
  char *metadata = nullptr;
  ASSERT_EQ(rootspan_safetensors_each_tensor(file.path.c_str(), each, &walked, &metadata, &raw), ROOTSPAN_OK)
      << describe(raw);
  EXPECT_EQ(walked, document["tensors"]);
  ASSERT_NE(metadata, nullptr);
  EXPECT_STREQ(metadata, "null") << "a header without __metadata__";
  rootspan_string_free(metadata);
  int calls = 0;
  EXPECT_EQ(rootspan_safetensors_each_tensor(file.path.c_str(), count_tensor, &calls, nullptr, nullptr), ROOTSPAN_OK)
      << "no metadata asked for";
  EXPECT_EQ(calls, 4);
}

TEST_F(WeightsCApiTest, EachTensorGivesTheHeadersMetadata) {
  const std::string header =
      R"({"__metadata__":{"format":"pt","note":"caf\u00e9"},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
  std::vector<std::byte> bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::byte>((header.size() >> (8 * i)) & 0xFF));
  for (char c : header) bytes.push_back(static_cast<std::byte>(c));
  bytes.insert(bytes.end(), 2, std::byte{7});
  const fs::path path = dir_.write("meta.safetensors", bytes);
  char *metadata = nullptr;
  rootspan_error *raw = nullptr;
  int calls = 0;
  ASSERT_EQ(rootspan_safetensors_each_tensor(path.c_str(), count_tensor, &calls, &metadata, &raw), ROOTSPAN_OK)
      << describe(raw);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(nlohmann::json::parse(metadata), nlohmann::json({{"format", "pt"}, {"note", "caf\xc3\xa9"}}));
  rootspan_string_free(metadata);
}

TEST_F(WeightsCApiTest, EachTensorStopsWhereTheFunctionSaysAndRefusesBadCalls) {
  const WrittenFile file =
      write_safetensors(dir_, "model.safetensors", {{"a", "F32", {1}}, {"b", "F32", {1}}, {"c", "F32", {1}}}, 32);
  const rootspan_safetensors_tensor_fn stop_at_the_second = [](void *calls, const rootspan_safetensors_tensor *) {
    return ++*static_cast<int *>(calls) == 2 ? 1 : 0;
  };
  int calls = 0;
  char unset = 0;
  char *metadata = &unset;
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_safetensors_each_tensor(file.path.c_str(), stop_at_the_second, &calls, &metadata, &raw),
            ROOTSPAN_ERR_CANCELLED);
  ErrorPtr stopped(raw);
  const std::string why = rootspan_error_message(stopped.get());
  EXPECT_NE(why.find("stopped the walk of"), std::string::npos) << why;
  EXPECT_NE(why.find("at tensor \"b\" (2 of 3)"), std::string::npos) << why;
  EXPECT_EQ(calls, 2) << "no tensor after the one it stopped at";
  EXPECT_EQ(metadata, nullptr);

  // A file that breaks a rule is refused before any tensor is handed over.
  std::vector<std::byte> cut(file.bytes.begin(), file.bytes.end() - 1);
  const fs::path truncated = dir_.write("cut.safetensors", cut);
  calls = 0;
  for (const fs::path &bad : {truncated, dir_.path()}) {
    SCOPED_TRACE(bad.string());
    raw = nullptr;
    EXPECT_EQ(rootspan_safetensors_each_tensor(bad.c_str(), count_tensor, &calls, nullptr, &raw),
              ROOTSPAN_ERR_INVALID_CHECKPOINT);
    ErrorPtr refused(raw);
    EXPECT_NE(std::string(rootspan_error_message(refused.get())).find(bad.filename().string()), std::string::npos)
        << rootspan_error_message(refused.get());
  }
  EXPECT_EQ(calls, 0);
  raw = nullptr;
  metadata = &unset;
  EXPECT_EQ(rootspan_safetensors_each_tensor(nullptr, count_tensor, &calls, &metadata, &raw),
            ROOTSPAN_ERR_INVALID_ARGUMENT);
  ErrorPtr no_path(raw);
  EXPECT_NE(std::string(rootspan_error_message(no_path.get())).find("path or each is NULL"), std::string::npos);
  EXPECT_EQ(metadata, nullptr);
  EXPECT_EQ(rootspan_safetensors_each_tensor(file.path.c_str(), nullptr, &calls, nullptr, nullptr),
            ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(calls, 0);
}

// ---- element types and schema shapes --------------------------------------

TEST_F(WeightsCApiTest, AnEmptyTensorIsSkippedByTheDefaultSchemaAndTheRestLoads) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"a", "F32", {0, 4}}, {"b", "U8", {9}}}, 101);
  ASSERT_EQ(load(file.path, options()), ROOTSPAN_OK) << message();
  ASSERT_EQ(count(), 1u);
  EXPECT_STREQ(info(0).id, "b");
  std::size_t skipped = 0;
  ASSERT_EQ(rootspan_weights_skipped_count(weights_, &skipped), ROOTSPAN_OK);
  ASSERT_EQ(skipped, 1u);
  const char *id = nullptr;
  ASSERT_EQ(rootspan_weights_skipped(weights_, 0, &id, nullptr), ROOTSPAN_OK);
  EXPECT_STREQ(id, "a");
}

TEST_F(WeightsCApiTest, SubByteElementsLoadAsUntypedBytes) {
  // F4 has no whole-byte element: the root is untyped, zero-copy or copied.
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"q", "F4", {64}}}, 102);
  for (rootspan_load_strategy strategy : {ROOTSPAN_LOAD_MMAP, ROOTSPAN_LOAD_READ}) {
    rootspan_load_options o = options();
    o.strategy = strategy;
    ASSERT_EQ(load(file.path, o), ROOTSPAN_OK) << message();
    const rootspan_component_info c = info(0);
    EXPECT_EQ(c.byte_length, 32u);
    EXPECT_EQ(c.zero_copy, strategy == ROOTSPAN_LOAD_MMAP ? 1 : 0);
    EXPECT_EQ(root_info(c.root).dtype, ROOTSPAN_DTYPE_NONE);
    EXPECT_EQ(read_back(c.root), file.tensor("q"));
    ASSERT_EQ(rootspan_weights_free(weights_, nullptr), ROOTSPAN_OK);
    weights_ = nullptr;
  }
}

TEST_F(WeightsCApiTest, TwoComponentsOverOneTensorAreTwoRoots) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"w", "F32", {4, 4}}}, 103);
  const fs::path schema =
      dir_.write_text("schema.json", schema_json({dense_component("w.stacked", "values", {"w"}, {1, 4, 4}, "F32"),
                                                  dense_component("w.square", "values", {"w"}, {4, 4}, "F32")}));
  rootspan_load_options o = options();
  o.schema_path = schema.c_str();
  ASSERT_EQ(load(file.path, o), ROOTSPAN_OK) << message();
  ASSERT_EQ(count(), 2u);
  EXPECT_NE(root_info(info(0).root).root_id, root_info(info(1).root).root_id);
  EXPECT_EQ(read_back(info(0).root), file.tensor("w"));
  EXPECT_EQ(read_back(info(1).root), file.tensor("w"));
}

TEST_F(WeightsCApiTest, ABlockQuantizedComponentLoadsItsBlocks) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"q", "U8", {4, 288}}}, 104);
  const fs::path schema = dir_.write_text(
      "schema.json",
      "{\"schema_version\":\"1.0.0\",\"components\":[{\"id\":\"q\",\"role\":\"packed_values\",\"sources\":[\"q\"],"
      "\"dimensions\":[4,2],\"encoding\":{\"block_quantized\":{\"format_id\":\"quantization.gguf.q4-k\","
      "\"values_per_block\":256,\"bytes_per_block\":144}}}]}");
  rootspan_load_options o = options();
  o.schema_path = schema.c_str();
  ASSERT_EQ(load(file.path, o), ROOTSPAN_OK) << message();
  EXPECT_EQ(info(0).byte_length, 4u * 288u);
  EXPECT_EQ(read_back(info(0).root), file.tensor("q"));
}

// ---- versioned structs ----------------------------------------------------

int cancel_always(void *, const rootspan_load_progress *) { return 1; }

TEST_F(WeightsCApiTest, OptionsBelowTheirFirstPublishedSizeAreRefused) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"a", "U8", {16}}}, 105);
  rootspan_load_options o = options();
  o.progress = cancel_always;
  o.struct_size = offsetof(rootspan_load_options, progress);  // no published header ended there
  ASSERT_EQ(load(file.path, o), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("rootspan_load_options: expected " + std::to_string(ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE)),
            std::string::npos)
      << message();
  // Named after the call the caller made, not a phase of it.
  EXPECT_STREQ(rootspan_error_operation(error_.get()), "weights_load");
  EXPECT_EQ(live_roots(), 0u);
}

TEST_F(WeightsCApiTest, ComponentInfoWritesOnlyWithinTheCallersStructSize) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"a", "U8", {16}}}, 106);
  ASSERT_EQ(load(file.path, options()), ROOTSPAN_OK) << message();
  // The published size: every field written.
  rootspan_component_info i{};
  i.struct_size = ROOTSPAN_COMPONENT_INFO_STRUCT_SIZE;
  ASSERT_EQ(rootspan_weights_component(weights_, 0, &i), ROOTSPAN_OK);
  EXPECT_STREQ(i.id, "a");
  EXPECT_EQ(i.byte_length, 16u);
  EXPECT_EQ(i.segments, 1u);
  // A size ending inside a field: refused, nothing written.
  i = rootspan_component_info{};
  i.struct_size = offsetof(rootspan_component_info, segments) + 4;
  i.segments = 777;
  EXPECT_EQ(rootspan_weights_component(weights_, 0, &i), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(i.id, nullptr);
  EXPECT_EQ(i.segments, 777u);
  i.struct_size = ROOTSPAN_COMPONENT_INFO_STRUCT_SIZE;
  EXPECT_EQ(rootspan_weights_component(weights_, 1, &i), ROOTSPAN_ERR_NOT_FOUND);
  i.struct_size = 0;
  EXPECT_EQ(rootspan_weights_component(weights_, 0, &i), ROOTSPAN_ERR_INVALID_ARGUMENT);
}

// ---- finding components and what they are --------------------------------

TEST_F(WeightsCApiTest, FindTakesATensorNameOutsideTheIdRule) {
  // With the default schema "a b" loads as "tensor.0"; find takes either name.
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"a b", "F32", {4}}, {"c", "U8", {8}}}, 5);
  ASSERT_EQ(load(file.path, options()), ROOTSPAN_OK) << message();
  std::size_t by_name = 99, by_id = 98;
  ASSERT_EQ(rootspan_weights_find(weights_, "a b", &by_name), ROOTSPAN_OK);
  EXPECT_STREQ(info(by_name).id, "tensor.0");
  EXPECT_STREQ(info(by_name).source_name, "a b");
  ASSERT_EQ(rootspan_weights_find(weights_, "tensor.0", &by_id), ROOTSPAN_OK);
  EXPECT_EQ(by_id, by_name);
  EXPECT_EQ(rootspan_weights_find(weights_, "a", &by_id), ROOTSPAN_ERR_NOT_FOUND);
}

TEST_F(WeightsCApiTest, FindWithoutMemoryForItsIndexStillFinds) {
  // The index find searches is made at the first search: where that cannot
  // allocate, the search walks the components instead, by id and by name.
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"a b", "F32", {4}}, {"c", "U8", {8}}}, 5);
  ASSERT_EQ(load(file.path, options()), ROOTSPAN_OK) << message();
  std::size_t c = 99, by_name = 98, missing = 97;
  rootspan_status found_c, found_by_name, found_missing, looked_up;
  // A lookup's miss without memory for its error: NOT_FOUND all the same, and no error.
  rootspan_error *error = reinterpret_cast<rootspan_error *>(&missing);  // set to see it cleared
  {
    const rootspan::testing::FailingAllocations failing;
    found_c = rootspan_weights_find(weights_, "c", &c);
    found_by_name = rootspan_weights_find(weights_, "a b", &by_name);
    found_missing = rootspan_weights_find(weights_, "tensor.1", &missing);
    looked_up = rootspan_weights_lookup(weights_, "tensor.1", &missing, &error);
  }
  ASSERT_EQ(found_c, ROOTSPAN_OK);
  EXPECT_STREQ(info(c).id, "c");
  ASSERT_EQ(found_by_name, ROOTSPAN_OK);
  EXPECT_STREQ(info(by_name).id, "tensor.0");
  EXPECT_EQ(found_missing, ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_EQ(looked_up, ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_EQ(error, nullptr);
  EXPECT_EQ(missing, 97u);
  // With memory again, the index is made, and finds the same.
  std::size_t again = 96;
  ASSERT_EQ(rootspan_weights_find(weights_, "a b", &again), ROOTSPAN_OK);
  EXPECT_EQ(again, by_name);
  ASSERT_EQ(rootspan_weights_find(weights_, "c", &again), ROOTSPAN_OK);
  EXPECT_EQ(again, c);
}

TEST_F(WeightsCApiTest, FindReturnsTheIndexOfALoadedComponentById) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"a", "F32", {16}}, {"b", "U8", {8}}}, 111);
  const fs::path schema = dir_.write_text(
      "schema.json", schema_json({dense_component("first", "values", {"a"}, {16}, "F32"),
                                  dense_component("gone", "scales", {"missing"}, {4}, "F16", /*required=*/false),
                                  dense_component("second", "metadata", {"b"}, {8}, "U8")}));
  rootspan_load_options o = options();
  o.schema_path = schema.c_str();
  ASSERT_EQ(load(file.path, o), ROOTSPAN_OK) << message();
  ASSERT_EQ(count(), 2u);
  std::size_t index = 99;
  ASSERT_EQ(rootspan_weights_find(weights_, "second", &index), ROOTSPAN_OK);
  EXPECT_EQ(index, 1u);
  EXPECT_STREQ(info(index).id, "second");
  ASSERT_EQ(rootspan_weights_find(weights_, "first", &index), ROOTSPAN_OK);
  EXPECT_EQ(index, 0u);
  // Absent, skipped, a prefix of an id, and a tensor name that is not an id:
  // not found, index untouched.
  index = 99;
  for (const char *id : {"third", "gone", "sec", "a", ""}) {
    SCOPED_TRACE(id);
    EXPECT_EQ(rootspan_weights_find(weights_, id, &index), ROOTSPAN_ERR_NOT_FOUND);
    EXPECT_EQ(index, 99u);
  }
  EXPECT_EQ(rootspan_weights_find(nullptr, "first", &index), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rootspan_weights_find(weights_, nullptr, &index), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rootspan_weights_find(weights_, "first", nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(index, 99u);
}

// rootspan_weights_lookup: a hit is find's; a miss says what is there.
TEST_F(WeightsCApiTest, ALookupThatMissesSaysWhatIsThere) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors",
                                             {{"norm", "F32", {4}}, {"up", "F32", {4}}, {"down", "F32", {4}}}, 112);
  const fs::path schema = dir_.write_text(
      "schema.json", schema_json({dense_component("norm", "values", {"norm"}, {4}, "F32"),
                                  dense_component("up", "values", {"up"}, {4}, "F32"),
                                  dense_component("down", "values", {"down"}, {4}, "F32"),
                                  dense_component("lm_head", "values", {"lm_head"}, {4}, "F32", /*required=*/false)}));
  rootspan_load_options o = options();
  o.schema_path = schema.c_str();
  ASSERT_EQ(load(file.path, o), ROOTSPAN_OK) << message();
  const auto missed = [&](const char *id) {
    std::size_t index = 99;
    rootspan_error *raw = nullptr;
    EXPECT_EQ(rootspan_weights_lookup(weights_, id, &index, &raw), ROOTSPAN_ERR_NOT_FOUND) << id;
    EXPECT_EQ(index, 99u);
    std::unique_ptr<rootspan_error, decltype(&rootspan_error_free)> error(raw, rootspan_error_free);
    if (raw == nullptr) return std::string("no error");
    EXPECT_STREQ(rootspan_error_operation(raw), "weights_lookup");
    return std::string(rootspan_error_cause(raw));
  };
  EXPECT_EQ(missed("norn"), "no loaded component has the id or tensor name \"norn\" (3 loaded; closest: \"norm\")");
  EXPECT_EQ(missed("dwn"), "no loaded component has the id or tensor name \"dwn\" (3 loaded; closest: \"down\")");
  EXPECT_EQ(missed("embed_tokens"),
            "no loaded component has the id or tensor name \"embed_tokens\" (3 loaded: \"norm\", \"up\", \"down\")");
  EXPECT_NE(missed("lm_head").find("(skipped: "), std::string::npos) << missed("lm_head");
  // A hit is find's answer; NULLs are the caller's mistake, with or without an error.
  std::size_t index = 99;
  ASSERT_EQ(rootspan_weights_lookup(weights_, "up", &index, nullptr), ROOTSPAN_OK);
  EXPECT_STREQ(info(index).id, "up");
  EXPECT_EQ(rootspan_weights_lookup(weights_, "nope", &index, nullptr), ROOTSPAN_ERR_NOT_FOUND);
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_weights_lookup(nullptr, "up", &index, &raw), ROOTSPAN_ERR_INVALID_ARGUMENT);
  ASSERT_NE(raw, nullptr);
  EXPECT_NE(std::string(rootspan_error_cause(raw)).find("NULL"), std::string::npos);
  rootspan_error_free(raw);
  EXPECT_EQ(rootspan_weights_lookup(weights_, nullptr, &index, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rootspan_weights_lookup(weights_, "up", nullptr, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
}

TEST_F(WeightsCApiTest, RoleNamesAreTheSchemaNames) {
  const std::vector<std::pair<rootspan_component_role, std::string>> names = {
      {ROOTSPAN_ROLE_VALUES, "values"},     {ROOTSPAN_ROLE_PACKED_VALUES, "packed_values"},
      {ROOTSPAN_ROLE_SCALES, "scales"},     {ROOTSPAN_ROLE_ZERO_POINTS, "zero_points"},
      {ROOTSPAN_ROLE_INDICES, "indices"},   {ROOTSPAN_ROLE_PERMUTATION, "permutation"},
      {ROOTSPAN_ROLE_CODEBOOK, "codebook"}, {ROOTSPAN_ROLE_METADATA, "metadata"}};
  for (const auto &[role, name] : names) EXPECT_EQ(rootspan_role_name(role), name) << role;
  EXPECT_STREQ(rootspan_role_name(-1), "");
  EXPECT_STREQ(rootspan_role_name(8), "");
}

// One dense, one packed and one block-quantized component; every field.
TEST_F(WeightsCApiTest, ComponentInfoDescribesDensePackedAndBlockQuantizedComponents) {
  const WrittenFile a =
      write_safetensors(dir_, "a.safetensors", {{"w", "F32", {8, 16}}, {"gate", "BF16", {4, 6}}}, 112);
  const WrittenFile b = write_safetensors(dir_, "b.safetensors", {{"up", "BF16", {4, 6}}, {"q", "U8", {4, 288}}}, 113);
  write_index(dir_, {{"a.safetensors", &a}, {"b.safetensors", &b}});
  const fs::path schema = dir_.write_text(
      "schema.json",
      schema_json({dense_component("w", "values", {"w"}, {8, 16}, "F32"),
                   dense_component("gate_up", "packed_values", {"gate", "up"}, {2, 4, 6}, "BF16"),
                   "{\"id\":\"q\",\"role\":\"codebook\",\"sources\":[\"q\"],\"dimensions\":[4,2],\"encoding\":"
                   "{\"block_quantized\":{\"format_id\":\"quantization.gguf.q4-k\",\"values_per_block\":256,"
                   "\"bytes_per_block\":144}}}"}));
  rootspan_load_options o = options();
  o.schema_path = schema.c_str();
  ASSERT_EQ(load(dir_.path(), o), ROOTSPAN_OK) << message();
  ASSERT_EQ(count(), 3u);

  const rootspan_component_info w = info(0);
  EXPECT_STREQ(w.id, "w");
  EXPECT_EQ(w.role, ROOTSPAN_ROLE_VALUES);
  EXPECT_EQ(w.encoding, ROOTSPAN_ENCODING_DENSE);
  EXPECT_EQ(w.dtype, ROOTSPAN_DTYPE_F32);
  EXPECT_EQ(w.format_id, nullptr);
  EXPECT_EQ(w.values_per_block, 0u);
  EXPECT_EQ(w.bytes_per_block, 0u);
  ASSERT_EQ(w.rank, 2u);
  EXPECT_EQ(std::vector<std::uint64_t>(w.shape, w.shape + w.rank), (std::vector<std::uint64_t>{8, 16}));
  EXPECT_EQ(w.zero_copy, 1);
  EXPECT_EQ(w.read_only, 1);

  const rootspan_component_info gate_up = info(1);
  EXPECT_STREQ(gate_up.id, "gate_up");
  EXPECT_EQ(gate_up.role, ROOTSPAN_ROLE_PACKED_VALUES);
  EXPECT_EQ(gate_up.encoding, ROOTSPAN_ENCODING_DENSE);
  EXPECT_EQ(gate_up.dtype, ROOTSPAN_DTYPE_BF16);
  EXPECT_EQ(gate_up.format_id, nullptr);
  ASSERT_EQ(gate_up.rank, 3u);
  EXPECT_EQ(std::vector<std::uint64_t>(gate_up.shape, gate_up.shape + gate_up.rank),
            (std::vector<std::uint64_t>{2, 4, 6}));
  EXPECT_EQ(gate_up.segments, 2u);
  EXPECT_EQ(gate_up.byte_length, 2u * 4u * 6u * 2u);
  EXPECT_EQ(gate_up.zero_copy, 0);
  EXPECT_EQ(gate_up.read_only, 0);

  const rootspan_component_info q = info(2);
  EXPECT_STREQ(q.id, "q");
  EXPECT_EQ(q.role, ROOTSPAN_ROLE_CODEBOOK);
  EXPECT_EQ(q.encoding, ROOTSPAN_ENCODING_BLOCK_QUANTIZED);
  EXPECT_EQ(q.dtype, ROOTSPAN_DTYPE_U8);
  EXPECT_STREQ(q.format_id, "quantization.gguf.q4-k");
  EXPECT_EQ(q.values_per_block, 256u);
  EXPECT_EQ(q.bytes_per_block, 144u);
  ASSERT_EQ(q.rank, 2u);
  EXPECT_EQ(std::vector<std::uint64_t>(q.shape, q.shape + q.rank), (std::vector<std::uint64_t>{4, 2}));
  EXPECT_EQ(q.byte_length, 4u * 2u * 144u);
  EXPECT_EQ(read_back(q.root), b.tensor("q"));

  // The pointers stay valid (and equal) across calls while the weights live.
  EXPECT_EQ(info(2).format_id, q.format_id);
  EXPECT_EQ(info(1).shape, gate_up.shape);
}

TEST_F(WeightsCApiTest, AScalarComponentHasRankZero) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"s", "F64", {}}}, 114);
  ASSERT_EQ(load(file.path, options()), ROOTSPAN_OK) << message();
  const rootspan_component_info s = info(0);
  EXPECT_EQ(s.dtype, ROOTSPAN_DTYPE_F64);
  EXPECT_EQ(s.rank, 0u);
  EXPECT_EQ(s.shape, nullptr);
  EXPECT_EQ(s.byte_length, 8u);
}

TEST_F(WeightsCApiTest, ZeroCopyAndReadOnlyFollowTheStrategyAndTheRoot) {
  // The F32 tensor follows 5 bytes: it starts at 1 mod 4 in the file.
  const WrittenFile mixed =
      write_safetensors(dir_, "mixed.safetensors", {{"bytes", "U8", {5}}, {"floats", "F32", {4}}}, 116, 64, 0);
  ASSERT_EQ(mixed.tensors.at("floats").first % 4, 1u);
  for (rootspan_load_strategy strategy : {ROOTSPAN_LOAD_MMAP, ROOTSPAN_LOAD_READ}) {
    SCOPED_TRACE(strategy == ROOTSPAN_LOAD_MMAP ? "mmap" : "read");
    rootspan_load_options o = options();
    o.strategy = strategy;
    ASSERT_EQ(load(mixed.path, o), ROOTSPAN_OK) << message();
    const bool mmap = strategy == ROOTSPAN_LOAD_MMAP;
    for (std::size_t i = 0; i < count(); ++i) {
      const rootspan_component_info c = info(i);
      SCOPED_TRACE(c.id);
      // Only a zero-copy root is read-only, and the field says what the root is.
      EXPECT_EQ(c.read_only, c.zero_copy);
      EXPECT_EQ(c.read_only, root_info(c.root).read_only);
      // U8 needs no alignment; F32 at an offset of 1 mod 4 must be copied.
      EXPECT_EQ(c.zero_copy, mmap && std::string(c.id) == "bytes" ? 1 : 0);
    }
    ASSERT_EQ(rootspan_weights_free(weights_, nullptr), ROOTSPAN_OK);
    weights_ = nullptr;
  }
}

TEST_F(WeightsCApiTest, AnUploadedComponentIsNeitherZeroCopyNorReadOnly) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"w", "I32", {3, 5}}}, 117);
  ASSERT_EQ(load(file.path, options(kUploadProviderName)), ROOTSPAN_OK) << message();
  const rootspan_component_info c = info(0);
  EXPECT_EQ(c.zero_copy, 0);
  EXPECT_EQ(c.read_only, 0);
  EXPECT_EQ(c.dtype, ROOTSPAN_DTYPE_I32);
  ASSERT_EQ(c.rank, 2u);
  EXPECT_EQ(c.shape[0], 3u);
  EXPECT_EQ(c.shape[1], 5u);
}

// rootspan_component_info as it was before read_only and the fields after it.
struct ComponentInfoBeforeShape {
  size_t struct_size;
  const char *id;
  rootspan_root *root;
  uint64_t byte_length;
  uint64_t segments;
  int32_t zero_copy;
};

TEST_F(WeightsCApiTest, AnOlderCallersSmallerComponentInfoGetsOnlyTheOldFields) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"a", "F32", {4, 4}}}, 118);
  ASSERT_EQ(load(file.path, options()), ROOTSPAN_OK) << message();
  static_assert(sizeof(ComponentInfoBeforeShape) < sizeof(rootspan_component_info));
  // The old struct, followed in memory by bytes the caller owns for
  // something else: none of them may change.
  struct {
    ComponentInfoBeforeShape info;
    unsigned char after[sizeof(rootspan_component_info)];
  } old_caller;
  std::memset(&old_caller, 0xAB, sizeof old_caller);
  old_caller.info.struct_size = sizeof(ComponentInfoBeforeShape);
  ASSERT_EQ(rootspan_weights_component(weights_, 0, reinterpret_cast<rootspan_component_info *>(&old_caller.info)),
            ROOTSPAN_OK);
  EXPECT_EQ(old_caller.info.struct_size, sizeof(ComponentInfoBeforeShape));
  EXPECT_STREQ(old_caller.info.id, "a");
  EXPECT_EQ(old_caller.info.byte_length, 64u);
  EXPECT_EQ(old_caller.info.segments, 1u);
  EXPECT_EQ(old_caller.info.zero_copy, 1);
  for (unsigned char byte : old_caller.after) ASSERT_EQ(byte, 0xAB);

  // An old caller that set sizeof its struct (the end of zero_copy rounded
  // up to the struct's alignment) is the same version: the old fields only.
  std::memset(&old_caller, 0xAB, sizeof old_caller);
  const std::size_t padded =
      (offsetof(rootspan_component_info, zero_copy) + sizeof(int32_t) + alignof(rootspan_component_info) - 1) /
      alignof(rootspan_component_info) * alignof(rootspan_component_info);
  old_caller.info.struct_size = padded;
  ASSERT_EQ(rootspan_weights_component(weights_, 0, reinterpret_cast<rootspan_component_info *>(&old_caller.info)),
            ROOTSPAN_OK);
  EXPECT_STREQ(old_caller.info.id, "a");
  for (unsigned char byte : old_caller.after) ASSERT_EQ(byte, 0xAB);

  // A size that was never published and ends inside the new fields is
  // refused, and nothing is written.
  rootspan_component_info partial;
  std::memset(&partial, 0xCD, sizeof partial);
  partial.struct_size = offsetof(rootspan_component_info, values_per_block);
  rootspan_component_info untouched;
  std::memcpy(&untouched, &partial, sizeof partial);
  ASSERT_EQ(rootspan_weights_component(weights_, 0, &partial), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(std::memcmp(&partial, &untouched, sizeof partial), 0);
}

// ---- arguments and devices ------------------------------------------------

TEST_F(WeightsCApiTest, NullArgumentsAndShortStructsAreRefused) {
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"a", "U8", {16}}}, 92);
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_weights_load(nullptr, file.path.c_str(), nullptr, &weights_, &raw), ROOTSPAN_ERR_INVALID_ARGUMENT);
  rootspan_error_free(raw);
  raw = nullptr;
  EXPECT_EQ(rootspan_weights_load(context_, nullptr, nullptr, &weights_, &raw), ROOTSPAN_ERR_INVALID_ARGUMENT);
  rootspan_error_free(raw);
  raw = nullptr;
  rootspan_load_options o = options();
  o.struct_size = 0;
  EXPECT_EQ(rootspan_weights_load(context_, file.path.c_str(), &o, &weights_, &raw), ROOTSPAN_ERR_INVALID_ARGUMENT);
  rootspan_error_free(raw);
  EXPECT_EQ(weights_, nullptr);
  // NULL options: default schema, auto provider.
  raw = nullptr;
  ASSERT_EQ(rootspan_weights_load(context_, file.path.c_str(), nullptr, &weights_, &raw), ROOTSPAN_OK) << describe(raw);
  EXPECT_EQ(count(), 1u);
}

TEST_F(WeightsCApiTest, ANonexistentHostDeviceIsRefusedEvenWhenEveryComponentIsZeroCopy) {
  // Regression test: this was once missed (see the test name).
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", {{"a", "F32", {16}}}, 93);
  rootspan_load_options o = options();
  o.device = 7;
  o.strategy = ROOTSPAN_LOAD_READ;  // copied: refused
  EXPECT_EQ(load(file.path, o), ROOTSPAN_ERR_NOT_FOUND) << message();
  EXPECT_EQ(live_roots(), 0u);
  o.strategy = ROOTSPAN_LOAD_MMAP;  // zero-copy: must be refused the same way
  EXPECT_EQ(load(file.path, o), ROOTSPAN_ERR_NOT_FOUND) << message();
}

}  // namespace
}  // namespace rootspan::testing
