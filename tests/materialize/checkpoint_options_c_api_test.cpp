// The checkpoint options of weights.h, as an embedding program sees them:
// rootspan_load_options.tensors (subsets), .revision (Hugging Face cache
// repositories), and rootspan_checkpoint_inspect_with_options (a schema
// validated without loading anything).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "c_api_load_fixture.hpp"

namespace rootspan::testing {
namespace {

class CheckpointOptionsTest : public CApiLoadTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(CApiLoadTest::SetUp());
    a_ = write_safetensors(dir_, "a.safetensors", {{"model.layers.0.up", "F32", {8}}, {"model.embed", "F32", {4}}}, 5);
    b_ = write_safetensors(dir_, "b.safetensors", {{"model.layers.1.up", "F32", {8}}, {"lm_head", "F32", {2}}}, 6);
    write_index(dir_, {{"a.safetensors", &a_}, {"b.safetensors", &b_}});
  }

  std::vector<std::string> loaded_ids() const {
    std::size_t n = 0;
    EXPECT_EQ(rootspan_weights_component_count(weights_, &n), ROOTSPAN_OK);
    std::vector<std::string> ids;
    for (std::size_t i = 0; i < n; ++i) {
      rootspan_component_info info{};
      info.struct_size = sizeof info;
      EXPECT_EQ(rootspan_weights_component(weights_, i, &info), ROOTSPAN_OK);
      ids.emplace_back(info.id);
    }
    return ids;
  }

  std::size_t skipped_count() const {
    std::size_t n = 0;
    EXPECT_EQ(rootspan_weights_skipped_count(weights_, &n), ROOTSPAN_OK);
    return n;
  }

  // rootspan_checkpoint_inspect_with_options; the document, or null with
  // error_ set.
  nlohmann::json inspect(const fs::path &path, const rootspan_inspect_options *o) {
    char *text = nullptr;
    rootspan_error *raw = nullptr;
    const rootspan_status status = rootspan_checkpoint_inspect_with_options(path.c_str(), o, &text, &raw);
    error_.reset(raw);
    if (status != ROOTSPAN_OK) {
      EXPECT_EQ(text, nullptr);
      return nullptr;
    }
    nlohmann::json document = nlohmann::json::parse(text);
    rootspan_string_free(text);
    return document;
  }

  TempDir dir_;
  WrittenFile a_;
  WrittenFile b_;
};

// Fields are only ever appended: the new ones come after progress_context,
// revision last.
static_assert(offsetof(rootspan_load_options, tensors) > offsetof(rootspan_load_options, progress_context));
static_assert(offsetof(rootspan_load_options, tensor_count) > offsetof(rootspan_load_options, tensors));
static_assert(offsetof(rootspan_load_options, revision) > offsetof(rootspan_load_options, tensor_count));
static_assert(offsetof(rootspan_load_options, rank) > offsetof(rootspan_load_options, revision));
static_assert(offsetof(rootspan_load_options, staging_buffer_bytes) >
              offsetof(rootspan_load_options, split_rule_count));
static_assert(offsetof(rootspan_load_options, copy_on_write) > offsetof(rootspan_load_options, staging_buffer_count));
static_assert(offsetof(rootspan_load_options, split_convention) > offsetof(rootspan_load_options, copy_on_write));
static_assert(offsetof(rootspan_load_options, digests_path) > offsetof(rootspan_load_options, check_digests));
static_assert(offsetof(rootspan_load_options, populate) > offsetof(rootspan_load_options, digests_path));
static_assert(offsetof(rootspan_load_options, source_digests) > offsetof(rootspan_load_options, populate));
static_assert(offsetof(rootspan_load_options, signature_path) > offsetof(rootspan_load_options, source_digests));
static_assert(offsetof(rootspan_load_options, ignore_unsigned_files) >
              offsetof(rootspan_load_options, certificate_chain_count));
static_assert(offsetof(rootspan_load_options, populate_when_cold) >
              offsetof(rootspan_load_options, ignore_unsigned_files));
static_assert(offsetof(rootspan_load_options, ROOTSPAN_LOAD_OPTIONS_LAST_FIELD) ==
              offsetof(rootspan_load_options, populate_when_cold));
static_assert(offsetof(rootspan_inspect_options, ROOTSPAN_INSPECT_OPTIONS_LAST_FIELD) ==
              offsetof(rootspan_inspect_options, revision));

// ---- tensors ----------------------------------------------------------------

