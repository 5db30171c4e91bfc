#include "weights/schema/read_plan.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <variant>

#include "core/text/quoting.hpp"
#include "weights/schema/component_selection.hpp"

namespace rootspan::weights {

namespace {

constexpr const char *kOperation = "plan_reads";

Diagnostic invalid(std::string cause) {
  return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation, std::move(cause));
}

std::uint64_t product(std::span<const std::uint64_t> dims) {
  std::uint64_t p = 1;
  for (std::uint64_t d : dims) p *= d;  // the payload's physical size already fit in 64 bits
  return p;
}

// A logical range of the component's bytes (the concatenation of its
// segments) and where it lands in the destination: `rows` rows of `length`
// bytes, `stride` apart, landing one after another.
struct LogicalRange {
  std::uint64_t offset;
  std::uint64_t length;
  std::uint64_t destination;
  std::uint64_t rows = 1;
  std::uint64_t stride = 0;
};

// Cuts the logical ranges at segment boundaries into file reads: the rows of
// a range that lie wholly in one segment become one strided read; a row
// crossing a boundary is cut into plain reads. A plain read merges into the
// previous one when both the file and the destination continue.
std::vector<PlannedRead> file_reads(const ComponentPayload &payload, const std::vector<LogicalRange> &ranges) {
  std::vector<PlannedRead> reads;
  const auto &segments = payload.segments();
  std::size_t s = 0;
  std::uint64_t segment_start = 0;  // logical offset of segments[s]
  const auto seek = [&](std::uint64_t offset) {
    while (offset >= segment_start + segments[s].length()) segment_start += segments[s++].length();
  };
  const auto plain = [&](std::uint64_t offset, std::uint64_t left, std::uint64_t destination) {
    while (left != 0) {
      seek(offset);
      const Segment &segment = segments[s];
      const std::uint64_t within = offset - segment_start;
      const std::uint64_t n = std::min(left, segment.length() - within);
      const std::uint64_t file_offset = segment.file_offset() + within;
      PlannedRead *last = reads.empty() ? nullptr : &reads.back();
      if (last != nullptr && last->rows == 1 && last->path == segment.path() && last->source == segment.source() &&
          last->file_offset + last->length == file_offset && last->destination_offset + last->length == destination) {
        last->length += n;
        last->stride = last->length;
      } else {
        reads.push_back({segment.source(), segment.file(), segment.path(), file_offset, n, destination, 1, n});
      }
      offset += n;
      destination += n;
      left -= n;
    }
  };
  for (const LogicalRange &range : ranges) {
    if (range.rows == 1) {
      plain(range.offset, range.length, range.destination);
      continue;
    }
    for (std::uint64_t row = 0; row < range.rows;) {
      const std::uint64_t start = range.offset + row * range.stride;
      const std::uint64_t destination = range.destination + row * range.length;
      seek(start);
      const Segment &segment = segments[s];
      const std::uint64_t end = segment_start + segment.length();
      if (start + range.length > end) {  // this row crosses into the next segment
        plain(start, range.length, destination);
        ++row;
        continue;
      }
      // Rows row .. row + fit - 1 end inside this segment.
      const std::uint64_t fit = std::min(range.rows - row, (end - range.length - start) / range.stride + 1);
      reads.push_back({segment.source(), segment.file(), segment.path(),
                       segment.file_offset() + (start - segment_start), range.length, destination, fit, range.stride});
      if (fit == 1) reads.back().stride = range.length;
      row += fit;
    }
  }
  return reads;
}

Result<ComponentPlan> plan_component(const ComponentPayload &payload, const ShardSpec &spec,
                                     std::vector<bool> &rule_used) {
  const ComponentSpec &component = payload.component();
  ComponentPlan plan;
  plan.id = component.id;
  plan.full_dimensions = component.dimensions;
  plan.dimensions = component.dimensions;
  for (std::size_t r = 0; r < spec.rules.size(); ++r) {
    if (pattern_names(spec.rules[r].pattern, component)) {
      rule_used[r] = true;
      if (!plan.rule) plan.rule = r;
    }
  }
  if (plan.rule) plan.split_dimension = spec.rules[*plan.rule].dimension;
  const auto &dims = component.dimensions;
  const auto *blocks = std::get_if<BlockQuantizedEncoding>(&component.encoding);
  const std::string name = "component " + quoted_text(component.id);

  if (plan.split_dimension == SplitRule::kReplicate) {
    plan.count = dims.empty() ? 1 : dims[0];
    plan.bytes = payload.total_bytes();
    plan.reads = file_reads(payload, {{0, payload.total_bytes(), 0}});
    return plan;
  }
  const auto d = static_cast<std::size_t>(plan.split_dimension);
  const std::string rule_text =
      "split rule " + quoted_text(spec.rules[*plan.rule].pattern) + "=" + std::to_string(plan.split_dimension);
  if (d >= dims.size()) {
    return invalid(rule_text + " splits dimension " + std::to_string(d) + " of " + name + ", which has " +
                   std::to_string(dims.size()) + " dimensions " + shape_text(dims) + " (expected a dimension in [0, " +
                   std::to_string(dims.size()) + ") or -1 to replicate)");
  }
  // Bits of one step along d: the elements (or blocks) after it.
  const std::uint64_t unit_bits = blocks != nullptr ? blocks->bytes_per_block * 8 : payload.element_type().bits;
  const std::uint64_t inner_bits = product(std::span(dims).subspan(d + 1)) * unit_bits;
  if (inner_bits % 8 != 0) {
    return invalid(rule_text + " would split " + name + " (" + std::string(payload.element_type().name) +
                   ") inside a byte: one step along dimension " + std::to_string(d) + " is " +
                   std::to_string(inner_bits) + " bits");
  }
  const std::uint64_t inner = inner_bits / 8;
  const std::uint64_t n = dims[d];
  const bool block_axis = blocks != nullptr && d + 1 == dims.size();
  const std::uint64_t values_per_step = block_axis ? blocks->values_per_block : 1;
  const std::uint64_t values = n * values_per_step;
  // The last rank's share is the smallest under either convention.
  if (share_of(values, spec.world_size - 1, spec.world_size, spec.convention).count == 0) {
    return invalid(rule_text + ": dimension " + std::to_string(d) + " of " + name + " has " + std::to_string(values) +
                   (block_axis ? " values" : " entries") + ", too few for the world size " +
                   std::to_string(spec.world_size) + " (" + split_convention_name(spec.convention) +
                   "), so the last rank would get nothing");
  }
  const ShareRange share = share_of(values, spec.rank, spec.world_size, spec.convention);
  plan.begin = share.begin;
  plan.count = share.count;
  if (block_axis && (share.begin % values_per_step != 0 || share.count % values_per_step != 0)) {
    return invalid(rule_text + " would cut a block of " + name + " (format " + quoted_text(blocks->format_id) + ", " +
                   std::to_string(blocks->values_per_block) + " values in " + std::to_string(blocks->bytes_per_block) +
                   " bytes per block): rank " + std::to_string(spec.rank) + " of " + std::to_string(spec.world_size) +
                   " would take values [" + std::to_string(share.begin) + ", " +
                   std::to_string(share.begin + share.count) + ") of " + std::to_string(values));
  }
  const std::uint64_t begin = share.begin / values_per_step, count = share.count / values_per_step;
  plan.dimensions[d] = count;
  // One row per step of the axes before d, each n * inner bytes after the
  // last; when the rank takes the whole axis, or there is one row, the rows
  // join into one range.
  const std::uint64_t outer = product(std::span(dims).first(d));
  const LogicalRange range = (outer == 1 || count == n)
                                 ? LogicalRange{begin * inner, outer * count * inner, 0}
                                 : LogicalRange{begin * inner, count * inner, 0, outer, n * inner};
  plan.bytes = outer * count * inner;
  plan.reads = file_reads(payload, {range});
  return plan;
}

}  // namespace

