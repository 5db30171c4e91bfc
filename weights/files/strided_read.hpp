// Reading rows of equal length that lie a fixed stride apart in a file (one
// rank's columns of a row-major matrix), as one stream of bytes in row order,
// through a bounded buffer: whatever the number of rows, no record is made
// per row and no more than the buffer is held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "core/diagnostic.hpp"
#include "weights/files/input_file.hpp"

namespace rootspan::weights {

// `rows` rows of `row_length` bytes, the first at `offset`, each `stride`
// bytes after the one before; rows == 1 is one contiguous range.
struct StridedRange {
  std::uint64_t offset = 0;
  std::uint64_t row_length = 0;
  std::uint64_t rows = 1;
  std::uint64_t stride = 0;
  std::uint64_t bytes() const { return row_length * rows; }
};

// Reads `range` from `file` and hands its bytes, in row order and in pieces,
// to `take`. Short rows are read a window of whole rows at a time (at most
// buffer.size() file bytes, one pread); a row of 64 KiB or more is read on
// its own, in pieces of at most buffer.size(), so that little of what lies
// between rows is read. Stops at the first error of a read (ROOTSPAN_ERR_IO,
// as InputFile::read_exact) or of `take`, and returns it.
Result<void> read_strided(const InputFile &file, const StridedRange &range, std::span<std::byte> buffer,
                          const std::function<Result<void>(std::span<const std::byte>)> &take);

}  // namespace rootspan::weights
