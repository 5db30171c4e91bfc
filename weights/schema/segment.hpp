// Segment: one ordered piece of a weight component's bytes — the bytes of one
// source tensor, as a range of its shard file (docs/weight-schema.md), or as
// `rows` equal rows `stride` bytes apart in it (one rank's columns of a
// matrix split along its last axis), which land one after another. A packed
// component is a list of them, never an aggregate copy. When a segment also
// carries host bytes (from a mapping or a read buffer) and the region that
// keeps them alive, the region must be those very bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "core/diagnostic.hpp"
#include "weights/files/retained_region.hpp"

namespace rootspan::weights {

// The shard file segments read: its name as the checkpoint spells it and the
// path that was opened. Every segment of a file shares one, rather than
// holding copies (a checkpoint of thousands of tensors has as many segments).
struct SegmentFile {
  std::string name;            // relative to the checkpoint's folder
  std::filesystem::path path;  // the file to read
};

class Segment {
 public:
  Segment(std::string source, std::shared_ptr<const SegmentFile> file, std::uint64_t file_offset, std::uint64_t length);
  Segment(std::string source, std::shared_ptr<const SegmentFile> file, std::uint64_t file_offset,
          std::uint64_t row_length, std::uint64_t rows, std::uint64_t stride);
  // The same, for a file of its own.
  Segment(std::string source, std::string file, std::filesystem::path path, std::uint64_t file_offset,
          std::uint64_t length);
  // `rows` rows of `row_length` bytes, the first at `file_offset`, each
  // `stride` bytes after the one before (stride >= row_length).
  Segment(std::string source, std::string file, std::filesystem::path path, std::uint64_t file_offset,
          std::uint64_t row_length, std::uint64_t rows, std::uint64_t stride);

  const std::string &source() const { return source_; }              // the source tensor's name
  const std::string &file() const { return file_->name; }            // shard name, relative to the checkpoint
  const std::filesystem::path &path() const { return file_->path; }  // the shard file to read
  std::uint64_t file_offset() const { return file_offset_; }         // absolute offset in that file (of the first row)
  std::uint64_t length() const { return length_; }                   // the bytes it gives: rows × row_length
  std::uint64_t rows() const { return rows_; }                       // 1 for one contiguous range
  std::uint64_t row_length() const { return row_length_; }
  std::uint64_t stride() const { return stride_; }  // file bytes from one row's start to the next
  bool contiguous() const { return rows_ == 1; }
  // One past the last file byte it reads.
  std::uint64_t file_end() const { return file_offset_ + (rows_ - 1) * stride_ + row_length_; }
  // The host bytes the segment was validated with; empty while it is a file
  // range only.
  std::span<const std::byte> bytes() const { return bytes_; }
  const std::optional<RetainedRegion> &retained() const { return retained_; }

  // Gives a file-range segment its host bytes: exactly length() of them, and
  // only once (bytes already validated are never swapped for others).
  // ROOTSPAN_ERR_INVALID_PAYLOAD, operation "load_component".
  Result<void> set_bytes(std::span<const std::byte> bytes);

  // Attaches the owner of the segment's bytes; the region must be the very
  // bytes set before: same address, same length (check_retained_identity).
  Result<void> retain(RetainedRegion region);

  // "segment 1 (tensor "up" in "model-2.safetensors")" for causes.
  std::string describe(std::size_t position) const;
  // "tensor "up" in "model-2.safetensors"" for causes.
  std::string tensor_text() const;

 private:
  std::string source_;
  std::shared_ptr<const SegmentFile> file_;  // never null, but in a moved-from segment
  std::uint64_t file_offset_ = 0;
  std::uint64_t length_ = 0;
  std::uint64_t rows_ = 1;
  std::uint64_t row_length_ = 0;
  std::uint64_t stride_ = 0;
  std::span<const std::byte> bytes_;
  std::optional<RetainedRegion> retained_;
};

}  // namespace rootspan::weights
