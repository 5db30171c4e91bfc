#include "weights/schema/payload.hpp"

#include <utility>

#include "core/text/quoting.hpp"
#include "weights/files/checked_math.hpp"
#include "weights/files/portable_path.hpp"
#include "weights/schema/component_failure.hpp"

namespace rootspan::weights {

namespace {

// from_ordered_segments' checks, in its order; the segments' total bytes.
// source_files: the files given beside the segments, or nullptr where the
// segments' own files are the source files (from_own_segments).
Result<std::uint64_t> check_segments(const ComponentSpec &component, const std::vector<std::string> &external_names,
                                     const std::vector<std::string> *source_files,
                                     const std::vector<std::uint64_t> &dimensions, SafetensorsDtype element_type,
                                     const std::vector<Segment> &segments) {
  const ComponentFailure fail(component.id);
  if (auto valid = component.validate(); !valid) return valid.error();
  auto expected_bytes = component.physical_bytes();
  if (!expected_bytes) return expected_bytes.error();

  // Names: the order of a packed component's sources is part of its identity.
  if (external_names.size() != component.sources.size()) {
    return fail("has " + std::to_string(external_names.size()) + " external names, the schema names " +
                    std::to_string(component.sources.size()) + " sources",
                component.sources.size(), external_names.size());
  }
  for (std::size_t i = 0; i < external_names.size(); ++i) {
    if (external_names[i] != component.sources[i]) {
      return fail("external name " + std::to_string(i) + " is " + quoted_text(external_names[i]) +
                  " where the schema has " + quoted_text(component.sources[i]) +
                  " (source order is part of the component's identity)");
    }
  }
  if (source_files && source_files->size() != external_names.size()) {
    return fail("has " + std::to_string(source_files->size()) + " source files for " +
                    std::to_string(external_names.size()) + " external names",
                external_names.size(), source_files->size());
  }
  const auto portable = [&component](const std::string &file) -> Result<void> {
    if (is_portable_name(file)) return BOOST_OUTCOME_V2_NAMESPACE::success();  // the subject only for the error
    return check_portable_name(file, ROOTSPAN_ERR_INVALID_PAYLOAD, ComponentFailure::kOperation,
                               "component " + component.id);
  };
  if (source_files) {
    for (const std::string &file : *source_files) {
      BOOST_OUTCOME_TRY(portable(file));
    }
  } else {
    for (const Segment &segment : segments) {
      BOOST_OUTCOME_TRY(portable(segment.file()));
    }
  }
  if (dimensions != component.dimensions) {
    return fail("dimensions " + shape_text(dimensions) + " differ from the schema's " +
                shape_text(component.dimensions));
  }
  const SafetensorsDtype expected_type = component.physical_element_type();
  if (element_type.dtype != expected_type.dtype) {
    return fail("element type " + std::string(element_type.name) + " differs from the schema's " +
                    std::string(expected_type.name),
                static_cast<std::uint64_t>(expected_type.dtype), static_cast<std::uint64_t>(element_type.dtype));
  }

  if (segments.empty()) return fail("has no segments");
  if (segments.size() != external_names.size()) {
    return fail("has " + std::to_string(segments.size()) + " segments for " + std::to_string(external_names.size()) +
                    " external names (one per source tensor)",
                external_names.size(), segments.size());
  }
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const Segment &segment = segments[i];
    if (segment.source() != external_names[i]) {
      return fail(segment.describe(i) + " carries tensor " + quoted_text(segment.source()) + ", but external name " +
                  std::to_string(i) + " is " + quoted_text(external_names[i]));
    }
    if (source_files && segment.file() != (*source_files)[i]) {
      return fail(segment.describe(i) + " lies in " + quoted_text(segment.file()) + ", but source file " +
                  std::to_string(i) + " is " + quoted_text((*source_files)[i]));
    }
    if (segment.length() == 0) return fail(segment.describe(i) + " is empty");
    if (!segment.contiguous() && segment.stride() < segment.row_length()) {
      return fail(segment.describe(i) + " has rows of " + std::to_string(segment.row_length()) + " bytes only " +
                      std::to_string(segment.stride()) + " bytes apart: its rows would overlap",
                  segment.row_length(), segment.stride());
    }
    if (!segment.bytes().empty() && segment.bytes().size() != segment.length()) {
      return fail(segment.describe(i) + " has " + std::to_string(segment.bytes().size()) +
                      " host bytes for a length of " + std::to_string(segment.length()),
                  segment.length(), segment.bytes().size());
    }
    if (segment.retained()) {
      auto same =
          check_retained_identity(segment.bytes(), *segment.retained(), [&segment, i] { return segment.describe(i); });
      if (!same) return fail.wrap(same.error());
    }
    const auto sum = checked_add(total, segment.length());
    if (!sum) return fail("segment lengths overflow 64 bits at " + segment.describe(i));
    total = *sum;
  }
  if (total != expected_bytes.value()) {
    return fail("segments hold " + std::to_string(total) + " bytes, the schema's physical size is " +
                    std::to_string(expected_bytes.value()),
                expected_bytes.value(), total);
  }

