#include "weights/schema/resolve.hpp"

#include <algorithm>
#include <utility>
#include <variant>

#include <boost/container/small_vector.hpp>

#include "core/text/quoting.hpp"
#include "weights/files/checked_math.hpp"
#include "weights/schema/component_failure.hpp"

namespace rootspan::weights {

namespace {

std::string where(const TensorRef &tensor) {
  return "tensor " + quoted_text(tensor.tensor->name) + " in " + quoted_text(tensor.shard->file);
}

// The dimensions a source contributes: its shape, or for block-quantized
// bytes its block grid.
Result<std::vector<std::uint64_t>> source_dimensions(const ComponentSpec &component, const TensorRef &tensor,
                                                     const ComponentFailure &fail) {
  const auto *block = std::get_if<BlockQuantizedEncoding>(&component.encoding);
  if (!block) return tensor.tensor->shape;
  std::vector<std::uint64_t> grid = tensor.tensor->shape;
  if (grid.empty()) {
    return fail(where(tensor) + " is a scalar; block-quantized bytes need a last axis of whole " +
                std::to_string(block->bytes_per_block) + "-byte blocks");
  }
  if (grid.back() % block->bytes_per_block != 0) {
    return fail(where(tensor) + ": its last axis of " + std::to_string(grid.back()) +
                    " bytes is not a whole number of " + std::to_string(block->bytes_per_block) + "-byte blocks",
                0, grid.back() % block->bytes_per_block);
  }
  grid.back() /= block->bytes_per_block;
  return grid;
}

// The stack [count, shape...] when every source has the same dimensions.
std::optional<std::vector<std::uint64_t>> stacked(const std::vector<std::vector<std::uint64_t>> &parts) {
  for (const auto &part : parts) {
    if (part != parts.front()) return std::nullopt;
  }
  std::vector<std::uint64_t> out{parts.size()};
  out.insert(out.end(), parts.front().begin(), parts.front().end());
  return out;
}

// The concatenation along axis 0 when every source has rank >= 1 and the
// same trailing dimensions.
std::optional<std::vector<std::uint64_t>> concatenated(const std::vector<std::vector<std::uint64_t>> &parts) {
  std::uint64_t first = 0;
  for (const auto &part : parts) {
    if (part.empty() || part.size() != parts.front().size()) return std::nullopt;
    if (!std::equal(part.begin() + 1, part.end(), parts.front().begin() + 1)) return std::nullopt;
    const auto sum = checked_add(first, part.front());
    if (!sum) return std::nullopt;
    first = *sum;
  }
  std::vector<std::uint64_t> out = parts.front();
  out.front() = first;
  return out;
}

// One SegmentFile for each of a checkpoint's shards, made when a segment
// first reads it and shared by every segment after.
class ShardFiles {
 public:
  explicit ShardFiles(const Checkpoint &checkpoint)
      : first_(checkpoint.shards().data()), files_(checkpoint.shards().size()) {}

  const std::shared_ptr<const SegmentFile> &of(const Shard &shard) {
    std::shared_ptr<const SegmentFile> &file = files_.at(static_cast<std::size_t>(&shard - first_));
    if (!file) file = std::make_shared<const SegmentFile>(SegmentFile{shard.file, shard.path});
    return file;
  }

