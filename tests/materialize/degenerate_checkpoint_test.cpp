// Checkpoints with nothing (or nothing but empty tensors) to load, through
// every load option of weights.h: a safetensors header of `{}`, one holding
// only __metadata__, one of empty tensors only, a sharded set with a shard of
// empty tensors only, and a GGUF file with no tensors. Each loads (or fails
// with the error its options call for), reports progress without a component
// to name, and leaves no root.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../weights/gguf_writer.hpp"
#include "core/c_api_support.hpp"  // rootspan_context -> Context, for live_roots()
#include "materialize_support.hpp"

namespace rootspan::testing {
namespace {

// A safetensors file of exactly this header (padded to 8 bytes) and data.
fs::path write_raw_safetensors(const TempDir &dir, const std::string &name, std::string header,
                               std::size_t data_bytes = 0) {
  while (header.size() % 8 != 0) header += ' ';
  std::vector<std::byte> bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::byte>((header.size() >> (8 * i)) & 0xFF));
  for (char c : header) bytes.push_back(static_cast<std::byte>(c));
  bytes.resize(bytes.size() + data_bytes, std::byte{7});
  return dir.write(name, bytes);
}

struct Case {
  std::string name;
  fs::path path;
};

class DegenerateCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rootspan_error *raw = nullptr;
    ASSERT_EQ(rootspan_context_create(nullptr, &context_, &raw), ROOTSPAN_OK) << describe(raw);
    rootspan_error_free(raw);
    cases_.push_back({"an empty header", write_raw_safetensors(dir_, "empty/model.safetensors", "{}")});
    cases_.push_back({"metadata only", write_raw_safetensors(dir_, "metadata/model.safetensors",
                                                             R"({"__metadata__": {"format": "pt"}})")});
    cases_.push_back({"empty tensors only",
                      write_raw_safetensors(dir_, "zeros/model.safetensors",
                                            R"({"a": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]},)"
                                            R"( "b": {"dtype": "BF16", "shape": [4, 0], "data_offsets": [0, 0]}})")});
    write_raw_safetensors(dir_, "sharded/model-00001-of-00002.safetensors",
                          R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 8);
    write_raw_safetensors(dir_, "sharded/model-00002-of-00002.safetensors",
                          R"({"z": {"dtype": "F32", "shape": [0, 3], "data_offsets": [0, 0]}})");
    dir_.write_text("sharded/model.safetensors.index.json",
                    R"({"metadata": {}, "weight_map": {"w": "model-00001-of-00002.safetensors",)"
                    R"( "z": "model-00002-of-00002.safetensors"}})");
    cases_.push_back({"a shard of empty tensors", dir_ / "sharded"});
    GgufWriter gguf;
    gguf.string("general.architecture", "llama");
    cases_.push_back({"a GGUF file without tensors", dir_.write("gguf/model.gguf", gguf.bytes())});
  }

  void TearDown() override {
    std::uint64_t live = 0;
    EXPECT_EQ(rootspan_context_destroy(context_, &live), ROOTSPAN_OK);
    EXPECT_EQ(live, 0u);
  }

  // A digest manifest of `path` written by rootspan_checkpoint_hash.
  fs::path manifest_of(const Case &c, std::size_t i) {
    char *json = nullptr;
    rootspan_error *raw = nullptr;
    EXPECT_EQ(rootspan_checkpoint_hash(c.path.c_str(), nullptr, 1, &json, &raw), ROOTSPAN_OK)
        << c.name << ": " << describe(raw);
    rootspan_error_free(raw);
    const std::string text = json == nullptr ? "" : json;
    rootspan_string_free(json);
    return dir_.write_text("manifest-" + std::to_string(i) + ".json", text);
  }

  TempDir dir_;
  std::vector<Case> cases_;
  rootspan_context *context_ = nullptr;
};