const char *split_convention_name(SplitConvention convention) {
  return convention == SplitConvention::kChunk ? "chunk" : "tensor_split";
}

ShareRange share_of(std::uint64_t n, std::uint32_t rank, std::uint32_t world, SplitConvention convention) {
  if (convention == SplitConvention::kChunk) {
    const std::uint64_t size = n / world + (n % world != 0 ? 1 : 0);
    const std::uint64_t begin = std::min<std::uint64_t>(n, rank * size);
    return {begin, std::min(size, n - begin)};
  }
  const std::uint64_t base = n / world, extra = n % world;
  return {rank * base + std::min<std::uint64_t>(rank, extra), base + (rank < extra ? 1 : 0)};
}

Result<ReadPlan> plan_reads(std::span<const ComponentPayload> payloads, const ShardSpec &spec) {
  if (spec.world_size == 0) return invalid("the world size is 0; expected at least 1 rank");
  if (spec.rank >= spec.world_size) {
    return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation,
                      "rank " + std::to_string(spec.rank) + " is outside [0, " + std::to_string(spec.world_size) +
                          ") for a world size of " + std::to_string(spec.world_size),
                      spec.world_size - 1, spec.rank);
  }
  for (const SplitRule &rule : spec.rules) {
    if (rule.dimension < SplitRule::kReplicate) {
      return invalid("split rule " + quoted_text(rule.pattern) + " has dimension " + std::to_string(rule.dimension) +
                     "; expected a dimension >= 0, or -1 to replicate");
    }
  }
  ReadPlan plan;
  plan.rank = spec.rank;
  plan.world_size = spec.world_size;
  std::vector<bool> rule_used(spec.rules.size(), false);
  for (const ComponentPayload &payload : payloads) {
    auto component = plan_component(payload, spec, rule_used);
    if (!component) return component.error();
    plan.bytes += component.value().bytes;
    plan.components.push_back(std::move(component).value());
  }
  for (std::size_t r = 0; r < spec.rules.size(); ++r) {
    if (!rule_used[r]) {
      return make_error(ROOTSPAN_ERR_NOT_FOUND, kOperation,
                        "split rule pattern " + quoted_text(spec.rules[r].pattern) + " matches none of the " +
                            std::to_string(payloads.size()) + " components being loaded");
    }
  }
  return plan;
}

