// Weights loaded into the device provider template (plugins/cuda/
// gpu_provider.hpp) over the fake runtime, whose device memory the host
// cannot touch (PROT_NONE outside the fake's copies): both load strategies
// upload every component through the provider's copy hooks, and the digest
// read back from device memory (what `rootspan load --verify` prints) equals
// an independent digest of the file's bytes.
#include <cstring>
#include <string>
#include <vector>

#include "../materialize/materialize_support.hpp"
#include "fake_load_fixture.hpp"

namespace rootspan::testing {
namespace {

namespace fs = std::filesystem;

class FakeWeightsTest : public FakeLoadFixture<::testing::TestWithParam<rootspan_load_strategy>> {
 protected:
  FakeWeightsTest() : FakeLoadFixture(2) {}
  void SetUp() override { FakeLoadFixture::SetUp(); }

  rootspan_component_info info(std::size_t index) const {
    rootspan_component_info i{};
    i.struct_size = sizeof i;
    EXPECT_EQ(rootspan_weights_component(weights_, index, &i), ROOTSPAN_OK);
    return i;
  }

  rootspan::testing::TempDir dir_;
};

TEST_P(FakeWeightsTest, ComponentsLandInDeviceMemoryWithTheFilesDigests) {
  // F32 at an aligned offset (zero-copy for a host provider), a packed
  // component across two shards, and an odd-sized U8 tensor.
  const WrittenFile a =
      write_safetensors(dir_, "a.safetensors", {{"w", "F32", {256}}, {"m", "F16", {33}}, {"u", "U8", {7}}}, 91);
  const WrittenFile b = write_safetensors(dir_, "b.safetensors", {{"n", "F16", {40}}}, 92, 8, 4);
  write_index(dir_, {{"a.safetensors", &a}, {"b.safetensors", &b}});
  const fs::path schema =
      dir_.write_text("schema.json", schema_json({dense_component("w", "values", {"w"}, {256}, "F32"),
                                                  dense_component("mn", "packed_values", {"m", "n"}, {73}, "F16"),
                                                  dense_component("u", "metadata", {"u"}, {7}, "U8")}));
  rootspan_load_options o{};
  o.struct_size = sizeof o;
  o.provider = "fake";
  o.device = 1;
  o.strategy = GetParam();
  o.schema_path = schema.c_str();
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_weights_load(context_, dir_.path().c_str(), &o, &weights_, &raw), ROOTSPAN_OK) << describe(raw);
  EXPECT_STREQ(rootspan_weights_provider(weights_), "fake");
  std::size_t count = 0;
  ASSERT_EQ(rootspan_weights_component_count(weights_, &count), ROOTSPAN_OK);
  ASSERT_EQ(count, 3u);

  const std::vector<std::vector<std::byte>> expected = {
      a.tensor("w"), rootspan::testing::concat({a.tensor("m"), b.tensor("n")}), a.tensor("u")};
  EXPECT_EQ(fake_gpu::state().allocations.size(), 3u);
  EXPECT_EQ(fake_gpu::state().last_malloc_device, 1);
  for (std::size_t i = 0; i < count; ++i) {
    const rootspan_component_info c = info(i);
    SCOPED_TRACE(c.id);
    EXPECT_EQ(c.zero_copy, 0);
    EXPECT_EQ(c.byte_length, expected[i].size());
    rootspan_root_info ri{};
    ri.struct_size = sizeof ri;
    ASSERT_EQ(rootspan_root_get_info(c.root, &ri), ROOTSPAN_OK);
    EXPECT_EQ(ri.host_accessible, 0);
    EXPECT_EQ(ri.device, 1u);
    char hex[65] = {};
    ASSERT_EQ(rootspan_weights_component_sha256(weights_, i, hex, &raw), ROOTSPAN_OK) << describe(raw);
    EXPECT_EQ(std::string(hex), sha256_hex(expected[i]));
  }
  // Nothing was left pending on a stream: the load waited for its uploads.
  EXPECT_FALSE(fake_gpu::any_pending());
}

INSTANTIATE_TEST_SUITE_P(Strategies, FakeWeightsTest, ::testing::Values(ROOTSPAN_LOAD_MMAP, ROOTSPAN_LOAD_READ),
                         [](const ::testing::TestParamInfo<rootspan_load_strategy> &info) {
                           return std::string(info.param == ROOTSPAN_LOAD_MMAP ? "Mmap" : "Read");
                         });

}  // namespace
}  // namespace rootspan::testing
