// Prefault: it populates a fresh range without changing a byte of it, ends
// at the first range it cannot populate, and starts no thread for a small
// range. (Where it stops for the reader only saves work: a page populated
// after the reader wrote it keeps the reader's bytes, as the second test
// shows.)
#include "weights/prefault.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace rootspan::weights {
namespace {

// An anonymous mapping of `length` bytes, unmapped at the end of the test.
class Anonymous {
 public:
  Anonymous(std::size_t length, int protection) : length_(length) {
    void *p = ::mmap(nullptr, length, protection, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<std::byte *>(p);
  }
  ~Anonymous() {
    if (data_ != nullptr) ::munmap(data_, length_);
  }
  std::byte *data() const { return data_; }
  std::size_t length() const { return length_; }

  // Pages of the mapping in memory now (mincore).
  std::size_t resident_pages() const {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> in((length_ + page - 1) / page);
    if (::mincore(data_, length_, in.data()) != 0) return 0;
    std::size_t n = 0;
    for (unsigned char c : in) n += c & 1;
    return n;
  }
  std::size_t pages() const { return length_ / static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

 private:
  std::byte *data_ = nullptr;
  std::size_t length_;
};

// Waits, up to a generous bound, until every page of `memory` is resident.
bool all_resident_soon(const Anonymous &memory) {
  for (int i = 0; i < 1000; ++i) {
    if (memory.resident_pages() == memory.pages()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(Prefault, PopulatesAFreshRangeWithoutWritingIt) {
  Anonymous memory(32ull << 20, PROT_READ | PROT_WRITE);
  ASSERT_NE(memory.data(), nullptr);
  ASSERT_EQ(memory.resident_pages(), 0u);
  Prefault prefault(memory.data(), memory.length());
  ASSERT_TRUE(prefault.running());
  if (!all_resident_soon(memory)) GTEST_SKIP() << "this kernel cannot MADV_POPULATE_WRITE (before Linux 5.14)";
  for (std::size_t i = 0; i < memory.length(); i += 4096) ASSERT_EQ(memory.data()[i], std::byte{0}) << "byte " << i;
}

TEST(Prefault, NeverChangesWhatTheReaderWrote) {
  // The reader fills the range front to back while the thread populates it
  // from the back; every byte must be the reader's.
  Anonymous memory(64ull << 20, PROT_READ | PROT_WRITE);
  ASSERT_NE(memory.data(), nullptr);
  {
    Prefault prefault(memory.data(), memory.length());
    constexpr std::size_t kChunk = 1ull << 20;
    for (std::size_t done = 0; done < memory.length(); done += kChunk) {
      std::memset(memory.data() + done, static_cast<int>(1 + done / kChunk % 250), kChunk);
      prefault.reader_at(done + kChunk);
    }
  }
  for (std::size_t i = 0; i < memory.length(); i += 512) {
    ASSERT_EQ(memory.data()[i], static_cast<std::byte>(1 + i / (1ull << 20) % 250)) << "byte " << i;
  }
}

TEST(Prefault, MemoryItCannotPopulateStopsIt) {
  // A read-only mapping cannot be populated for writing: the thread's first
  // request is refused and it ends, leaving the mapping untouched.
  Anonymous memory(32ull << 20, PROT_READ);
  ASSERT_NE(memory.data(), nullptr);
  {
    Prefault prefault(memory.data(), memory.length());
    EXPECT_TRUE(prefault.running());
  }
  EXPECT_EQ(memory.resident_pages(), 0u);
}

TEST(Prefault, StartsNoThreadForASmallRangeOrNone) {
  Anonymous memory(Prefault::kMinimumBytes - 4096, PROT_READ | PROT_WRITE);
  ASSERT_NE(memory.data(), nullptr);
  EXPECT_FALSE(Prefault(memory.data(), memory.length()).running());
  EXPECT_FALSE(Prefault(nullptr, 1ull << 30).running());
  EXPECT_EQ(memory.resident_pages(), 0u);
}

}  // namespace
}  // namespace rootspan::weights
