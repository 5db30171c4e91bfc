// Read plans for tensor-parallel loading: tensor_split shares, contiguous
// row slices, strided column slices across segment boundaries, block-aligned
// splits of block-quantized components, and every refused input. Planning
// reads nothing, so the payloads here point at files that do not exist.
#include "weights/schema/read_plan.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_support.hpp"

namespace rootspan::weights {
namespace {

using testing::FailsWith;

// A payload whose sources lie back to back in "model.safetensors" from
// file offset 1000, each of `source_dims` rows of the component.
ComponentPayload payload(const std::string &id, const std::string &dtype, std::vector<std::uint64_t> dims,
                         std::vector<std::uint64_t> source_bytes, Encoding encoding = DenseEncoding{}) {
  ComponentSpec spec;
  spec.id = id;
  spec.dimensions = dims;
  spec.encoding = encoding;
  if (std::holds_alternative<DenseEncoding>(encoding)) spec.encoding = DenseEncoding{*safetensors_dtype(dtype)};
  std::vector<std::string> files;
  std::vector<Segment> segments;
  std::uint64_t offset = 1000;
  for (std::size_t i = 0; i < source_bytes.size(); ++i) {
    spec.sources.push_back(id + ".part" + std::to_string(i));
    files.push_back("model.safetensors");
    segments.emplace_back(spec.sources.back(), "model.safetensors", "/nonexistent/model.safetensors", offset,
                          source_bytes[i]);
    offset += source_bytes[i];
  }
  auto made = ComponentPayload::from_ordered_segments(spec, spec.sources, files, dims, spec.physical_element_type(),
                                                      std::move(segments));
  EXPECT_TRUE(made) << made.error()->message();
  return std::move(made).value();
}

ShardSpec shard(std::uint32_t rank, std::uint32_t world, std::vector<SplitRule> rules) {
  return {rank, world, std::move(rules)};
}

ShardSpec chunked(std::uint32_t rank, std::uint32_t world, std::vector<SplitRule> rules) {
  return {rank, world, std::move(rules), SplitConvention::kChunk};
}

struct Range {
  std::uint64_t file_offset, length, destination;
  bool operator==(const Range &) const = default;
};
// Every row of every read, as a plain range (a strided read of 4 rows is 4).
std::vector<Range> ranges(const ComponentPlan &plan) {
  std::vector<Range> out;
  for (const PlannedRead &r : plan.reads) {
    for (std::uint64_t row = 0; row < r.rows; ++row) {
      out.push_back({r.file_offset + row * r.stride, r.length, r.destination_offset + row * r.length});
    }
  }
  return out;
}

TEST(ReadPlan, SharesFollowTensorSplit) {
  // torch.tensor_split(range(10), 3) -> sizes 4, 3, 3.
  EXPECT_EQ(share_of(10, 0, 3).begin, 0u);
  EXPECT_EQ(share_of(10, 0, 3).count, 4u);
  EXPECT_EQ(share_of(10, 1, 3).begin, 4u);
  EXPECT_EQ(share_of(10, 1, 3).count, 3u);
  EXPECT_EQ(share_of(10, 2, 3).begin, 7u);
  EXPECT_EQ(share_of(10, 2, 3).count, 3u);
  EXPECT_EQ(share_of(12, 3, 4).begin, 9u);
  EXPECT_EQ(share_of(12, 3, 4).count, 3u);
}

TEST(ReadPlan, ChunkSharesFollowTorchChunk) {
  // torch.chunk and DTensor's Shard: ceil(n / world) each, the last what is left.
  const SplitConvention chunk = SplitConvention::kChunk;
  EXPECT_EQ(share_of(10, 0, 3, chunk).count, 4u);
  EXPECT_EQ(share_of(10, 1, 3, chunk).begin, 4u);
  EXPECT_EQ(share_of(10, 1, 3, chunk).count, 4u);
  EXPECT_EQ(share_of(10, 2, 3, chunk).begin, 8u);
  EXPECT_EQ(share_of(10, 2, 3, chunk).count, 2u);
  EXPECT_EQ(share_of(12, 3, 4, chunk).begin, 9u);
  EXPECT_EQ(share_of(5, 3, 4, chunk).begin, 5u);
  EXPECT_EQ(share_of(5, 3, 4, chunk).count, 0u);
  // A column split of 11 over 3 ranks under chunk: 4, 4, 3.
  const std::vector<ComponentPayload> p = {payload("o", "F16", {6, 11}, {6 * 22})};
  auto last = plan_reads(p, chunked(2, 3, {{"o", 1}}));
  ASSERT_TRUE(last) << last.error()->message();
  EXPECT_EQ(last.value().components[0].begin, 8u);
  EXPECT_EQ(last.value().components[0].dimensions, (std::vector<std::uint64_t>{6, 3}));
  EXPECT_NE(read_plan_json(last.value(), chunked(2, 3, {{"o", 1}})).find("\"split_convention\": \"chunk\""),
            std::string::npos);
}

TEST(ReadPlan, RowSplitIsOneContiguousRange) {
  // 5 x 4 F32: rows are 16 bytes; rank 1 of 2 takes rows [3, 5).
  const std::vector<ComponentPayload> p = {payload("w", "F32", {5, 4}, {80})};
  auto plan = plan_reads(p, shard(1, 2, {{"w", 0}}));
  ASSERT_TRUE(plan) << plan.error()->message();
  const ComponentPlan &c = plan.value().components[0];
  EXPECT_EQ(c.begin, 3u);
  EXPECT_EQ(c.count, 2u);
  EXPECT_EQ(c.dimensions, (std::vector<std::uint64_t>{2, 4}));
  EXPECT_EQ(ranges(c), (std::vector<Range>{{1000 + 48, 32, 0}}));
  EXPECT_EQ(plan.value().bytes, 32u);
}

TEST(ReadPlan, ColumnSplitIsStridedAndCrossesSegments) {
  // 4 x 6 F16 packed from two sources of two rows each (12 bytes per row):
  // rank 2 of 3 takes columns [4, 6): 4 bytes from each row, one strided
  // read of two rows per source.
  const std::vector<ComponentPayload> p = {payload("w", "F16", {4, 6}, {24, 24})};
  auto plan = plan_reads(p, shard(2, 3, {{"w", 1}}));
  ASSERT_TRUE(plan) << plan.error()->message();
  const ComponentPlan &c = plan.value().components[0];
  EXPECT_EQ(c.dimensions, (std::vector<std::uint64_t>{4, 2}));
  EXPECT_EQ(ranges(c), (std::vector<Range>{{1008, 4, 0}, {1020, 4, 4}, {1032, 4, 8}, {1044, 4, 12}}));
  ASSERT_EQ(c.reads.size(), 2u);
  EXPECT_EQ(c.reads[0].source, "w.part0");
  EXPECT_EQ(c.reads[0].rows, 2u);
  EXPECT_EQ(c.reads[0].stride, 12u);
  EXPECT_EQ(c.reads[1].source, "w.part1");
  EXPECT_EQ(c.bytes, 16u);
}

TEST(ReadPlan, ARowCrossingASourceBoundaryIsCutThere) {
  // Sources of 16 and 32 bytes: row 1 (bytes 12-24) crosses into the second.
  const std::vector<ComponentPayload> p = {payload("w", "F16", {4, 6}, {16, 32})};
  auto plan = plan_reads(p, shard(0, 2, {{"w", 1}}));
  ASSERT_TRUE(plan) << plan.error()->message();
  const ComponentPlan &c = plan.value().components[0];
  EXPECT_EQ(ranges(c), (std::vector<Range>{{1000, 6, 0}, {1012, 4, 6}, {1016, 2, 10}, {1024, 6, 12}, {1036, 6, 18}}));
  ASSERT_EQ(c.reads.size(), 4u);
  EXPECT_EQ(c.reads[1].source, "w.part0");
  EXPECT_EQ(c.reads[2].source, "w.part1");
  EXPECT_EQ(c.reads[3].rows, 2u);
}

TEST(ReadPlan, AColumnSplitOfMillionsOfRowsIsOneRecord) {
  // The audit's sparse file: 2^22 rows of two F16 columns, split by column.
  // One strided read and one strided segment, not one per row.
  constexpr std::uint64_t kRows = std::uint64_t{1} << 22;
  const std::vector<ComponentPayload> p = {payload("o", "F16", {kRows, 2}, {kRows * 4})};
  for (std::uint32_t rank = 0; rank < 2; ++rank) {
    auto plan = plan_reads(p, shard(rank, 2, {{"o", 1}}));
    ASSERT_TRUE(plan) << plan.error()->message();
    const ComponentPlan &c = plan.value().components[0];
    ASSERT_EQ(c.reads.size(), 1u);
    EXPECT_EQ(c.reads[0].file_offset, 1000u + 2 * rank);
    EXPECT_EQ(c.reads[0].length, 2u);
    EXPECT_EQ(c.reads[0].rows, kRows);
    EXPECT_EQ(c.reads[0].stride, 4u);
    EXPECT_EQ(c.bytes, kRows * 2);
    auto sliced = sliced_payloads(p, plan.value());
    ASSERT_TRUE(sliced) << sliced.error()->message();
    ASSERT_EQ(sliced.value()[0].segments().size(), 1u);
    EXPECT_EQ(sliced.value()[0].segments()[0].rows(), kRows);
    EXPECT_EQ(sliced.value()[0].total_bytes(), kRows * 2);
  }
}

TEST(ReadPlan, FirstMatchingRuleWinsAndUnmatchedComponentsAreReplicated) {
  const std::vector<ComponentPayload> p = {payload("layer.up", "F32", {4, 4}, {64}),
                                           payload("layer.norm", "F32", {4}, {16})};
  auto plan = plan_reads(p, shard(1, 2, {{"layer.up", 1}, {"*.up", 0}}));
  ASSERT_TRUE(plan) << plan.error()->message();
  EXPECT_EQ(plan.value().components[0].split_dimension, 1);
  EXPECT_EQ(ranges(plan.value().components[0]),
            (std::vector<Range>{{1008, 8, 0}, {1024, 8, 8}, {1040, 8, 16}, {1056, 8, 24}}));
  // The norm matched no rule: every rank reads all of it.
  EXPECT_FALSE(plan.value().components[1].rule.has_value());
  EXPECT_EQ(ranges(plan.value().components[1]), (std::vector<Range>{{1000, 16, 0}}));
  // An explicit -1 replicates too.
  auto replicated = plan_reads(p, shard(0, 2, {{"*", SplitRule::kReplicate}}));
  ASSERT_TRUE(replicated);
  EXPECT_EQ(replicated.value().bytes, 80u);
}

TEST(ReadPlan, SharesOfAllRanksTileTheComponent) {
  // Over every rank, the planned reads cover each byte of the component once.
  const std::vector<ComponentPayload> p = {payload("w", "BF16", {7, 5, 3}, {30 * 3, 30 * 4})};
  for (int dim = 0; dim < 3; ++dim) {
    std::vector<int> seen(210, 0);
    for (std::uint32_t rank = 0; rank < 3; ++rank) {
      auto plan = plan_reads(p, shard(rank, 3, {{"w", dim}}));
      ASSERT_TRUE(plan) << plan.error()->message();
      for (const Range &r : ranges(plan.value().components[0])) {
        for (std::uint64_t b = 0; b < r.length; ++b) ++seen[r.file_offset - 1000 + b];
      }
    }
    for (int count : seen) ASSERT_EQ(count, 1) << "dimension " << dim;
  }
}

TEST(ReadPlan, BlockQuantizedSplitsOnlyOnWholeBlocks) {
  // 4 rows of 6 blocks (32 values in 18 bytes): 192 values a row.
  const BlockQuantizedEncoding q4{"quantization.gguf.q4-0", 32, 18};
  const std::vector<ComponentPayload> p = {payload("q", "U8", {4, 6}, {4 * 6 * 18}, q4)};
  auto plan = plan_reads(p, shard(1, 2, {{"q", 1}}));
  ASSERT_TRUE(plan) << plan.error()->message();
  const ComponentPlan &c = plan.value().components[0];
  EXPECT_EQ(c.begin, 96u);  // in values
  EXPECT_EQ(c.dimensions, (std::vector<std::uint64_t>{4, 3}));
  EXPECT_EQ(ranges(c).front(), (Range{1000 + 54, 54, 0}));
  // Rows split freely.
  EXPECT_TRUE(plan_reads(p, shard(2, 3, {{"q", 0}})));
  // 192 values over 4 ranks is 48 each: a block and a half.
  EXPECT_TRUE(FailsWith(plan_reads(p, shard(1, 4, {{"q", 1}})), ROOTSPAN_ERR_INVALID_ARGUMENT,
                        {"would cut a block of component \"q\"", "32 values in 18 bytes per block", "[48, 96)"}));
}

TEST(ReadPlan, RefusesBadInput) {
  const std::vector<ComponentPayload> p = {payload("w", "F32", {4, 4}, {64}), payload("s", "F32", {}, {4})};
  EXPECT_TRUE(FailsWith(plan_reads(p, shard(0, 0, {})), ROOTSPAN_ERR_INVALID_ARGUMENT, {"world size is 0"}));
  EXPECT_TRUE(FailsWith(plan_reads(p, shard(2, 2, {})), ROOTSPAN_ERR_INVALID_ARGUMENT, {"rank 2 is outside [0, 2)"}));
  EXPECT_TRUE(FailsWith(plan_reads(p, shard(0, 2, {{"w", 2}})), ROOTSPAN_ERR_INVALID_ARGUMENT,
                        {"splits dimension 2 of component \"w\"", "has 2 dimensions [4, 4]"}));
  EXPECT_TRUE(FailsWith(plan_reads(p, shard(0, 2, {{"s", 0}})), ROOTSPAN_ERR_INVALID_ARGUMENT,
                        {"component \"s\", which has 0 dimensions"}));
  EXPECT_TRUE(FailsWith(plan_reads(p, shard(0, 2, {{"w", -2}})), ROOTSPAN_ERR_INVALID_ARGUMENT, {"has dimension -2"}));
  EXPECT_TRUE(FailsWith(plan_reads(p, shard(0, 2, {{"w", 0}, {"lm_head*", 0}})), ROOTSPAN_ERR_NOT_FOUND,
                        {"pattern \"lm_head*\" matches none of the 2 components"}));
  EXPECT_TRUE(FailsWith(plan_reads(p, shard(0, 5, {{"w", 0}})), ROOTSPAN_ERR_INVALID_ARGUMENT,
                        {"has 4 entries, too few for the world size 5 (tensor_split)"}));
  // torch.chunk(5 rows, 4) gives 2, 2, 1 and nothing: refused on every rank, the empty one included.
  const std::vector<ComponentPayload> five = {payload("v", "F32", {5, 2}, {40})};
  for (std::uint32_t rank = 0; rank < 4; ++rank) {
    EXPECT_TRUE(FailsWith(plan_reads(five, chunked(rank, 4, {{"v", 0}})), ROOTSPAN_ERR_INVALID_ARGUMENT,
                          {"has 5 entries, too few for the world size 4 (chunk)", "the last rank would get nothing"}));
  }
  const std::vector<ComponentPayload> f4 = {payload("n", "F4", {4, 3}, {6})};
  EXPECT_TRUE(
      FailsWith(plan_reads(f4, shard(0, 3, {{"n", 1}})), ROOTSPAN_ERR_INVALID_ARGUMENT, {"inside a byte", "4 bits"}));
}

TEST(ReadPlan, SlicedPayloadsCarryThePlannedReads) {
  const std::vector<ComponentPayload> p = {payload("w", "F16", {4, 6}, {24, 24})};
  auto plan = plan_reads(p, shard(0, 2, {{"w", 1}}));
  ASSERT_TRUE(plan);
  auto sliced = sliced_payloads(p, plan.value());
  ASSERT_TRUE(sliced) << sliced.error()->message();
  const ComponentPayload &s = sliced.value()[0];
  EXPECT_EQ(s.dimensions(), (std::vector<std::uint64_t>{4, 3}));
  EXPECT_EQ(s.total_bytes(), 24u);
  ASSERT_EQ(s.segments().size(), 2u);  // two rows from each source, strided
  EXPECT_EQ(s.segments()[0].rows(), 2u);
  EXPECT_EQ(s.segments()[0].stride(), 12u);
  EXPECT_EQ(s.segments()[0].row_length(), 6u);
  EXPECT_EQ(s.segments()[1].file_offset(), 1024u);
  EXPECT_EQ(s.segments()[1].source(), "w.part1");
}

}  // namespace
}  // namespace rootspan::weights