TEST_F(CheckpointOptionsTest, TensorPatternsLoadOnlyTheComponentsTheyMatch) {
  const char *patterns[] = {"model.layers.*", "lm_head"};
  rootspan_load_options o = options();
  o.tensors = patterns;
  o.tensor_count = 2;
  ASSERT_EQ(load(dir_.path(), o), ROOTSPAN_OK) << message();
  // In schema order (the default schema sorts by name); the rest are not
  // loaded and not reported as skipped.
  EXPECT_EQ(loaded_ids(), (std::vector<std::string>{"lm_head", "model.layers.0.up", "model.layers.1.up"}));
  EXPECT_EQ(skipped_count(), 0u);
  EXPECT_EQ(live_roots(), 3u);
  // tensor_count 0: everything, whatever tensors points at.
  o.tensor_count = 0;
  ASSERT_EQ(load(dir_.path(), o), ROOTSPAN_OK) << message();
  EXPECT_EQ(loaded_ids().size(), 4u);
}

TEST_F(CheckpointOptionsTest, TensorPatternsApplyToSchemaComponentIds) {
  const fs::path schema = dir_.write_text(
      "schema.json",
      schema_json({dense_component("up", "packed_values", {"model.layers.0.up", "model.layers.1.up"}, {2, 8}, "F32"),
                   dense_component("embed", "values", {"model.embed"}, {4}, "F32"),
                   dense_component("k", "values", {"absent"}, {4}, "F32")}));
  const char *patterns[] = {"u?"};
  rootspan_load_options o = options();
  o.schema_path = schema.c_str();
  o.tensors = patterns;
  o.tensor_count = 1;
  // "k" is required and its source is missing, but it is not selected: the
  // load succeeds without it.
  ASSERT_EQ(load(dir_.path(), o), ROOTSPAN_OK) << message();
  EXPECT_EQ(loaded_ids(), (std::vector<std::string>{"up"}));
  EXPECT_EQ(skipped_count(), 0u);
}

TEST_F(CheckpointOptionsTest, APatternThatMatchesNothingFailsNamingItAndLoadsNothing) {
  const char *patterns[] = {"model.*", "model.layer.2*"};
  rootspan_load_options o = options();
  o.tensors = patterns;
  o.tensor_count = 2;
  ASSERT_EQ(load(dir_.path(), o), ROOTSPAN_ERR_NOT_FOUND) << message();
  EXPECT_STREQ(rootspan_error_operation(error_.get()), "select_components");
  EXPECT_NE(message().find("tensor pattern \"model.layer.2*\" matches no component id"), std::string::npos)
      << message();
  EXPECT_NE(message().find("\"lm_head\""), std::string::npos) << message();
  EXPECT_EQ(live_roots(), 0u);
}

TEST_F(CheckpointOptionsTest, NullPatternsAreInvalidArguments) {
  rootspan_load_options o = options();
  o.tensor_count = 1;  // and tensors NULL
  ASSERT_EQ(load(dir_.path(), o), ROOTSPAN_ERR_INVALID_ARGUMENT) << message();
  EXPECT_NE(message().find("options.tensors is NULL, but options.tensor_count is 1"), std::string::npos) << message();
  const char *patterns[] = {"lm_head", nullptr};
  o.tensors = patterns;
  o.tensor_count = 2;
  ASSERT_EQ(load(dir_.path(), o), ROOTSPAN_ERR_INVALID_ARGUMENT) << message();
  EXPECT_NE(message().find("options.tensors[1] is NULL"), std::string::npos) << message();
  EXPECT_EQ(live_roots(), 0u);
}

// A malformed request is named after the call that was made, whichever of
// the three calls that read load options it went to.
TEST_F(CheckpointOptionsTest, AMalformedRequestIsNamedAfterTheCallMade) {
  rootspan_load_options o = options();
  o.tensor_count = 1;  // and tensors NULL
  o.world_size = 1;    // the read plan needs one
  ASSERT_EQ(load(dir_.path(), o), ROOTSPAN_ERR_INVALID_ARGUMENT) << message();
  EXPECT_STREQ(rootspan_error_operation(error_.get()), "weights_load");
  rootspan_error *raw = nullptr;
  const auto named = [&](const char *call, rootspan_status status) {
    error_.reset(raw);
    EXPECT_EQ(status, ROOTSPAN_ERR_INVALID_ARGUMENT) << call;
    ASSERT_NE(raw, nullptr) << call;
    EXPECT_STREQ(rootspan_error_operation(raw), call);
    EXPECT_NE(message().find("options.tensors is NULL, but options.tensor_count is 1"), std::string::npos) << message();
  };
  char *json = nullptr;
  named("plan_reads", rootspan_checkpoint_read_plan(dir_.path().c_str(), &o, &json, &raw));
  EXPECT_EQ(json, nullptr);
  named("hash_checkpoint", rootspan_checkpoint_hash(dir_.path().c_str(), &o, 0, &json, &raw));
  EXPECT_EQ(json, nullptr);
}

