// Prefault: it populates a fresh range without changing a byte of it, never
// changes bytes a reader wrote, ends at the first range it cannot populate,
// and starts no thread for a small range.
#include "weights/placement/prefault.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace rootspan::weights {
namespace {

const std::size_t kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

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
  std::size_t pages() const { return length_ / kPage; }

  // Pages of [data + from, data + length) in memory now (mincore).
  std::size_t resident_pages(std::size_t from = 0) const {
    std::vector<unsigned char> in((length_ - from + kPage - 1) / kPage);
    if (::mincore(data_ + from, length_ - from, in.data()) != 0) return 0;
    std::size_t n = 0;
    for (unsigned char c : in) n += c & 1;
    return n;
  }

 private:
  std::byte *data_ = nullptr;
  std::size_t length_;
};

// Whether this kernel has MADV_POPULATE_WRITE (Linux 5.14 and later).
bool kernel_can_populate() {
  Anonymous scratch(kPage, PROT_READ | PROT_WRITE);
  return scratch.data() != nullptr && (::madvise(scratch.data(), kPage, MADV_POPULATE_WRITE) == 0 || errno != EINVAL);
}

// Waits, up to a generous bound, for the thread to end on its own.
bool finishes(const Prefault &prefault) {
  for (int i = 0; i < 3000 && !prefault.finished(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return prefault.finished();
}

TEST(Prefault, PopulatesAFreshRangeWithoutWritingIt) {
  if (!kernel_can_populate()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE (before Linux 5.14)";
  Anonymous memory(32ull << 20, PROT_READ | PROT_WRITE);
  ASSERT_NE(memory.data(), nullptr);
  ASSERT_EQ(memory.resident_pages(), 0u);
  Prefault prefault(memory.data(), memory.length());
  ASSERT_TRUE(prefault.started());
  ASSERT_TRUE(finishes(prefault));
  EXPECT_EQ(memory.resident_pages(), memory.pages());
  for (std::size_t i = 0; i < memory.length(); i += 512) ASSERT_EQ(memory.data()[i], std::byte{0}) << "byte " << i;
}

TEST(Prefault, NeverChangesBytesAlreadyWritten) {
  // Every page is written before the thread populates it: the bytes stay.
  Anonymous memory(32ull << 20, PROT_READ | PROT_WRITE);
  ASSERT_NE(memory.data(), nullptr);
  for (std::size_t i = 0; i < memory.length(); ++i) memory.data()[i] = static_cast<std::byte>(i * 7 + 3);
  {
    Prefault prefault(memory.data(), memory.length());
    ASSERT_TRUE(finishes(prefault));
  }
  for (std::size_t i = 0; i < memory.length(); ++i) {
    ASSERT_EQ(memory.data()[i], static_cast<std::byte>(i * 7 + 3)) << "byte " << i;
  }
}

TEST(Prefault, AReaderFillingTheRangeMeanwhileKeepsEveryByte) {
  // As a load runs: the reader fills the range front to back while the
  // thread populates it from the back.
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

TEST(Prefault, TheFirstRefusalEndsIt) {
  // The range's last 2 MiB cannot be populated for writing, and the thread
  // starts there: it ends at once and never populates the writable rest.
  Anonymous memory(32ull << 20, PROT_READ | PROT_WRITE);
  ASSERT_NE(memory.data(), nullptr);
  const std::size_t writable = memory.length() - (2ull << 20);
  ASSERT_EQ(::mprotect(memory.data() + writable, memory.length() - writable, PROT_READ), 0);
  {
    Prefault prefault(memory.data(), memory.length());
    ASSERT_TRUE(prefault.started());
    ASSERT_TRUE(finishes(prefault));
  }
  EXPECT_EQ(memory.resident_pages(), 0u);
}

TEST(Prefault, TheCallersSignalMaskIsKept) {
  // The thread is started with every signal blocked (so that the program's
  // signals never run on it); the caller's own mask must be as it was: here
  // SIGUSR2 alone blocked, whatever the test program's mask was before.
  sigset_t known;
  sigset_t original;
  ::sigemptyset(&known);
  ::sigaddset(&known, SIGUSR2);
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, &known, &original), 0);
  Anonymous memory(32ull << 20, PROT_READ | PROT_WRITE);
  ASSERT_NE(memory.data(), nullptr);
  sigset_t after;
  {
    Prefault prefault(memory.data(), memory.length());
    EXPECT_TRUE(prefault.started());
    ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, nullptr, &after), 0);
  }
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, &original, nullptr), 0);
  for (int signal = 1; signal < 32; ++signal) {
    EXPECT_EQ(::sigismember(&after, signal), signal == SIGUSR2 ? 1 : 0) << "signal " << signal;
  }
}

TEST(Prefault, StartsNoThreadForASmallRangeOrNone) {
  Anonymous memory(Prefault::kMinimumBytes - kPage, PROT_READ | PROT_WRITE);
  ASSERT_NE(memory.data(), nullptr);
  EXPECT_FALSE(Prefault(memory.data(), memory.length()).started());
  EXPECT_FALSE(Prefault(nullptr, 1ull << 30).started());
  EXPECT_EQ(memory.resident_pages(), 0u);
}

}  // namespace
}  // namespace rootspan::weights
