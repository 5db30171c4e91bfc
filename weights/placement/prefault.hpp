// Prefault: faults in the host memory a copy load is about to fill, on a
// thread of its own, while the loader's reads fill it.
//
// Fresh anonymous memory costs a page fault per page on its first write (a
// fault that zeroes a 2 MiB huge page, or 512 of 4 KiB). A read straight into
// it pays those faults on the reading thread, one after another, between its
// copies. Prefault asks the kernel to populate the same range from its far
// end (MADV_POPULATE_WRITE, which writes nothing), so faults and copies run
// on two cores and meet in the middle. It never touches the bytes: a page it
// populates after the reader wrote it keeps the reader's data. On a machine
// whose kernel lacks MADV_POPULATE_WRITE (before Linux 5.14), or memory that
// cannot be populated (device apertures, some provider memory), the first
// refusal stops it and the reader pays its own faults, as without it. The
// thread starts with every signal blocked: the embedding program's signal
// handlers never run on it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>

namespace rootspan::weights {

class Prefault {
 public:
  // Ranges smaller than this are not worth a thread.
  static constexpr std::uint64_t kMinimumBytes = 4ull << 20;

  // Starts populating [data, data + length) from its end; does nothing for
  // a range under kMinimumBytes. The range must stay mapped until the
  // Prefault is destroyed.
  Prefault(std::byte *data, std::uint64_t length);
  // Stops the thread and waits for it.
  ~Prefault();
  Prefault(const Prefault &) = delete;
  Prefault &operator=(const Prefault &) = delete;

  // The reader has filled [data, data + bytes): the thread stops when it
  // reaches that point.
  void reader_at(std::uint64_t bytes) { reader_at_.store(bytes, std::memory_order_relaxed); }

  // Whether a thread was started for the range, and whether it has ended
  // (met the reader, reached the start, or was refused).
  bool started() const { return thread_.joinable(); }
  bool finished() const { return finished_.load(std::memory_order_acquire); }

 private:
  void populate_from_the_end();

  std::byte *data_;
  std::uint64_t length_;
  std::atomic<std::uint64_t> reader_at_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

}  // namespace rootspan::weights