// Every option is checked before any file work: staging bounds out of range
// fail as such even when the checkpoint does not exist (the library would
// otherwise report the missing file first).
TEST_F(CheckpointOptionsTest, StagingBoundsAreCheckedBeforeAnyFileIsOpened) {
  rootspan_load_options o = options();
  o.staging_buffer_count = 65;
  ASSERT_EQ(load(dir_.path() / "no-such-checkpoint", o), ROOTSPAN_ERR_INVALID_ARGUMENT) << message();
  EXPECT_NE(message().find("options.staging_buffer_count is 65; at most 64"), std::string::npos) << message();
  o.staging_buffer_count = 0;
  o.staging_buffer_bytes = (1ull << 30) + 1;
  ASSERT_EQ(load(dir_.path() / "no-such-checkpoint", o), ROOTSPAN_ERR_INVALID_ARGUMENT) << message();
  EXPECT_NE(message().find("options.staging_buffer_bytes"), std::string::npos) << message();
}

TEST_F(CheckpointOptionsTest, ACallerWithTheOlderStructLoadsEverything) {
  // A caller compiled before tensors existed: its struct ends at
  // progress_context, and the bytes after it are never read.
  struct {
    rootspan_load_options options;
    char garbage[64];
  } old{};
  old.options = options();
  old.options.struct_size = offsetof(rootspan_load_options, tensors);
  std::memset(old.garbage, 0xA5, sizeof old.garbage);
  std::memset(reinterpret_cast<char *>(&old.options) + old.options.struct_size, 0xA5,
              sizeof(rootspan_load_options) - old.options.struct_size);
  ASSERT_EQ(load(dir_.path(), old.options), ROOTSPAN_OK) << message();
  EXPECT_EQ(loaded_ids().size(), 4u);
}

// ---- revision -----------------------------------------------------------------

TEST_F(CheckpointOptionsTest, ARevisionPicksTheSnapshotOfACacheRepository) {
  // models--org--name with two snapshots: refs/main names the first.
  const fs::path repo = dir_.path() / "models--org--name";
  write_safetensors(dir_, "models--org--name/blobs/one", {{"w", "F32", {4}}}, 1);
  write_safetensors(dir_, "models--org--name/blobs/two", {{"w", "F32", {4}}, {"extra", "F32", {2}}}, 2);
  const std::string c1(40, 'c'), c2(40, 'd');  // commits, as a cache names its snapshots
  dir_.write_text("models--org--name/refs/main", c1 + "\n");
  for (const auto &[commit, blob] : {std::pair{c1, "one"}, std::pair{c2, "two"}}) {
    fs::create_directories(repo / "snapshots" / commit);
    fs::create_symlink(fs::path("../../blobs") / blob, repo / "snapshots" / commit / "model.safetensors");
  }
  rootspan_load_options o = options();
  ASSERT_EQ(load(repo, o), ROOTSPAN_OK) << message();
  EXPECT_EQ(loaded_ids(), (std::vector<std::string>{"w"}));
  o.revision = c2.c_str();
  ASSERT_EQ(load(repo, o), ROOTSPAN_OK) << message();
  EXPECT_EQ(loaded_ids(), (std::vector<std::string>{"extra", "w"}));
  const std::string escape = "../" + c2;
  o.revision = escape.c_str();
  ASSERT_EQ(load(repo, o), ROOTSPAN_ERR_INVALID_CHECKPOINT) << message();
  EXPECT_NE(message().find("'..'"), std::string::npos) << message();
  EXPECT_NE(message().find("snapshots: \"" + c1 + "\", \"" + c2 + "\""), std::string::npos) << message();
  EXPECT_EQ(live_roots(), 0u);

  rootspan_inspect_options i{};
  i.struct_size = sizeof i;
  i.revision = c2.c_str();
  const nlohmann::json document = inspect(repo, &i);
  ASSERT_FALSE(document.is_null()) << message();
  EXPECT_EQ(document["tensors"].size(), 2u);
  EXPECT_EQ(document["folder"], (repo / "snapshots" / c2).string());
}

