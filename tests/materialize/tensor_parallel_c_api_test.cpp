// Tensor-parallel loading through weights.h: rootspan_load_options.rank,
// .world_size and .split_rules load one rank's slice of each component
// (rows zero-copy, columns gathered), rootspan_weights_bytes_read counts what
// was read, and bad slicing fails before anything is loaded.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "c_api_load_fixture.hpp"

namespace rootspan::testing {
namespace {

class TensorParallelTest : public CApiLoadTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(CApiLoadTest::SetUp());
    a_ = write_safetensors(dir_, "a.safetensors", {{"up", "F32", {5, 4}}}, 3);
    b_ = write_safetensors(dir_, "b.safetensors", {{"down", "F32", {4, 6}}, {"norm", "F32", {4}}}, 4);
    write_index(dir_, {{"a.safetensors", &a_}, {"b.safetensors", &b_}});
  }
  rootspan_status load(std::uint32_t rank, std::uint32_t world, const std::vector<rootspan_split_rule> &rules,
                       rootspan_split_convention convention = ROOTSPAN_SPLIT_TENSOR_SPLIT) {
    rootspan_load_options o = options();
    o.split_convention = convention;
    o.rank = rank;
    o.world_size = world;
    o.split_rules = rules.empty() ? nullptr : rules.data();
    o.split_rule_count = rules.size();
    return CApiLoadTest::load(dir_.path(), o);
  }

  rootspan_component_info component(const char *id) const {
    std::size_t index = 0;
    EXPECT_EQ(rootspan_weights_find(weights_, id, &index), ROOTSPAN_OK) << id;
    rootspan_component_info info{};
    info.struct_size = sizeof info;
    EXPECT_EQ(rootspan_weights_component(weights_, index, &info), ROOTSPAN_OK);
    return info;
  }

  static std::vector<std::byte> read_back(rootspan_root *root, std::uint64_t length) {
    std::vector<std::byte> out(length);
    rootspan_claim *claim = nullptr;
    EXPECT_EQ(rootspan_claim_acquire(root, 0, length, ROOTSPAN_CLAIM_SHARED, &claim, nullptr), ROOTSPAN_OK);
    EXPECT_EQ(rootspan_copy_to_host(claim, 0, out.data(), out.size(), nullptr), ROOTSPAN_OK);
    EXPECT_EQ(rootspan_claim_release(claim, nullptr), ROOTSPAN_OK);
    return out;
  }

  // Columns [begin, begin + count) of a rows x cols F32 tensor.
  static std::vector<std::byte> columns(const std::vector<std::byte> &t, std::uint64_t rows, std::uint64_t cols,
                                        std::uint64_t begin, std::uint64_t count) {
    std::vector<std::byte> out;
    for (std::uint64_t r = 0; r < rows; ++r) {
      const auto row = t.begin() + static_cast<std::ptrdiff_t>((r * cols + begin) * 4);
      out.insert(out.end(), row, row + static_cast<std::ptrdiff_t>(count * 4));
    }
    return out;
  }

  TempDir dir_;
  WrittenFile a_, b_;
};

TEST_F(TensorParallelTest, EachRankLoadsItsRowsAndColumns) {
  const std::vector<rootspan_split_rule> rules = {{sizeof(rootspan_split_rule), "up", 0},
                                                  {sizeof(rootspan_split_rule), "down", 1}};
  std::vector<std::byte> up_rows, down_columns[3];
  for (std::uint32_t rank = 0; rank < 3; ++rank) {
    ASSERT_EQ(load(rank, 3, rules), ROOTSPAN_OK) << message();
    // up: 5 rows over 3 ranks -> 2, 2, 1 rows of 16 bytes, one range each.
    const rootspan_component_info up = component("up");
    const std::uint64_t up_rows_here = rank < 2 ? 2 : 1;
    ASSERT_EQ(up.rank, 2u);
    EXPECT_EQ(up.shape[0], up_rows_here);
    EXPECT_EQ(up.shape[1], 4u);
    EXPECT_EQ(up.segments, 1u);
    EXPECT_EQ(up.zero_copy, 1) << "an aligned row slice is the mapped file itself";
    const auto rows = read_back(up.root, up.byte_length);
    up_rows.insert(up_rows.end(), rows.begin(), rows.end());
    // down: 6 columns over 3 ranks -> 2 each, gathered from 4 rows.
    const rootspan_component_info down = component("down");
    EXPECT_EQ(down.shape[0], 4u);
    EXPECT_EQ(down.shape[1], 2u);
    EXPECT_EQ(down.zero_copy, 0);
    EXPECT_EQ(read_back(down.root, down.byte_length), columns(b_.tensor("down"), 4, 6, 2 * rank, 2));
    // norm matched no rule: replicated.
    const rootspan_component_info norm = component("norm");
    EXPECT_EQ(read_back(norm.root, norm.byte_length), b_.tensor("norm"));
    std::uint64_t bytes = 0;
    ASSERT_EQ(rootspan_weights_bytes_read(weights_, &bytes), ROOTSPAN_OK);
    EXPECT_EQ(bytes, up_rows_here * 16 + 4 * 2 * 4 + 16);
  }
  EXPECT_EQ(up_rows, a_.tensor("up"));
}

