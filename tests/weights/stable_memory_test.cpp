// docs/weight-schema.md: stable host memory (MappedFile, ReadFile, OwnedBytes) and
// retained regions.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <memory>

#include "test_support.hpp"
#include "weights/files/mapped_file.hpp"
#include "weights/files/owned_bytes.hpp"
#include "weights/files/read_file.hpp"
#include "weights/files/retained_region.hpp"

namespace rootspan::weights {
namespace {

using testing::bytes_of;
using testing::FailsWith;
using testing::HasValues;
using testing::TempDir;

std::shared_ptr<const StableHostMemory> owned(std::size_t size, std::uint8_t fill = 7) {
  return std::make_shared<OwnedBytes>(std::vector<std::byte>(size, static_cast<std::byte>(fill)));
}

TEST(MappedFile, MapsTheWholeFileReadOnly) {
  TempDir dir;
  const auto path = dir.write_text("data.bin", "hello, mapping");
  auto mapped = MappedFile::open(path);
  ASSERT_TRUE(mapped) << mapped.error()->message();
  const auto bytes = mapped.value()->stable_bytes();
  ASSERT_EQ(bytes.size(), 14u);
  EXPECT_EQ(std::memcmp(bytes.data(), "hello, mapping", 14), 0);
  EXPECT_EQ(mapped.value()->path(), path);
  // The same bytes on every call.
  EXPECT_EQ(mapped.value()->stable_bytes().data(), bytes.data());
}

TEST(MappedFile, EmptyFileIsNotMapped) {
  TempDir dir;
  const auto path = dir.write_text("empty.bin", "");
  auto mapped = MappedFile::open(path);
  ASSERT_TRUE(mapped) << mapped.error()->message();
  EXPECT_TRUE(mapped.value()->stable_bytes().empty());
  EXPECT_EQ(mapped.value()->stable_bytes().data(), nullptr);
}

TEST(MappedFile, SizeIsCheckedAtOpen) {
  TempDir dir;
  const auto path = dir.write_text("data.bin", "0123456789");
  auto mapped = MappedFile::open(path, 20);
  EXPECT_TRUE(FailsWith(mapped, ROOTSPAN_ERR_IO, {"map_file", "data.bin", "size changed", "expected 20", "found 10"}));
  EXPECT_TRUE(HasValues(mapped, 20, 10));
  EXPECT_TRUE(MappedFile::open(path, 10));
}

TEST(MappedFile, ACoverageBatchMeasuresEachFileOnceAndOnlyWhileItLives) {
  TempDir dir;
  const auto path = dir.write_text("f.bin", std::string(8192, 'x'));
  auto mapped = MappedFile::open(path);
  ASSERT_TRUE(mapped);
  const MappedFile &file = *mapped.value();
  {
    const MappedFile::CoverageBatch batch;
    EXPECT_TRUE(file.check_covers(8192));
    std::filesystem::resize_file(path, 4096);  // nothing reads the mapping past the end: no fault
    // The batch checks every range as of its one measurement of the file.
    EXPECT_TRUE(file.check_covers(8192));
    {
      const MappedFile::CoverageBatch inner;  // a batch of its own measures again
      EXPECT_TRUE(FailsWith(file.check_covers(8192), ROOTSPAN_ERR_IO, {"truncated to 4096 bytes"}));
    }
    EXPECT_TRUE(file.check_covers(8192)) << "the outer batch is back, with its measurement";
  }
  // Outside a batch, each check measures the file now.
  EXPECT_TRUE(FailsWith(file.check_covers(8192), ROOTSPAN_ERR_IO, {"f.bin", "truncated to 4096 bytes"}));
  EXPECT_TRUE(file.check_covers(4096));
}

TEST(MappedFile, MissingFileAndFolderAreIoErrors) {
  TempDir dir;
  EXPECT_TRUE(FailsWith(MappedFile::open(dir.path() / "absent.bin"), ROOTSPAN_ERR_IO, {"absent.bin", "cannot open"}));
  EXPECT_TRUE(FailsWith(MappedFile::open(dir.path()), ROOTSPAN_ERR_IO, {"not a regular file"}));
}

TEST(ReadFile, ReadsTheWholeFileIntoItsOwnBuffer) {
  TempDir dir;
  const auto path = dir.write_text("data.bin", "read me whole");
  auto read = ReadFile::open(path);
  ASSERT_TRUE(read) << read.error()->message();
  const auto bytes = read.value()->stable_bytes();
  ASSERT_EQ(bytes.size(), 13u);
  EXPECT_EQ(std::memcmp(bytes.data(), "read me whole", 13), 0);
  // A private copy: rewriting the file does not change what was read.
  dir.write_text("data.bin", "XXXXXXXXXXXXX");
  EXPECT_EQ(std::memcmp(read.value()->stable_bytes().data(), "read me whole", 13), 0);
}

TEST(ReadFile, EmptyFileSizeCheckAndErrors) {
  TempDir dir;
  auto empty = ReadFile::open(dir.write_text("empty.bin", ""));
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty.value()->stable_bytes().empty());