std::string read_plan_json(const ReadPlan &plan, const ShardSpec &spec) {
  nlohmann::json doc;
  doc["rank"] = plan.rank;
  doc["world_size"] = plan.world_size;
  doc["bytes"] = plan.bytes;
  doc["split_convention"] = split_convention_name(spec.convention);
  auto &rules = doc["rules"] = nlohmann::json::array();
  for (const SplitRule &rule : spec.rules) rules.push_back({{"pattern", rule.pattern}, {"dimension", rule.dimension}});
  auto &components = doc["components"] = nlohmann::json::array();
  for (const ComponentPlan &c : plan.components) {
    nlohmann::json reads = nlohmann::json::array();
    for (const PlannedRead &r : c.reads) {
      reads.push_back({{"tensor", r.source},
                       {"file", r.file},
                       {"file_offset", r.file_offset},
                       {"length", r.length},
                       {"rows", r.rows},
                       {"stride", r.stride},
                       {"destination_offset", r.destination_offset}});
    }
    components.push_back({{"id", c.id},
                          {"rule", c.rule ? nlohmann::json(spec.rules[*c.rule].pattern) : nlohmann::json(nullptr)},
                          {"split_dimension", c.split_dimension},
                          {"full_dimensions", c.full_dimensions},
                          {"dimensions", c.dimensions},
                          {"begin", c.begin},
                          {"count", c.count},
                          {"bytes", c.bytes},
                          {"reads", std::move(reads)}});
  }
  return doc.dump(2);
}

Result<std::vector<ComponentPayload>> sliced_payloads(std::span<const ComponentPayload> payloads,
                                                      const ReadPlan &plan) {
  std::vector<ComponentPayload> out;
  out.reserve(payloads.size());
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    const ComponentPlan &c = plan.components.at(i);
    ComponentSpec slice = payloads[i].component();
    slice.dimensions = c.dimensions;
    slice.sources.clear();
    std::vector<Segment> segments;
    for (const PlannedRead &r : c.reads) {
      slice.sources.push_back(r.source);
      segments.emplace_back(r.source, r.file, r.path, r.file_offset, r.length, r.rows, r.stride);
    }
    auto payload =
        ComponentPayload::from_own_segments(std::move(slice), payloads[i].element_type(), std::move(segments));
    if (!payload) return payload.error();
    out.push_back(std::move(payload).value());
  }
  return out;
}

}  // namespace rootspan::weights
