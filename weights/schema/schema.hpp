// ComponentSchema: the component schema file (docs/weight-schema.md, JSON Schema in
// config/weight-schema.schema.json), and the default schema that stands in
// for it when a checkpoint comes without one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "weights/checkpoints/checkpoint.hpp"
#include "weights/schema/component.hpp"

namespace rootspan::weights {

// The schema_version major this reader understands; newer minors are read.
inline constexpr std::uint64_t kSchemaMajor = 1;
// The schema_version of the default schema (default_schema).
inline constexpr const char *kDefaultSchemaVersion = "1.0.0";

struct ComponentSchema {
  std::string schema_version;  // "1.0.0"
  std::vector<ComponentSpec> components;
  // A default schema's (default_schema, select_default_components): each
  // component's one source tensor, found as the schema was made and aligned
  // with `components`, so that resolving it against the same checkpoint
  // looks no name up (on 10,000 tensors the lookups were some 4% of a
  // load). Empty for a schema read from a file.
  std::vector<TensorRef> found_sources;

  // Component c's carried source (found_sources), or null where the schema
  // carries none.
  const TensorRef *found_source(std::size_t c) const {
    return found_sources.size() == components.size() ? &found_sources[c] : nullptr;
  }

  // The component of that id, or nullptr.
  const ComponentSpec *find(std::string_view id) const;
};

// Parses and validates a schema. Rules: strict JSON (no duplicate keys);
// schema_version "MAJOR.MINOR.PATCH" with MAJOR == 1 (expected 1, actual
// MAJOR); a "components" array; in each component exactly the fields id,
// role, sources, dimensions, encoding and optionally required (default true),
// each of its type; unique ids; encoding exactly one of dense{element_type}
// and block_quantized{format_id, values_per_block, bytes_per_block}; and
// ComponentSpec::validate(). Errors: ROOTSPAN_ERR_INVALID_SCHEMA (operation
// "load_schema") naming `schema_name` and the component.
Result<ComponentSchema> parse_component_schema(std::string_view json_text, std::string_view schema_name);

// Reads and parses a schema file (ROOTSPAN_ERR_IO when it cannot be read).
Result<ComponentSchema> load_component_schema(const std::filesystem::path &path);

// One dense "values" component per tensor, in name order: id = the tensor
// name when it is a valid id, else "tensor.<n>" (n its position in name order,
// made unique); dimensions = shape; element type = dtype; required, except
// tensors with no elements, which are optional (an empty component cannot be
// loaded, and such a tensor should not fail the whole checkpoint).
ComponentSchema default_schema(const Checkpoint &checkpoint);

// The default schema's component for one tensor, under `id`.
ComponentSpec default_component(const TensorRef &tensor, std::string id);

}  // namespace rootspan::weights
