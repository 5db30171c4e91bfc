#include "weights/files/strided_read.hpp"

#include <algorithm>

namespace rootspan::weights {

namespace {

// Rows at least this long are read alone: the bytes between them are not worth reading.
constexpr std::uint64_t kLongRow = 64 * 1024;

}  // namespace

Result<void> read_strided(const InputFile &file, const StridedRange &range, std::span<std::byte> buffer,
                          const std::function<Result<void>(std::span<const std::byte>)> &take) {
  const std::uint64_t capacity = buffer.size();
  if (range.rows == 1 || range.row_length >= kLongRow || range.row_length > capacity) {
    for (std::uint64_t row = 0; row < range.rows; ++row) {
      const std::uint64_t start = range.offset + row * range.stride;
      for (std::uint64_t done = 0; done < range.row_length;) {
        const std::size_t n = static_cast<std::size_t>(std::min(capacity, range.row_length - done));
        BOOST_OUTCOME_TRY(file.read_exact(buffer.first(n), start + done));
        BOOST_OUTCOME_TRY(take(buffer.first(n)));
        done += n;
      }
    }
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  }
  // Whole rows per window: (k - 1) * stride + row_length <= capacity.
  const std::uint64_t per_window = (capacity - range.row_length) / range.stride + 1;
  for (std::uint64_t row = 0; row < range.rows;) {
    const std::uint64_t count = std::min(per_window, range.rows - row);
    const std::uint64_t start = range.offset + row * range.stride;
    const std::size_t span = static_cast<std::size_t>((count - 1) * range.stride + range.row_length);
    BOOST_OUTCOME_TRY(file.read_exact(buffer.first(span), start));
    for (std::uint64_t k = 0; k < count; ++k) {
      BOOST_OUTCOME_TRY(
          take(buffer.subspan(static_cast<std::size_t>(k * range.stride), static_cast<std::size_t>(range.row_length))));
    }
    row += count;
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace rootspan::weights