int count_progress(void *context, const rootspan_load_progress *p) {
  // The component is never NULL, even when there is none to name.
  if (p->component == nullptr) return 1;
  ++*static_cast<int *>(context);
  return 0;
}

TEST_F(DegenerateCheckpointTest, EveryLoadOptionLoadsNothingWithoutACrash) {
  const rootspan_load_strategy strategies[] = {ROOTSPAN_LOAD_MMAP, ROOTSPAN_LOAD_READ, ROOTSPAN_LOAD_DIRECT,
                                               ROOTSPAN_LOAD_AUTO};
  enum Option { kPlain, kPopulate, kCopyOnWrite, kSourceDigests, kManifest, kCacheDigests, kOptions };
  for (std::size_t i = 0; i < cases_.size(); ++i) {
    const Case &c = cases_[i];
    const fs::path manifest = manifest_of(c, i);
    for (rootspan_load_strategy strategy : strategies) {
      for (int option = kPlain; option < kOptions; ++option) {
        SCOPED_TRACE(c.name + ", strategy " + std::to_string(strategy) + ", option " + std::to_string(option));
        int reports = 0;
        rootspan_load_options o{};
        o.struct_size = sizeof o;
        o.provider = "host";
        o.strategy = strategy;
        o.progress = count_progress;
        o.progress_context = &reports;
        o.populate = option == kPopulate;
        o.copy_on_write = option == kCopyOnWrite;
        o.source_digests = option == kSourceDigests;
        o.digests_path = option == kManifest ? manifest.c_str() : nullptr;
        o.check_digests = option == kCacheDigests;
        rootspan_weights *weights = nullptr;
        rootspan_error *raw = nullptr;
        const rootspan_status status = rootspan_weights_load(context_, c.path.c_str(), &o, &weights, &raw);
        const std::string message = describe(raw);
        rootspan_error_free(raw);
        if (option == kCacheDigests && c.name != "an empty header" && c.name != "metadata only" &&
            c.name != "a GGUF file without tensors") {
          // Outside a cache there is nothing to check the files read against.
          EXPECT_EQ(status, ROOTSPAN_ERR_NOT_FOUND) << message;
        } else if (option == kCacheDigests) {
          // No file is read: no check, which is never called verified.
          EXPECT_TRUE(status == ROOTSPAN_OK || status == ROOTSPAN_ERR_NOT_FOUND) << message;
        } else {
          EXPECT_EQ(status, ROOTSPAN_OK) << message;
        }
        if (weights != nullptr) {
          std::size_t count = 0;
          EXPECT_EQ(rootspan_weights_component_count(weights, &count), ROOTSPAN_OK);
          for (std::size_t k = 0; k < count; ++k) {
            rootspan_component_info info{};
            info.struct_size = sizeof info;
            EXPECT_EQ(rootspan_weights_component(weights, k, &info), ROOTSPAN_OK);
            EXPECT_EQ(info.byte_length, c.name == "a shard of empty tensors" && k == 0 ? 8u : 0u);
          }
          EXPECT_EQ(rootspan_weights_free(weights, nullptr), ROOTSPAN_OK);
        }
        EXPECT_EQ(context_->context->live_roots(), 0u);
      }
    }
  }
}

TEST_F(DegenerateCheckpointTest, CancellingANothingLoadNamesNoComponent) {
  rootspan_load_options o{};
  o.struct_size = sizeof o;
  o.provider = "host";
  o.source_digests = 1;
  o.progress = [](void *, const rootspan_load_progress *) { return 1; };
  rootspan_weights *weights = nullptr;
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_weights_load(context_, cases_[0].path.c_str(), &o, &weights, &raw), ROOTSPAN_ERR_CANCELLED);
  const std::string message = describe(raw);
  rootspan_error_free(raw);
  EXPECT_NE(message.find("before any component"), std::string::npos) << message;
  EXPECT_EQ(weights, nullptr);
}

}  // namespace
}  // namespace rootspan::testing