// ---- inspect with a schema -----------------------------------------------------

TEST_F(CheckpointOptionsTest, InspectValidatesASchemaWithoutLoading) {
  const fs::path schema = dir_.write_text(
      "schema.json",
      schema_json({dense_component("up", "packed_values", {"model.layers.0.up", "model.layers.1.up"}, {2, 8}, "F32"),
                   dense_component("k.scales", "scales", {"absent"}, {4}, "F16", /*required=*/false)}));
  rootspan_inspect_options o{};
  o.struct_size = sizeof o;
  o.schema_path = schema.c_str();
  const nlohmann::json document = inspect(dir_.path(), &o);
  ASSERT_FALSE(document.is_null()) << message();
  EXPECT_EQ(live_roots(), 0u);
  EXPECT_EQ(document["valid"], true);
  EXPECT_EQ(document["tensors"].size(), 4u);
  const nlohmann::json &s = document["schema"];
  EXPECT_EQ(s["path"], schema.string());
  ASSERT_EQ(s["components"].size(), 1u);
  EXPECT_EQ(s["components"][0]["id"], "up");
  EXPECT_EQ(s["components"][0]["role"], "packed_values");
  EXPECT_EQ(s["components"][0]["sources"], (std::vector<std::string>{"model.layers.0.up", "model.layers.1.up"}));
  EXPECT_EQ(s["components"][0]["bytes"], 64u);
  EXPECT_EQ(s["components"][0]["segments"], 2u);
  ASSERT_EQ(s["skipped"].size(), 1u);
  EXPECT_EQ(s["skipped"][0]["id"], "k.scales");
  EXPECT_NE(s["skipped"][0]["reason"].get<std::string>().find("\"absent\""), std::string::npos);

  // Without options, or without a schema, there is no "schema".
  EXPECT_FALSE(inspect(dir_.path(), nullptr).contains("schema"));
  o.schema_path = nullptr;
  EXPECT_FALSE(inspect(dir_.path(), &o).contains("schema"));
}

TEST_F(CheckpointOptionsTest, InspectFailsOnABrokenSchemaAsALoadWould) {
  const fs::path mismatch =
      dir_.write_text("mismatch.json", schema_json({dense_component("e", "values", {"model.embed"}, {5}, "F32")}));
  const fs::path required =
      dir_.write_text("required.json", schema_json({dense_component("q", "values", {"model.q"}, {4}, "F32")}));
  const fs::path broken = dir_.write_text("broken.json", "{\"schema_version\": \"1.0.0\"}");
  rootspan_inspect_options o{};
  o.struct_size = sizeof o;
  o.schema_path = mismatch.c_str();
  EXPECT_TRUE(inspect(dir_.path(), &o).is_null());
  EXPECT_EQ(rootspan_error_code(error_.get()), ROOTSPAN_ERR_INVALID_PAYLOAD) << message();
  EXPECT_NE(message().find("\"e\""), std::string::npos) << message();
  o.schema_path = required.c_str();
  EXPECT_TRUE(inspect(dir_.path(), &o).is_null());
  EXPECT_EQ(rootspan_error_code(error_.get()), ROOTSPAN_ERR_INVALID_PAYLOAD) << message();
  EXPECT_NE(message().find("\"model.q\""), std::string::npos) << message();
  o.schema_path = broken.c_str();
  EXPECT_TRUE(inspect(dir_.path(), &o).is_null());
  EXPECT_EQ(rootspan_error_code(error_.get()), ROOTSPAN_ERR_INVALID_SCHEMA) << message();
}

TEST_F(CheckpointOptionsTest, InspectRejectsNullsAndAShortStruct) {
  char *text = nullptr;
  rootspan_error *raw = nullptr;
  rootspan_inspect_options o{};
  o.struct_size = 1;
  EXPECT_EQ(rootspan_checkpoint_inspect_with_options(dir_.path().c_str(), &o, &text, &raw),
            ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(rootspan_error_message(raw)).find("struct_size"), std::string::npos);
  rootspan_error_free(raw);
  raw = nullptr;
  EXPECT_EQ(rootspan_checkpoint_inspect_with_options(nullptr, nullptr, &text, &raw), ROOTSPAN_ERR_INVALID_ARGUMENT);
  rootspan_error_free(raw);
  EXPECT_EQ(rootspan_checkpoint_inspect_with_options(dir_.path().c_str(), nullptr, nullptr, nullptr),
            ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(text, nullptr);
}

}  // namespace
}  // namespace rootspan::testing
