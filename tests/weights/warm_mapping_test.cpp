// populate (warm_mapping.hpp) on a sparse file (issue 35 item 9): its pages
// are weighed against the memory available before any is read, and the
// load's poll stops the workers. Residency is read with mincore, so "nothing
// was read" is checked, not timed.
#include "weights/placement/warm_mapping.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <span>
#include <vector>

#include "test_support.hpp"

namespace rootspan::testing {
namespace {

using namespace rootspan::weights;

constexpr std::uint64_t kApparent = 1ull << 30;  // 1 GiB apparent, no block on disk

// A sparse file of kApparent bytes, mapped read-only.
class SparseMapping {
 public:
  explicit SparseMapping(const TempDir &dir) {
    const fs::path path = dir.path() / "sparse.bin";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    EXPECT_GE(fd_, 0);
    EXPECT_EQ(::ftruncate(fd_, static_cast<off_t>(kApparent)), 0);
    data_ = ::mmap(nullptr, kApparent, PROT_READ, MAP_SHARED, fd_, 0);
    EXPECT_NE(data_, MAP_FAILED);
  }
  ~SparseMapping() {
    if (data_ != MAP_FAILED) ::munmap(data_, kApparent);
    if (fd_ >= 0) ::close(fd_);
  }
  std::vector<std::span<const std::byte>> ranges() const {
    return {std::span(static_cast<const std::byte *>(data_), kApparent)};
  }
  // Bytes of the mapping resident now.
  std::uint64_t resident() const {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> pages(kApparent / page);
    EXPECT_EQ(::mincore(data_, kApparent, pages.data()), 0);
    std::uint64_t bytes = 0;
    for (unsigned char p : pages) bytes += (p & 1) != 0 ? page : 0;
    return bytes;
  }

 private:
  int fd_ = -1;
  void *data_ = MAP_FAILED;
};

TEST(WarmMapping, PagesBeyondTheMemoryAvailableAreRefusedBeforeAnyIsRead) {
  TempDir dir;
  SparseMapping mapping(dir);
  WarmLimits limits;
  limits.available = 64ull << 20;
  auto warmed = warm_mapped_ranges(mapping.ranges(), limits, "load_component");
  ASSERT_FALSE(warmed);
  EXPECT_EQ(warmed.error()->code, ROOTSPAN_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(warmed.error()->operation, "load_component");
  const std::string &cause = warmed.error()->cause;
  EXPECT_NE(cause.find("populate would read " + std::to_string(kApparent) + " bytes"), std::string::npos) << cause;
  EXPECT_NE(cause.find("only " + std::to_string(64ull << 20) + " bytes are available"), std::string::npos) << cause;
  EXPECT_EQ(mapping.resident(), 0u) << "pages were read before the refusal";
}

TEST(WarmMapping, APollThatCancelsStopsTheReading) {
  TempDir dir;
  SparseMapping mapping(dir);
  WarmLimits limits;
  limits.available = kApparent;  // fits exactly
  int polls = 0;
  limits.poll = [&]() -> Result<void> {
    ++polls;
    return make_error(ROOTSPAN_ERR_CANCELLED, "load_component", "the progress callback cancelled the load");
  };
  // No worker thread: this thread reads one chunk, then polls (deterministic).
  auto warmed = warm_mapped_ranges(mapping.ranges(), limits, "load_component", 0);
  ASSERT_FALSE(warmed);
  EXPECT_EQ(warmed.error()->code, ROOTSPAN_ERR_CANCELLED);
  EXPECT_EQ(polls, 1);
  EXPECT_LE(mapping.resident(), 64ull << 20) << "the reading went on after the cancel";

  // With workers, the calling thread polls while they read; they stop.
  limits.poll_interval = std::chrono::milliseconds(1);
  polls = 0;
  warmed = warm_mapped_ranges(mapping.ranges(), limits, "load_component", 4);
  ASSERT_FALSE(warmed);
  EXPECT_EQ(warmed.error()->code, ROOTSPAN_ERR_CANCELLED);
  EXPECT_EQ(polls, 1) << "the poll is asked once it has cancelled, never again";
}

TEST(WarmMapping, WhatFitsIsReadInWhole) {
  TempDir dir;
  const fs::path path = dir.write("small.bin", std::string(3 << 20, 'x'));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::size_t length = 3 << 20;
  void *data = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(data, MAP_FAILED);
  WarmLimits limits;
  limits.available = 1ull << 40;
  std::atomic<int> polls{0};
  limits.poll = [&]() -> Result<void> {
    ++polls;
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  };
  auto warmed = warm_mapped_ranges({std::span(static_cast<const std::byte *>(data), length)}, limits, "load_component");
  ASSERT_TRUE(warmed) << warmed.error()->cause;
  // Whole pages, unless the kernel lacks MADV_POPULATE_READ (readahead alone: 0).
  EXPECT_TRUE(warmed.value() == length || warmed.value() == 0) << warmed.value();
  ::munmap(data, length);
  ::close(fd);
}

TEST(WarmMapping, PagesSharedByRangesAreWeighedAndReadOnce) {
  // Four pages of file under five ranges given out of order: two share page 1,
  // two share page 2, one repeats another. The pages are weighed once each, so
  // four pages of memory are enough and three are not; and all four are read.
  TempDir dir;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const fs::path path = dir.write("shared.bin", std::string(4 * page, 'x'));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  void *data = ::mmap(nullptr, 4 * page, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(data, MAP_FAILED);
  const auto *bytes = static_cast<const std::byte *>(data);
  const std::vector<std::span<const std::byte>> ranges = {{bytes + 2 * page + page / 2, page + page / 2},
                                                          {bytes, page + page / 2},
                                                          {bytes + page + page / 2, page},
                                                          {bytes, page + page / 2},
                                                          {bytes + 3 * page, 10}};
  WarmLimits limits;
  limits.available = 3 * page;
  auto refused = warm_mapped_ranges(ranges, limits, "load_component");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error()->code, ROOTSPAN_ERR_OUT_OF_MEMORY);
  ASSERT_TRUE(refused.error()->values);
  EXPECT_EQ(refused.error()->values->first, 3 * page);
  EXPECT_EQ(refused.error()->values->second, 4 * page) << "each page weighed once";
  limits.available = 4 * page;
  auto warmed = warm_mapped_ranges(ranges, limits, "load_component");
  ASSERT_TRUE(warmed) << warmed.error()->cause;
  // Each page counted once, unless the kernel lacks MADV_POPULATE_READ (readahead alone: 0).
  EXPECT_TRUE(warmed.value() == 4 * page || warmed.value() == 0) << warmed.value();
  if (warmed.value() != 0) {
    std::vector<unsigned char> resident(4);
    ASSERT_EQ(::mincore(data, 4 * page, resident.data()), 0);
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(resident[i] & 1, 1) << "page " << i;
  }
  ::munmap(data, 4 * page);
  ::close(fd);
}

}  // namespace
}  // namespace rootspan::testing
