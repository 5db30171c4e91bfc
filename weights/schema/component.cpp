#include "weights/schema/component.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "core/text/quoting.hpp"
#include "weights/files/checked_math.hpp"

namespace rootspan::weights {

namespace {

constexpr const char *kOperation = "load_schema";

constexpr std::array<std::pair<ComponentRole, std::string_view>, 8> kRoles{{
    {ComponentRole::kValues, "values"},
    {ComponentRole::kPackedValues, "packed_values"},
    {ComponentRole::kScales, "scales"},
    {ComponentRole::kZeroPoints, "zero_points"},
    {ComponentRole::kIndices, "indices"},
    {ComponentRole::kPermutation, "permutation"},
    {ComponentRole::kCodebook, "codebook"},
    {ComponentRole::kMetadata, "metadata"},
}};

// The bytes a component id may hold, as a table: every id of a load (thousands) is checked byte by byte.
constexpr std::array<bool, 256> kIdBytes = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 256; ++c) {
    table[c] = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
               c == '-' || c == ':' || c == '/';
  }
  return table;
}();

bool is_id_char(char c) { return kIdBytes[static_cast<unsigned char>(c)]; }

Diagnostic invalid(const ComponentSpec &component, const std::string &cause) {
  return make_error(ROOTSPAN_ERR_INVALID_SCHEMA, kOperation, "component " + quoted_text(component.id) + ": " + cause);
}

}  // namespace

std::string_view role_name(ComponentRole role) {
  for (const auto &[value, name] : kRoles) {
    if (value == role) return name;
  }
  return "unknown";
}

std::optional<ComponentRole> role_from_name(std::string_view name) {
  for (const auto &[value, role_text] : kRoles) {
    if (role_text == name) return value;
  }
  return std::nullopt;
}

bool is_component_id(std::string_view id) {
  return !id.empty() && id.size() <= kMaxComponentIdBytes &&
         std::all_of(id.begin(), id.end(), [](char c) { return is_id_char(c); });
}

std::string component_id_problem(std::string_view id) {
  if (is_component_id(id)) return {};
  if (id.empty()) return "it is empty";
  if (id.size() > kMaxComponentIdBytes) {
    return "it is " + std::to_string(id.size()) + " bytes, more than " + std::to_string(kMaxComponentIdBytes);
  }
  const auto bad = std::find_if_not(id.begin(), id.end(), [](char c) { return is_id_char(c); });
  return "byte " + std::to_string(bad - id.begin()) + " is not one of A-Z a-z 0-9 . _ - : /";
}

SafetensorsDtype ComponentSpec::physical_element_type() const {
  if (const auto *dense = std::get_if<DenseEncoding>(&encoding)) return dense->element_type;
  return *safetensors_dtype(std::string_view("U8"));
}

Result<std::uint64_t> ComponentSpec::physical_bytes() const {
  const auto count = checked_product(dimensions);
  if (!count) {
    return invalid(*this, "dimensions " + shape_text(dimensions) + " have more elements than 64 bits can count");
  }
  if (const auto *dense = std::get_if<DenseEncoding>(&encoding)) {
    const auto bits = checked_bits(*count, dense->element_type.bits);
    if (!bits) {
      return invalid(*this, "dimensions " + shape_text(dimensions) + " of " + std::string(dense->element_type.name) +
                                " have more bits than 64 bits can count");
    }
    if (!bits->whole_bytes()) {
      return invalid(*this, "dimensions " + shape_text(dimensions) + " of " + std::string(dense->element_type.name) +
                                " are " + std::to_string(bits->bits) + " bits, not a whole number of bytes");
    }
    return bits->bytes();
  }
  const auto &block = std::get<BlockQuantizedEncoding>(encoding);
  const auto bytes = checked_mul(*count, block.bytes_per_block);
  if (!bytes) {
    return invalid(*this, "block grid " + shape_text(dimensions) + " of " + std::to_string(block.bytes_per_block) +
                              "-byte blocks has more bytes than 64 bits can count");
  }
  return *bytes;
}

Result<void> ComponentSpec::validate() const {
  if (const std::string problem = component_id_problem(id); !problem.empty()) {
    return make_error(ROOTSPAN_ERR_INVALID_SCHEMA, kOperation,
                      "component id " + quoted_text(id) + " is not valid: " + problem);
  }
  if (sources.empty()) return invalid(*this, "names no source tensor");
  if (const auto *block = std::get_if<BlockQuantizedEncoding>(&encoding)) {
    if (const std::string problem = component_id_problem(block->format_id); !problem.empty()) {
      return invalid(*this, "format_id " + quoted_text(block->format_id) + " is not valid: " + problem);
    }
    if (block->values_per_block == 0) return invalid(*this, "values_per_block is 0");
    if (block->bytes_per_block == 0) return invalid(*this, "bytes_per_block is 0");
  }
  auto bytes = physical_bytes();
  if (!bytes) return bytes.error();
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace rootspan::weights
