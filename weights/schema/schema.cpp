#include "weights/schema/schema.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <span>
#include <utility>

#include "core/text/quoting.hpp"
#include "core/text/strict_json.hpp"
#include "weights/checkpoints/gguf_checkpoint.hpp"
#include "weights/files/checked_math.hpp"
#include "weights/files/input_file.hpp"
#include "weights/formats/limits.hpp"
#include "weights/schema/gguf_component.hpp"

namespace rootspan::weights {

namespace {

using nlohmann::json;

constexpr const char *kOperation = "load_schema";

struct Failure {
  std::string prefix;  // "\"schema.json\": " or "\"schema.json\": component \"x\": "

  Diagnostic operator()(const std::string &cause) const {
    return make_error(ROOTSPAN_ERR_INVALID_SCHEMA, kOperation, prefix + cause);
  }
  Diagnostic operator()(const std::string &cause, std::uint64_t expected, std::uint64_t actual) const {
    return make_error(ROOTSPAN_ERR_INVALID_SCHEMA, kOperation, prefix + cause, expected, actual);
  }
};

std::string kind(const json &value) { return std::string("a JSON ") + value.type_name(); }

// Only the listed fields may appear: a misspelt "requird" must not silently
// mean the default.
Result<void> only_fields(const json &object, std::initializer_list<std::string_view> allowed, const std::string &what,
                         const Failure &fail) {
  for (const auto &[key, _] : object.items()) {
    bool known = false;
    for (std::string_view name : allowed) known = known || key == name;
    if (!known) {
      std::string names;
      for (std::string_view name : allowed) names += (names.empty() ? "" : ", ") + std::string(name);
      return fail(what + " has unknown field " + quoted_text(key) + " (expected " + names + ")");
    }
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

// MAJOR of "MAJOR.MINOR.PATCH": three decimal numbers without leading zeros.
Result<std::uint64_t> parse_major(const json &version, const Failure &fail) {
  if (!version.is_string()) return fail("schema_version is " + kind(version) + ", not a string");
  const std::string &text = version.get_ref<const std::string &>();
  const auto malformed = [&] {
    return fail("schema_version " + quoted_text(text) + " is not MAJOR.MINOR.PATCH (decimal, no leading zeros)");
  };
  std::uint64_t parts[3] = {};
  std::size_t at = 0;
  for (int i = 0; i < 3; ++i) {
    const std::size_t stop = i < 2 ? text.find('.', at) : text.size();
    if (stop == std::string::npos) return malformed();
    const std::string_view digits(text.data() + at, stop - at);
    if (digits.empty() || (digits.size() > 1 && digits.front() == '0')) return malformed();
    const auto [next, error] = std::from_chars(digits.data(), digits.data() + digits.size(), parts[i]);
    if (error != std::errc() || next != digits.data() + digits.size()) return malformed();
    at = stop + 1;
  }
  return parts[0];
}

Result<Encoding> parse_encoding(const json &encoding, const Failure &fail) {
  if (!encoding.is_object()) return fail("encoding is " + kind(encoding) + ", not an object");
  if (encoding.size() != 1) {
    return fail("encoding must hold exactly one of \"dense\" and \"block_quantized\", it holds " +
                    std::to_string(encoding.size()) + " fields",
                1, encoding.size());
  }
  if (const auto dense = encoding.find("dense"); dense != encoding.end()) {
    if (!dense->is_object()) return fail("encoding.dense is " + kind(*dense) + ", not an object");
    if (auto only = only_fields(*dense, {"element_type"}, "encoding.dense", fail); !only) return only.error();
    const auto type = dense->find("element_type");
    if (type == dense->end()) return fail("encoding.dense has no element_type");
    if (!type->is_string()) return fail("encoding.dense.element_type is " + kind(*type) + ", not a string");
    const auto dtype = safetensors_dtype(std::string_view(type->get_ref<const std::string &>()));
    if (!dtype) {
      return fail("encoding.dense.element_type " + quoted_text(type->get_ref<const std::string &>()) +
                  " is not a safetensors dtype name");
    }
    return Encoding{DenseEncoding{*dtype}};
  }
  const auto block = encoding.find("block_quantized");
  if (block == encoding.end()) {
    return fail("encoding field " + quoted_text(encoding.begin().key()) +
                " is neither \"dense\" nor \"block_quantized\"");
  }
  if (!block->is_object()) return fail("encoding.block_quantized is " + kind(*block) + ", not an object");
  if (auto only =
          only_fields(*block, {"format_id", "values_per_block", "bytes_per_block"}, "encoding.block_quantized", fail);
      !only) {
    return only.error();
  }
  BlockQuantizedEncoding out;
  const auto format = block->find("format_id");
  if (format == block->end() || !format->is_string()) {
    return fail("encoding.block_quantized.format_id is missing or not a string");
  }
  out.format_id = format->get<std::string>();
  for (auto [field, target] :
       {std::pair{"values_per_block", &out.values_per_block}, std::pair{"bytes_per_block", &out.bytes_per_block}}) {
    const auto value = block->find(field);
    if (value == block->end()) return fail(std::string("encoding.block_quantized has no ") + field);
    if (!value->is_number_unsigned() || value->get<std::uint64_t>() == 0) {
      return fail(std::string("encoding.block_quantized.") + field + " is " + value->dump() +
                  ", not a positive integer");
    }
    *target = value->get<std::uint64_t>();
  }
  return Encoding{std::move(out)};
}

Result<ComponentSpec> parse_component(const json &entry, std::size_t position, const Failure &schema_fail) {
  Failure fail{schema_fail.prefix + "component #" + std::to_string(position) + ": "};
  if (!entry.is_object()) return fail("is " + kind(entry) + ", not an object");
  if (auto only =
          only_fields(entry, {"id", "role", "sources", "dimensions", "encoding", "required"}, "component", fail);
      !only) {
    return only.error();
  }
  for (const char *field : {"id", "role", "sources", "dimensions", "encoding"}) {
    if (!entry.contains(field)) return fail(std::string("missing field \"") + field + "\"");
  }

  ComponentSpec component;
  const json &id = entry["id"];
  if (!id.is_string()) return fail("id is " + kind(id) + ", not a string");
  component.id = id.get<std::string>();
  if (const std::string problem = component_id_problem(component.id); !problem.empty()) {
    return fail("id " + quoted_text(component.id) + " is not valid: " + problem);
  }
  fail.prefix = schema_fail.prefix + "component " + quoted_text(component.id) + ": ";

  const json &role = entry["role"];
  if (!role.is_string()) return fail("role is " + kind(role) + ", not a string");
  const auto parsed_role = role_from_name(role.get_ref<const std::string &>());
  if (!parsed_role) {
    return fail("role " + quoted_text(role.get_ref<const std::string &>()) +
                " is not one of values, packed_values, scales, zero_points, indices, permutation, codebook, "
                "metadata");
  }
  component.role = *parsed_role;

  const json &sources = entry["sources"];
  if (!sources.is_array()) return fail("sources is " + kind(sources) + ", not an array");
  if (sources.size() > kMaxComponentSources) {
    return fail("sources has " + std::to_string(sources.size()) + " entries, more than the limit of " +
                    std::to_string(kMaxComponentSources),
                kMaxComponentSources, sources.size());
  }
  std::map<std::string, std::size_t> first_at;  // a source named twice would be copied twice from one range
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (!sources[i].is_string())
      return fail("sources[" + std::to_string(i) + "] is " + kind(sources[i]) + ", not a string");
    const auto [seen, fresh] = first_at.emplace(sources[i].get<std::string>(), i);
    if (!fresh) {
      return fail("sources[" + std::to_string(i) + "] names tensor " + quoted_text(seen->first) +
                  " again (first at sources[" + std::to_string(seen->second) +
                  "]); a component holds each source tensor once");
    }
    component.sources.push_back(sources[i].get<std::string>());
  }

  const json &dimensions = entry["dimensions"];
  if (!dimensions.is_array()) return fail("dimensions is " + kind(dimensions) + ", not an array");
  if (dimensions.size() > kMaxTensorRank) {
    return fail("dimensions has " + std::to_string(dimensions.size()) + " entries, more than the limit of " +
                    std::to_string(kMaxTensorRank) + " (the tensor rank limit)",
                kMaxTensorRank, dimensions.size());
  }
  for (std::size_t i = 0; i < dimensions.size(); ++i) {
    if (!dimensions[i].is_number_unsigned()) {
      return fail("dimensions[" + std::to_string(i) + "] is " + dimensions[i].dump() + ", not a non-negative integer");
    }
    component.dimensions.push_back(dimensions[i].get<std::uint64_t>());
  }

  auto encoding = parse_encoding(entry["encoding"], fail);
  if (!encoding) return encoding.error();
  component.encoding = std::move(encoding).value();

  if (const auto required = entry.find("required"); required != entry.end()) {
    if (!required->is_boolean()) return fail("required is " + kind(*required) + ", not a boolean");
    component.required = required->get<bool>();
  }

  if (auto valid = component.validate(); !valid) {
    Diagnostic error = valid.error();
    error.cause = schema_fail.prefix + error.cause;
    return error;
  }
  return component;
}

}  // namespace

const ComponentSpec *ComponentSchema::find(std::string_view id) const {
  for (const auto &component : components) {
    if (component.id == id) return &component;
  }
  return nullptr;
}

Result<ComponentSchema> parse_component_schema(std::string_view json_text, std::string_view schema_name) {
  const Failure fail{quoted_text(schema_name) + ": "};
  // The longest array a schema may hold is its component list; each list
  // is checked against its own limit below.
  const JsonLimits limits{kMaxSchemaComponents, SIZE_MAX,
                          "a schema holds at most " + std::to_string(kMaxSchemaComponents) + " components"};
  auto parsed = parse_strict_json(json_text, ROOTSPAN_ERR_INVALID_SCHEMA, kOperation, schema_name, limits);
  if (!parsed) return parsed.error();
  const json &root = parsed.value();
  if (!root.is_object()) return fail("schema is " + kind(root) + ", not an object");
  // "$schema" lets editors find config/weight-schema.schema.json.
  if (auto only = only_fields(root, {"schema_version", "components", "$schema"}, "schema", fail); !only) {
    return only.error();
  }

  // The version first: a schema of another major may mean anything else.
  const auto version = root.find("schema_version");
  if (version == root.end()) return fail("missing field \"schema_version\"");
  auto major = parse_major(*version, fail);
  if (!major) return major.error();
  if (major.value() != kSchemaMajor) {
    return fail("schema_version " + quoted_text(version->get_ref<const std::string &>()) + " has major " +
                    std::to_string(major.value()) + "; this reader understands major " + std::to_string(kSchemaMajor),
                kSchemaMajor, major.value());
  }

  ComponentSchema schema;
  schema.schema_version = version->get<std::string>();
  const auto components = root.find("components");
  if (components == root.end()) return fail("missing field \"components\"");
  if (!components->is_array()) return fail("components is " + kind(*components) + ", not an array");
  std::set<std::string, std::less<>> ids;
  for (std::size_t i = 0; i < components->size(); ++i) {
    auto component = parse_component((*components)[i], i, fail);
    if (!component) return component.error();
    if (!ids.insert(component.value().id).second) {
      return fail("component id " + quoted_text(component.value().id) + " appears twice");
    }
    schema.components.push_back(std::move(component).value());
  }
  return schema;
}

Result<ComponentSchema> load_component_schema(const std::filesystem::path &path) {
  auto text = read_whole_file(path, kMaxSchemaBytes, ROOTSPAN_ERR_INVALID_SCHEMA, kOperation);
  if (!text) return text.error();
  return parse_component_schema(text.value(), path.string());
}

ComponentSpec default_component(const TensorRef &tensor, std::string id) {
  ComponentSpec component;
  component.id = std::move(id);
  component.role = ComponentRole::kValues;
  component.sources.emplace_back(tensor.tensor->name);  // not from a list: that copies the name twice
  component.dimensions = tensor.tensor->shape;
  component.encoding = DenseEncoding{tensor.tensor->dtype};
  if (const GgufTensor *gguf = gguf_tensor(tensor)) {
    component.dimensions = gguf_component_dimensions(*gguf);
    component.encoding = gguf_encoding(*gguf->type);
  }
  component.required = tensor.tensor->byte_length() != 0;
  return component;
}

ComponentSchema default_schema(const Checkpoint &checkpoint) {
  ComponentSchema schema;
  schema.schema_version = kDefaultSchemaVersion;
  const std::span<const TensorRef> tensors = checkpoint.tensors_by_name();
  std::vector<bool> named(tensors.size());  // the tensor's name is a valid component id
  for (std::size_t n = 0; n < tensors.size(); ++n) named[n] = is_component_id(tensors[n].tensor->name);
  // The ids taken, needed only to number the tensors whose names are not ids.
  std::set<std::string, std::less<>> taken;
  if (std::find(named.begin(), named.end(), false) != named.end()) {
    for (std::size_t n = 0; n < tensors.size(); ++n) {
      if (named[n]) taken.insert(tensors[n].tensor->name);
    }
  }
  schema.components.reserve(tensors.size());
  for (std::size_t n = 0; n < tensors.size(); ++n) {
    const TensorRef &tensor = tensors[n];
    if (named[n]) {
      schema.components.push_back(default_component(tensor, tensor.tensor->name));
      continue;
    }
    std::string id = "tensor." + std::to_string(n);
    for (int suffix = 1; taken.contains(id); ++suffix)
      id = "tensor." + std::to_string(n) + "." + std::to_string(suffix);
    taken.insert(id);
    schema.components.push_back(default_component(tensor, std::move(id)));
  }
  schema.found_sources.assign(tensors.begin(), tensors.end());
  return schema;
}

}  // namespace rootspan::weights
