// page_cache_resident_share (weights/files/page_cache.hpp): a file just
// evicted from the page cache reads as cold on a local disk, the same file
// read through reads as wholly resident, and what cannot be sampled (an
// empty file, a closed descriptor) says so instead of guessing.
#include "weights/files/page_cache.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

#include "test_support.hpp"
#include "weights/files/file_system.hpp"

namespace rootspan::testing {
namespace {

using namespace rootspan::weights;

constexpr std::size_t kBytes = 8u << 20;

class WrittenFile {
 public:
  explicit WrittenFile(const TempDir &dir, std::size_t bytes) {
    const fs::path path = dir.path() / "pages.bin";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    EXPECT_GE(fd_, 0);
    const std::vector<char> chunk(1 << 20, 'x');
    for (std::size_t done = 0; done < bytes; done += chunk.size()) {
      EXPECT_EQ(::write(fd_, chunk.data(), std::min(chunk.size(), bytes - done)),
                static_cast<ssize_t>(std::min(chunk.size(), bytes - done)));
    }
    EXPECT_EQ(::fsync(fd_), 0);  // clean pages, which an eviction drops
  }
  ~WrittenFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }
  void read_through(std::size_t bytes) const {
    std::vector<char> buffer(1 << 20);
    for (std::size_t done = 0; done < bytes; done += buffer.size()) {
      ASSERT_GT(::pread(fd_, buffer.data(), buffer.size(), static_cast<off_t>(done)), 0);
    }
  }

 private:
  int fd_ = -1;
};

TEST(PageCacheResidentShare, AnEvictedFileIsColdAndAFileReadThroughIsResident) {
  TempDir dir;
  WrittenFile file(dir, kBytes);
  ASSERT_EQ(::posix_fadvise(file.fd(), 0, 0, POSIX_FADV_DONTNEED), 0);
  const std::optional<double> evicted = page_cache_resident_share(file.fd(), kBytes);
  ASSERT_TRUE(evicted.has_value());
  EXPECT_GE(*evicted, 0.0);
  if (file_system_of(file.fd()).kind == FileSystemKind::kLocal) {
    EXPECT_LT(*evicted, 0.5) << "a local disk drops the clean pages of an evicted file";
  }
  file.read_through(kBytes);
  EXPECT_EQ(page_cache_resident_share(file.fd(), kBytes), 1.0);
  // Fewer pages than samples: every page asked once, the last partial one included.
  EXPECT_EQ(page_cache_resident_share(file.fd(), 3 * 4096 + 1, 64), 1.0);
  EXPECT_EQ(page_cache_resident_share(file.fd(), kBytes, 1), 1.0);
}

TEST(PageCacheResidentShare, WhatCannotBeSampledIsNotGuessed) {
  TempDir dir;
  WrittenFile file(dir, 0);
  EXPECT_EQ(page_cache_resident_share(file.fd(), 0), std::nullopt);        // nothing to sample
  EXPECT_EQ(page_cache_resident_share(-1, 4096), std::nullopt);            // no file
  EXPECT_EQ(page_cache_resident_share(file.fd(), 4096, 0), std::nullopt);  // no sample asked
}

}  // namespace
}  // namespace rootspan::testing