  return total;
}

}  // namespace

Result<ComponentPayload> ComponentPayload::from_ordered_segments(const ComponentSpec &component,
                                                                 const std::vector<std::string> &external_names,
                                                                 std::vector<std::string> source_files,
                                                                 const std::vector<std::uint64_t> &dimensions,
                                                                 SafetensorsDtype element_type,
                                                                 std::vector<Segment> segments) {
  auto total = check_segments(component, external_names, &source_files, dimensions, element_type, segments);
  if (!total) return total.error();
  return ComponentPayload(ComponentSpec(component), element_type, std::move(segments), total.value());
}

Result<ComponentPayload> ComponentPayload::from_own_segments(ComponentSpec &&component, SafetensorsDtype element_type,
                                                             std::vector<Segment> segments) {
  auto total = check_segments(component, component.sources, nullptr, component.dimensions, element_type, segments);
  if (!total) return total.error();
  return ComponentPayload(std::move(component), element_type, std::move(segments), total.value());
}

ComponentPayload::ComponentPayload(ComponentSpec component, SafetensorsDtype element_type,
                                   std::vector<Segment> segments, std::uint64_t total_bytes)
    : component_(std::move(component)),
      element_type_(element_type),
      segments_(std::move(segments)),
      total_bytes_(total_bytes) {}

Result<void> ComponentPayload::retain(std::size_t index, RetainedRegion region) {
  const ComponentFailure fail(component_.id);
  if (index >= segments_.size()) {
    return fail("has no segment " + std::to_string(index), segments_.size(), index);
  }
  Segment &segment = segments_[index];
  if (segment.bytes().empty()) {
    if (auto set = segment.set_bytes(region.bytes()); !set) return fail.wrap(set.error());
  }
  if (auto kept = segment.retain(std::move(region)); !kept) return fail.wrap(kept.error());
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<void> ComponentPayload::retain_host_memory(
    const std::function<std::shared_ptr<const StableHostMemory>(const Segment &)> &owner_of) {
  const ComponentFailure fail(component_.id);
  for (std::size_t i = 0; i < segments_.size(); ++i) {
    std::shared_ptr<const StableHostMemory> owner = owner_of(segments_[i]);
    if (!owner) return fail(segments_[i].describe(i) + " has no host memory owner for its file");
    if (!segments_[i].contiguous()) return fail(segments_[i].describe(i) + " is strided: no one region holds it");
    auto region = RetainedRegion::make(std::move(owner), segments_[i].file_offset(), segments_[i].length());
    if (!region) {
      Diagnostic error = region.error();
      error.cause = segments_[i].describe(i) + ": " + error.cause;
      return fail.wrap(std::move(error));
    }
    if (auto kept = retain(i, std::move(region).value()); !kept) return kept.error();
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace rootspan::weights