  const auto path = dir.write_text("data.bin", "0123");
  auto wrong = ReadFile::open(path, 3);
  EXPECT_TRUE(FailsWith(wrong, ROOTSPAN_ERR_IO, {"read_file", "data.bin", "expected 3", "found 4"}));
  EXPECT_TRUE(HasValues(wrong, 3, 4));
  EXPECT_TRUE(FailsWith(ReadFile::open(dir.path() / "absent.bin"), ROOTSPAN_ERR_IO, {"absent.bin"}));
  EXPECT_TRUE(FailsWith(ReadFile::open(dir.path()), ROOTSPAN_ERR_IO, {"not a regular file"}));
}

TEST(RetainedRegion, ViewsItsRangeOfTheOwner) {
  auto owner = std::make_shared<OwnedBytes>(bytes_of("0123456789"));
  auto region = RetainedRegion::make(owner, 2, 5);
  ASSERT_TRUE(region) << region.error()->message();
  EXPECT_EQ(region.value().offset(), 2u);
  EXPECT_EQ(region.value().length(), 5u);
  EXPECT_EQ(region.value().bytes().data(), owner->stable_bytes().data() + 2);
  EXPECT_EQ(region.value().bytes().size(), 5u);
  EXPECT_EQ(region.value().owner_bytes().size(), 10u);
  // The last byte is inside; a region may end exactly at the owner's end.
  EXPECT_TRUE(RetainedRegion::make(owner, 9, 1));
  EXPECT_TRUE(RetainedRegion::make(owner, 0, 10));
}

TEST(RetainedRegion, KeepsItsOwnerAliveAfterEveryOtherHolder) {
  TempDir dir;
  const auto path = dir.write_text("data.bin", "abcdefgh");
  std::weak_ptr<const StableHostMemory> watch;
  std::optional<RetainedRegion> region;
  {
    auto mapped = MappedFile::open(path);
    ASSERT_TRUE(mapped);
    std::shared_ptr<const StableHostMemory> owner = mapped.value();
    watch = owner;
    auto made = RetainedRegion::make(owner, 4, 4);
    ASSERT_TRUE(made);
    region = made.value();
  }
  ASSERT_FALSE(watch.expired());
  EXPECT_EQ(std::memcmp(region->bytes().data(), "efgh", 4), 0);
  region.reset();
  EXPECT_TRUE(watch.expired());
}

TEST(RetainedRegion, RejectsOffsetPlusLengthOverflow) {
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  auto region = RetainedRegion::make(owned(16), 8, max - 4);
  EXPECT_TRUE(FailsWith(region, ROOTSPAN_ERR_RANGE_OVERFLOW, {"retain_region", "overflows 64 bits", "offset 8"}));
  EXPECT_TRUE(HasValues(region, max - 8, max - 4));
}

TEST(RetainedRegion, RejectsZeroLength) {
  auto region = RetainedRegion::make(owned(16), 4, 0);
  EXPECT_TRUE(FailsWith(region, ROOTSPAN_ERR_INVALID_ARGUMENT, {"retain_region", "must not be empty", "offset 4"}));
  EXPECT_TRUE(HasValues(region, 1, 0));
}

TEST(RetainedRegion, RejectsRangesPastTheOwner) {
  auto region = RetainedRegion::make(owned(16), 10, 8);
  EXPECT_TRUE(
      FailsWith(region, ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT, {"retain_region", "range [10,18)", "past its owner's 16"}));
  EXPECT_TRUE(HasValues(region, 16, 18));
  // Offset alone past the end.
  EXPECT_TRUE(FailsWith(RetainedRegion::make(owned(16), 17, 1), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT, {"[17,18)"}));
  // An empty owner has no region at all.
  EXPECT_TRUE(FailsWith(RetainedRegion::make(owned(0), 0, 1), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT, {"owner's 0"}));
}

TEST(RetainedRegion, RejectsAMissingOwner) {
  EXPECT_TRUE(FailsWith(RetainedRegion::make(nullptr, 0, 1), ROOTSPAN_ERR_INVALID_ARGUMENT, {"needs an owner"}));
}

TEST(RetainedIdentity, TheRegionMustBeTheVeryBytesValidated) {
  auto owner = owned(32);
  auto region = RetainedRegion::make(owner, 8, 16);
  ASSERT_TRUE(region);
  const auto validated = owner->stable_bytes().subspan(8, 16);
  EXPECT_TRUE(check_retained_identity(validated, region.value(), "payload"));

  // Equal contents at another address are not the same bytes.
  auto other = owned(32);
  auto elsewhere = RetainedRegion::make(other, 8, 16);
  ASSERT_TRUE(elsewhere);
  EXPECT_TRUE(FailsWith(check_retained_identity(validated, elsewhere.value(), "payload"), ROOTSPAN_ERR_INVALID_PAYLOAD,
                        {"payload", "retained host-memory region differs", "address"}));

  // The same start but a different length.
  auto shorter = RetainedRegion::make(owner, 8, 15);
  ASSERT_TRUE(shorter);
  auto result = check_retained_identity(validated, shorter.value(), "segment 0");
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_PAYLOAD, {"segment 0", "length 15 instead of 16"}));
  EXPECT_TRUE(HasValues(result, 16, 15));
}

}  // namespace
}  // namespace rootspan::weights
