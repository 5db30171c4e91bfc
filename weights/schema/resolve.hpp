// Resolving a component schema against a checkpoint: each component's source
// tensors are found in their shards, checked against the component (element
// type, shapes, sizes) and turned into a validated ComponentPayload of file
// segments (docs/weight-schema.md). No tensor data is read here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/diagnostic.hpp"
#include "weights/checkpoints/checkpoint.hpp"
#include "weights/schema/component.hpp"
#include "weights/schema/payload.hpp"
#include "weights/schema/schema.hpp"

namespace rootspan::weights {

// An optional component that was left out, and why.
struct SkippedComponent {
  std::string id;
  std::vector<std::string> missing;  // source tensors not in the checkpoint
  std::string reason;
};

// Exactly one of the two is set.
struct ResolvedComponent {
  std::optional<ComponentPayload> payload;
  std::optional<SkippedComponent> skipped;
};

// Resolves one component. The sources must all be in the checkpoint (a
// required component fails, ROOTSPAN_ERR_INVALID_PAYLOAD; an optional one is
// skipped), and so must a non-zero physical size. Then, per source: its dtype
// is the component's physical element type (U8 for block-quantized bytes).
// The sources' dimensions — the shape, or for block-quantized bytes the block
// grid, the shape with its last axis divided by bytes_per_block — must give
// the component's dimensions as they are (one source), as the stack
// [count, shape...], or as the concatenation along axis 0. Errors name the
// component, the tensor, the file and expected and actual values (operation
// "load_component").
// The component is moved into its payload: pass an rvalue to spare a copy.
Result<ResolvedComponent> resolve_component(const Checkpoint &checkpoint, ComponentSpec component);

struct ResolvedSchema {
  std::vector<ComponentPayload> payloads;  // in schema order
  std::vector<SkippedComponent> skipped;
};

// Resolves every component, stopping at the first that fails; the schema's
// components are moved into the payloads (pass an rvalue to spare a copy).
// The schema's found_sources, if any, must be of this checkpoint; each is
// taken for its component's source of that name, and any other source is
// looked up by name.
Result<ResolvedSchema> resolve_schema(const Checkpoint &checkpoint, ComponentSchema schema);

}  // namespace rootspan::weights
