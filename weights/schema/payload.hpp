// ComponentPayload: the validated physical bytes of one weight component, as
// ordered segments (docs/weight-schema.md). It can only be made by checking it against
// its component: names equal and in order, one portable source file per name,
// dimensions equal, element type equal, no empty segment, and a total equal
// to the physical bytes. Materialization trusts nothing else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/diagnostic.hpp"
#include "weights/files/retained_region.hpp"
#include "weights/files/stable_host_memory.hpp"
#include "weights/schema/component.hpp"
#include "weights/schema/segment.hpp"

namespace rootspan::weights {

class ComponentPayload {
 public:
  // Checked in this order, each failure ROOTSPAN_ERR_INVALID_PAYLOAD
  // (operation "load_component") naming the component, and the segment,
  // tensor and file where one is at fault:
  //   the component itself is valid (ComponentSpec::validate, INVALID_SCHEMA);
  //   external_names equal component.sources, same count and order;
  //   one source file per name, each a portable relative path;
  //   dimensions equal component.dimensions;
  //   element_type equals component.physical_element_type();
  //   at least one segment, one per name, segment i carrying tensor i, none empty;
  //   host bytes, where a segment has them, of its length; a retained region,
  //   where it has one, the very bytes (check_retained_identity);
  //   the segments' total equals physical_bytes() (checked sum).
  static Result<ComponentPayload> from_ordered_segments(const ComponentSpec &component,
                                                        const std::vector<std::string> &external_names,
                                                        std::vector<std::string> source_files,
                                                        const std::vector<std::uint64_t> &dimensions,
                                                        SafetensorsDtype element_type, std::vector<Segment> segments);
  // The same, for segments that carry the component's own sources in its own
  // dimensions (a resolved schema's): the component is moved in, not copied,
  // and the source files are the segments' own (each must be portable).
  static Result<ComponentPayload> from_own_segments(ComponentSpec &&component, SafetensorsDtype element_type,
                                                    std::vector<Segment> segments);

  const ComponentSpec &component() const { return component_; }
  // The component moved out, for a caller done with the payload (the last step of a load).
  ComponentSpec take_component() && { return std::move(component_); }
  const std::string &component_id() const { return component_.id; }
  // The external names and dimensions were checked equal to the component's,
  // so the component's own are kept, not a second copy.
  const std::vector<std::string> &external_names() const { return component_.sources; }
  const std::vector<std::uint64_t> &dimensions() const { return component_.dimensions; }
  SafetensorsDtype element_type() const { return element_type_; }
  const std::vector<Segment> &segments() const { return segments_; }
  std::uint64_t total_bytes() const { return total_bytes_; }

  // Gives segment `index` its host bytes and the region that owns them, in one
  // step: the region's bytes become the segment's bytes. For a segment that
  // already has bytes, the region must be those very bytes.
  Result<void> retain(std::size_t index, RetainedRegion region);

  // Retains every segment's range from the stable host memory of its file
  // (`owner_of` returns the owner for a segment's file: the MappedFile of
  // that shard, or any StableHostMemory holding its bytes). Fails when a range lies outside its owner (the
  // file shrank) or an owner is missing.
  Result<void> retain_host_memory(
      const std::function<std::shared_ptr<const StableHostMemory>(const Segment &)> &owner_of);

 private:
  ComponentPayload(ComponentSpec component, SafetensorsDtype element_type, std::vector<Segment> segments,
                   std::uint64_t total_bytes);

  // The source files are the segments' (checked equal to any given beside them): no second list a component.
  ComponentSpec component_;
  SafetensorsDtype element_type_{};
  std::vector<Segment> segments_;
  std::uint64_t total_bytes_ = 0;
};

}  // namespace rootspan::weights