TEST_F(TensorParallelTest, WorldSizeZeroAndOlderCallersLoadEverything) {
  ASSERT_EQ(load(0, 0, {}), ROOTSPAN_OK) << message();
  std::uint64_t bytes = 0;
  ASSERT_EQ(rootspan_weights_bytes_read(weights_, &bytes), ROOTSPAN_OK);
  EXPECT_EQ(bytes, 80u + 96u + 16u);
  EXPECT_EQ(rootspan_weights_bytes_read(nullptr, &bytes), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rootspan_weights_bytes_read(weights_, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
  free_weights();
  // A struct_size that ends at revision: the slicing fields read as zero.
  rootspan_load_options o{};
  o.struct_size = offsetof(rootspan_load_options, revision) + sizeof(const char *);
  o.provider = "host";
  o.rank = 7;
  o.world_size = 2;
  ASSERT_EQ(rootspan_weights_load(context_, dir_.path().c_str(), &o, &weights_, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(component("up").shape[0], 5u);
}

// A caller built against a later, longer rootspan_split_rule: its rules lie
// at its own stride, and the fields this library knows are read from each.
TEST_F(TensorParallelTest, RulesOfALongerStructAreReadAtTheCallersStride) {
  struct NewerRule {
    rootspan_split_rule known;
    std::uint64_t added_later;
  };
  const NewerRule rules[] = {{{sizeof(NewerRule), "norm", -1}, 0xFFFF}, {{sizeof(NewerRule), "up", 0}, 0xFFFF}};
  rootspan_load_options o{};
  o.struct_size = sizeof o;
  o.provider = "host";
  o.rank = 0;
  o.world_size = 2;
  o.split_rules = &rules[0].known;
  o.split_rule_count = 2;
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_weights_load(context_, dir_.path().c_str(), &o, &weights_, &raw), ROOTSPAN_OK)
      << (raw != nullptr ? rootspan_error_message(raw) : "");
  EXPECT_EQ(component("up").shape[0], 3u);  // 5 rows over 2 ranks: rank 0 takes 3
  EXPECT_EQ(component("norm").shape[0], 4u);
}

TEST_F(TensorParallelTest, BadSlicingFailsAndLeavesNothing) {
  const rootspan_split_rule up0{sizeof(rootspan_split_rule), "up", 0};
  EXPECT_EQ(load(2, 2, {up0}), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("rank 2 is outside [0, 2)"), std::string::npos) << message();
  EXPECT_EQ(load(0, 2, {{sizeof(rootspan_split_rule), "norm", 1}}), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("splits dimension 1 of component \"norm\""), std::string::npos) << message();
  EXPECT_EQ(load(0, 2, {up0, {sizeof(rootspan_split_rule), "lm_head", 0}}), ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_NE(message().find("\"lm_head\" matches none"), std::string::npos) << message();
  EXPECT_EQ(load(0, 2, {{sizeof(rootspan_split_rule), nullptr, 0}}), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("split_rules[0].pattern is NULL"), std::string::npos) << message();
  EXPECT_EQ(load(0, 2, {{4, "up", 0}}), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("split_rules[0].struct_size is too small"), std::string::npos) << message();
  EXPECT_EQ(load(0, 2, {{std::size_t{1} << 40, "up", 0}}), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("split_rules[0].struct_size is too large"), std::string::npos) << message();
  // Every rule of one array is one version of the struct.
  EXPECT_EQ(load(0, 2, {up0, {ROOTSPAN_SPLIT_RULE_STRUCT_SIZE, "norm", -1}}), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("split_rules[1].struct_size differs from split_rules[0]'s"), std::string::npos) << message();
  EXPECT_EQ(load(0, 2, {up0}, 7), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("split_convention"), std::string::npos) << message();
  // 5 rows over 4 ranks: tensor_split gives 2, 1, 1, 1; torch.chunk 2, 2, 1 and nothing.
  EXPECT_EQ(load(1, 4, {up0}), ROOTSPAN_OK) << message();
  EXPECT_EQ(load(1, 4, {up0}, ROOTSPAN_SPLIT_CHUNK), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("too few for the world size 4 (chunk), so the last rank would get nothing"),
            std::string::npos)
      << message();
  rootspan_load_options o{};
  o.struct_size = sizeof o;
  o.world_size = 2;
  o.split_rule_count = 1;
  EXPECT_EQ(rootspan_weights_load(context_, dir_.path().c_str(), &o, &weights_, nullptr),
            ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(live_roots(), 0u);
}

}  // namespace
}  // namespace rootspan::testing