 private:
  const Shard *first_;
  std::vector<std::shared_ptr<const SegmentFile>> files_;
};

// `found`: the component's source as the default schema found it, or null;
// taken for the source of that name.
Result<ResolvedComponent> resolve_one(const Checkpoint &checkpoint, ComponentSpec component, ShardFiles &shard_files,
                                      const TensorRef *found = nullptr) {
  const ComponentFailure fail(component.id);
  if (auto valid = component.validate(); !valid) return valid.error();

  // Inline room for one source, the usual case: a load resolves thousands of components.
  boost::container::small_vector<TensorRef, 1> tensors;
  std::vector<std::string> missing;
  for (const std::string &source : component.sources) {
    const bool as_found = found != nullptr && found->tensor->name == source;
    const TensorRef tensor = as_found ? *found : checkpoint.find(source);
    if (!tensor) missing.push_back(source);
    tensors.push_back(tensor);
  }
  if (!missing.empty()) {
    std::string names;
    for (const auto &name : missing) names += (names.empty() ? "" : ", ") + quoted_text(name);
    const std::string reason = std::to_string(missing.size()) + " of its " + std::to_string(component.sources.size()) +
                               " source tensors are not in the checkpoint: " + names;
    if (component.required) {
      return fail("required, but " + reason, component.sources.size(), component.sources.size() - missing.size());
    }
    return ResolvedComponent{std::nullopt, SkippedComponent{component.id, std::move(missing), reason}};
  }

  const std::uint64_t bytes = component.physical_bytes().value();  // validate() computed it
  if (bytes == 0) {
    const std::string reason = "dimensions " + shape_text(component.dimensions) + " hold no bytes";
    if (component.required) return fail("required, but its " + reason + " (an empty component cannot be loaded)");
    return ResolvedComponent{std::nullopt, SkippedComponent{component.id, {}, reason}};
  }

  const SafetensorsDtype element_type = component.physical_element_type();
  // One dense source: its dimensions are its shape, compared below as they lie (not copied).
  const bool one_dense = tensors.size() == 1 && std::holds_alternative<DenseEncoding>(component.encoding);
  std::vector<std::vector<std::uint64_t>> parts;
  for (const TensorRef &tensor : tensors) {
    if (tensor.tensor->dtype.dtype != element_type.dtype) {
      return fail(where(tensor) + " is " + std::string(tensor.tensor->dtype.name) +
                      ", the component's element type is " + std::string(element_type.name),
                  static_cast<std::uint64_t>(element_type.dtype),
                  static_cast<std::uint64_t>(tensor.tensor->dtype.dtype));
    }
    if (one_dense) break;
    auto dims = source_dimensions(component, tensor, fail);
    if (!dims) return dims.error();
    parts.push_back(std::move(dims).value());
  }

  // One source with the component's own dimensions, the usual case, needs
  // neither the stack nor the concatenation worked out.
  const bool as_is = one_dense ? tensors.front().tensor->shape == component.dimensions
                               : parts.size() == 1 && parts.front() == component.dimensions;
  if (!as_is) {
    if (one_dense) parts.push_back(tensors.front().tensor->shape);
    const auto stack = stacked(parts);
    const auto concat = concatenated(parts);
    if (stack != component.dimensions && concat != component.dimensions) {
      std::string shapes;
      for (std::size_t i = 0; i < parts.size(); ++i) {
        shapes += (i ? ", " : "") + where(tensors[i]) + " " + shape_text(parts[i]);
      }
      return fail("dimensions " + shape_text(component.dimensions) + " are neither the stack " +
                  (stack ? shape_text(*stack) : std::string("(shapes differ)")) + " nor the concatenation " +
                  (concat ? shape_text(*concat) : std::string("(trailing axes differ)")) +
                  " of its sources: " + shapes);
    }
  }

  std::vector<Segment> segments;
  segments.reserve(tensors.size());
  for (const TensorRef &tensor : tensors) {
    segments.emplace_back(tensor.tensor->name, shard_files.of(*tensor.shard), tensor.file_offset(),
                          tensor.tensor->byte_length());
  }
  auto payload = ComponentPayload::from_own_segments(std::move(component), element_type, std::move(segments));
  if (!payload) return payload.error();
  return ResolvedComponent{std::move(payload).value(), std::nullopt};
}

}  // namespace

Result<ResolvedComponent> resolve_component(const Checkpoint &checkpoint, ComponentSpec component) {
  ShardFiles shard_files(checkpoint);
  return resolve_one(checkpoint, std::move(component), shard_files);
}

Result<ResolvedSchema> resolve_schema(const Checkpoint &checkpoint, ComponentSchema schema) {
  ResolvedSchema resolved;
  // Reserved: a vector grown by doubling can hold twice what it needs, which
  // for 2^20 components is hundreds of megabytes.
  resolved.payloads.reserve(schema.components.size());
  ShardFiles shard_files(checkpoint);
  for (std::size_t c = 0; c < schema.components.size(); ++c) {
    auto one = resolve_one(checkpoint, std::move(schema.components[c]), shard_files, schema.found_source(c));
    if (!one) return one.error();
    if (one.value().payload) {
      resolved.payloads.push_back(std::move(*one.value().payload));
    } else {
      resolved.skipped.push_back(std::move(*one.value().skipped));
    }
  }
  return resolved;
}

}  // namespace rootspan::weights
