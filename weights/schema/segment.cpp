#include "weights/schema/segment.hpp"

#include <utility>

#include "core/text/quoting.hpp"

namespace rootspan::weights {

Segment::Segment(std::string source, std::shared_ptr<const SegmentFile> file, std::uint64_t file_offset,
                 std::uint64_t length)
    : Segment(std::move(source), std::move(file), file_offset, length, 1, length) {}

Segment::Segment(std::string source, std::shared_ptr<const SegmentFile> file, std::uint64_t file_offset,
                 std::uint64_t row_length, std::uint64_t rows, std::uint64_t stride)
    : source_(std::move(source)),
      file_(std::move(file)),
      file_offset_(file_offset),
      length_(row_length * rows),  // one rank's slice of a tensor that fit in 64 bits
      rows_(rows),
      row_length_(row_length),
      stride_(stride) {}

Segment::Segment(std::string source, std::string file, std::filesystem::path path, std::uint64_t file_offset,
                 std::uint64_t length)
    : Segment(std::move(source), std::make_shared<const SegmentFile>(SegmentFile{std::move(file), std::move(path)}),
              file_offset, length) {}

Segment::Segment(std::string source, std::string file, std::filesystem::path path, std::uint64_t file_offset,
                 std::uint64_t row_length, std::uint64_t rows, std::uint64_t stride)
    : Segment(std::move(source), std::make_shared<const SegmentFile>(SegmentFile{std::move(file), std::move(path)}),
              file_offset, row_length, rows, stride) {}

std::string Segment::describe(std::size_t position) const {
  return "segment " + std::to_string(position) + " (" + tensor_text() + ")";
}

std::string Segment::tensor_text() const {
  return "tensor " + quoted_text(source_) + " in " + quoted_text(file_->name);
}

Result<void> Segment::set_bytes(std::span<const std::byte> bytes) {
  if (!bytes_.empty()) {
    return make_error(ROOTSPAN_ERR_INVALID_PAYLOAD, "load_component",
                      tensor_text() + ": segment already has its validated host bytes");
  }
  if (bytes.size() != length_) {
    return make_error(ROOTSPAN_ERR_INVALID_PAYLOAD, "load_component",
                      tensor_text() + ": host bytes are " + std::to_string(bytes.size()) + " bytes, the segment is " +
                          std::to_string(length_),
                      length_, bytes.size());
  }
  bytes_ = bytes;
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<void> Segment::retain(RetainedRegion region) {
  const auto what = [this] { return "segment of " + tensor_text(); };
  if (bytes_.empty()) {
    return make_error(ROOTSPAN_ERR_INVALID_PAYLOAD, "load_component",
                      what() +
                          ": retained host-memory region differs from its validated bytes: the segment has no "
                          "host bytes");
  }
  if (auto same = check_retained_identity(bytes_, region, what); !same) return same.error();
  retained_ = std::move(region);
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace rootspan::weights
