// The read plan of one rank in a tensor-parallel load: which bytes of which
// file this rank reads for each component, and where each range lands in the
// component's destination. It is a pure function of the resolved components
// (checkpoint and schema), the slicing rules, the rank and the world size, so
// every rank computes the same plan and nothing is read to make it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/diagnostic.hpp"
#include "weights/schema/payload.hpp"

namespace rootspan::weights {

// Components `pattern` names (an fnmatch glob over ids and tensor names, as
// for --tensors: pattern_names in component_selection.hpp)
// are split along `dimension`, or replicated on every rank when it is
// kReplicate. The first rule that matches a component wins; a component
// matching no rule is replicated.
struct SplitRule {
  static constexpr int kReplicate = -1;
  std::string pattern;
  int dimension = kReplicate;
};

// How an uneven dimension is shared among the ranks.
enum class SplitConvention {
  kTensorSplit,  // n / world each, the first n % world ranks one more (torch.tensor_split)
  kChunk,        // ceil(n / world) each, the last rank what is left (torch.chunk, DTensor's Shard)
};

// "tensor_split" or "chunk", as the C API, the CLI and the plan JSON name them.
const char *split_convention_name(SplitConvention convention);

struct ShardSpec {
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  std::vector<SplitRule> rules;
  SplitConvention convention = SplitConvention::kTensorSplit;
};

// Bytes of a shard file and their place in the destination: `rows` rows of
// `length` bytes, the first at `file_offset`, each `stride` bytes after the
// one before in the file, landing one after another from
// `destination_offset`. A split along a later axis is one strided read per
// source, not one read per row; rows == 1 is one contiguous range.
struct PlannedRead {
  std::string source;          // the source tensor
  std::string file;            // shard name, relative to the checkpoint
  std::filesystem::path path;  // the shard file
  std::uint64_t file_offset = 0;
  std::uint64_t length = 0;  // of one row
  std::uint64_t destination_offset = 0;
  std::uint64_t rows = 1;
  std::uint64_t stride = 0;  // file bytes from one row's start to the next; length when rows == 1
  std::uint64_t bytes() const { return rows * length; }
};

struct ComponentPlan {
  std::string id;
  std::optional<std::size_t> rule;  // the rule that matched; none: replicated by default
  int split_dimension = SplitRule::kReplicate;
  std::vector<std::uint64_t> full_dimensions;  // as the schema gives them (block grid when block-quantized)
  std::vector<std::uint64_t> dimensions;       // this rank's slice, in the same units
  // This rank's slice along split_dimension: [begin, begin + count) in
  // elements, or for the last axis of a block-quantized component in values.
  std::uint64_t begin = 0;
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;         // the destination's size: the sum of the reads
  std::vector<PlannedRead> reads;  // in destination order, contiguous, adjacent ranges merged
};

struct ReadPlan {
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  std::vector<ComponentPlan> components;  // in payload order
  std::uint64_t bytes = 0;                // what this rank reads in all
};

// This rank's share of `n` items split over `world` ranks under a
// convention: {begin, count}; count may be 0 under kChunk (torch.chunk(5, 4)
// gives 2, 2, 1 and nothing).
struct ShareRange {
  std::uint64_t begin = 0;
  std::uint64_t count = 0;
};
ShareRange share_of(std::uint64_t n, std::uint32_t rank, std::uint32_t world,
                    SplitConvention convention = SplitConvention::kTensorSplit);

// Plans this rank's reads. Errors (operation "plan_reads", nothing read):
// a world size of 0 or a rank outside [0, world) (INVALID_ARGUMENT); a rule
// whose pattern matches no component (NOT_FOUND); a rule dimension below -1,
// or at or past the rank of a component it matches (INVALID_ARGUMENT); a split
// of a block-quantized component's last (block) axis that would cut a block,
// the values being split as the convention would split the dequantized
// tensor (INVALID_ARGUMENT, naming the component and the block size); a split
// that would leave some rank nothing (INVALID_ARGUMENT); a dense
// split whose rows are not whole bytes (sub-byte types, INVALID_ARGUMENT).
Result<ReadPlan> plan_reads(std::span<const ComponentPayload> payloads, const ShardSpec &spec);

// The plan as one JSON document (`rootspan plan --json`).
std::string read_plan_json(const ReadPlan &plan, const ShardSpec &spec);

// Each planned component as a payload of its slice (one segment per planned
// read, strided as the read is, its dimensions the slice's), so the ordinary materializer loads
// exactly the planned bytes. `payloads` are those the plan was made from.
Result<std::vector<ComponentPayload>> sliced_payloads(std::span<const ComponentPayload> payloads, const ReadPlan &plan);

}  // namespace rootspan::weights
