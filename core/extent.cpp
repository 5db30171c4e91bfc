#include "extent.hpp"

#include <atomic>
#include <limits>
#include <string>

namespace rootspan {

namespace {
// Ids start at 1; UINT64_MAX is never handed out, it marks exhaustion.
std::atomic<std::uint64_t> g_next_root_id{1};
}  // namespace

Result<void> validate_extent(const Extent &extent) {
  std::uint64_t end = 0;
  if (__builtin_add_overflow(extent.offset, extent.length, &end)) {
    return make_error(ROOTSPAN_ERR_RANGE_OVERFLOW, "",
                      "offset " + std::to_string(extent.offset) + " + length " + std::to_string(extent.length) +
                          " overflows 64 bits");
  }
  if (!is_power_of_two(extent.alignment)) {
    return make_error(ROOTSPAN_ERR_INVALID_ALIGNMENT, "",
                      "alignment " + std::to_string(extent.alignment) + " is not a non-zero power of two");
  }
  if (extent.offset % extent.alignment != 0) {
    return make_error(ROOTSPAN_ERR_MISALIGNED_OFFSET, "",
                      "offset " + std::to_string(extent.offset) + " is not a multiple of alignment " +
                          std::to_string(extent.alignment),
                      0, extent.offset % extent.alignment);
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<void> validate_key(Key key) {
  if (key.domain == 0 || key.local == 0) {
    return make_error(ROOTSPAN_ERR_INVALID_KEY, "",
                      "allocation key (" + std::to_string(key.domain) + ',' + std::to_string(key.local) +
                          ") has a zero half; both domain and local id must be non-zero");
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<std::uint64_t> next_root_id() {
  std::uint64_t current = g_next_root_id.load(std::memory_order_relaxed);
  do {
    if (current == std::numeric_limits<std::uint64_t>::max()) {
      return make_error(ROOTSPAN_ERR_ROOT_ID_EXHAUSTED, "",
                        "the process-wide root id counter is exhausted; ids are never reused");
    }
  } while (!g_next_root_id.compare_exchange_weak(current, current + 1, std::memory_order_relaxed));
  return current;
}

void testing::set_next_root_id(std::uint64_t next) { g_next_root_id.store(next); }

}  // namespace rootspan
