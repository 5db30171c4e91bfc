// GGUF checkpoints loaded into roots: every ggml type, zero-copy on the host
// (GGUF data is aligned), copied with the read strategy, uploaded to a
// provider without host access, and split files; the bytes of every root
// are the bytes the writer put in the file.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../weights/gguf_writer.hpp"
#include "core/claim_ops.hpp"
#include "core/context.hpp"
#include "core/copy.hpp"
#include "materialize_support.hpp"
#include "root_bytes.hpp"
#include "tests/support/upload_provider.hpp"
#include "weights/checkpoints/checkpoint.hpp"
#include "weights/checkpoints/gguf_checkpoint.hpp"
#include "weights/placement/materialize.hpp"
#include "weights/schema/resolve.hpp"
#include "weights/schema/schema.hpp"

namespace rootspan::testing {
namespace {

using rootspan::Context;
using rootspan::Root;
using rootspan::weights::Checkpoint;
using rootspan::weights::LoadOptions;
using rootspan::weights::LoadResult;
using rootspan::weights::Strategy;

class GgufLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    upload_reset();
    auto created = Context::create(rootspan::ContextOptions{});
    ASSERT_TRUE(created) << created.error()->message();
    context_ = std::move(created).value();
    auto added = context_->add_provider(upload_entry, "{}", ROOTSPAN_ORIGIN_EMBEDDED);
    ASSERT_TRUE(added) << added.error()->message();
  }
  void TearDown() override {
    if (context_) {
      EXPECT_EQ(context_->destroy(), 0u) << "roots were left live at the end of the test";
      context_.reset();
    }
    EXPECT_EQ(upload_live_blocks(), 0);
  }

  LoadResult load(const fs::path &path, const LoadOptions &options) {
    auto checkpoint = Checkpoint::open(path);
    EXPECT_TRUE(checkpoint) << checkpoint.error()->message();
    if (!checkpoint) return {};
    auto resolved =
        rootspan::weights::resolve_schema(checkpoint.value(), rootspan::weights::default_schema(checkpoint.value()));
    EXPECT_TRUE(resolved) << resolved.error()->message();
    if (!resolved) return {};
    auto loaded =
        rootspan::weights::load_components(*context_, checkpoint.value(), std::move(resolved).value(), options);
    EXPECT_TRUE(loaded) << loaded.error()->message();
    return loaded ? std::move(loaded).value() : LoadResult{};
  }

  // Every component of `result` holds the bytes of the writer's tensor of
  // the same name.
  void expect_bytes(LoadResult &result, const GgufWriter &writer, bool zero_copy) {
    ASSERT_EQ(result.components.size(), writer.tensors.size());
    for (std::size_t i = 0; i < writer.tensors.size(); ++i) {
      const auto &name = writer.tensors[i].name;
      const rootspan::weights::LoadedComponent *found = nullptr;
      for (const auto &c : result.components) {
        if (c.id == name) found = &c;
      }
      ASSERT_NE(found, nullptr) << name;
      EXPECT_EQ(found->zero_copy, zero_copy) << name;
      EXPECT_EQ(read_root(*found->root), writer.tensor_bytes(i)) << name;
    }
    EXPECT_TRUE(rootspan::weights::release_components(*context_, result));
  }

  static GgufWriter every_type() {
    GgufWriter w;
    w.string("general.architecture", "test");
    for (const GgufTestType &type : gguf_test_types()) {
      w.tensor(std::string("t.") + type.name, type.id, {type.values_per_block * 2, 3});
    }
    return w;
  }

  TempDir dir_;
  std::unique_ptr<Context> context_;
};

TEST_F(GgufLoadTest, EveryTypeLoadsZeroCopyOnTheHostWithItsBytes) {
  const GgufWriter w = every_type();
  LoadResult result = load(dir_.write("all.gguf", w.bytes()), LoadOptions{});
  EXPECT_EQ(result.provider, "host");
  expect_bytes(result, w, true);
}

TEST_F(GgufLoadTest, EveryTypeLoadsWithTheReadStrategy) {
  const GgufWriter w = every_type();
  LoadOptions options;
  options.strategy = Strategy::kRead;
  LoadResult result = load(dir_.write("all.gguf", w.bytes()), options);
  expect_bytes(result, w, false);
}

TEST_F(GgufLoadTest, EveryTypeUploadsToAProviderWithoutHostAccess) {
  const GgufWriter w = every_type();
  LoadOptions options;
  options.provider = "upload";
  options.staging.bytes = 4096;
  LoadResult result = load(dir_.write("all.gguf", w.bytes()), options);
  expect_bytes(result, w, false);
}

TEST_F(GgufLoadTest, ASplitFileLoadsEveryPart) {
  std::vector<GgufWriter> parts(2);
  for (std::uint32_t p = 0; p < 2; ++p) {
    parts[p].u32("split.no", p).u32("split.count", 2);
    parts[p].tensor("p" + std::to_string(p) + ".q", 12, {256, 2}).tensor("p" + std::to_string(p) + ".f", 1, {5});
    dir_.write(rootspan::weights::gguf_split_file_name("m", p + 1, 2), parts[p].bytes());
  }
  LoadResult result = load(dir_.path(), LoadOptions{});
  ASSERT_EQ(result.components.size(), 4u);
  for (std::uint32_t p = 0; p < 2; ++p) {
    for (std::size_t i = 0; i < 2; ++i) {
      for (const auto &c : result.components) {
        if (c.id == parts[p].tensors[i].name) {
          EXPECT_EQ(read_root(*c.root), parts[p].tensor_bytes(i)) << c.id;
        }
      }
    }
  }
  EXPECT_TRUE(rootspan::weights::release_components(*context_, result));
}

}  // namespace
}  // namespace rootspan::testing
