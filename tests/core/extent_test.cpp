// docs/concepts.md Extent: RangeOverflow, InvalidAlignment, MisalignedOffset, in
// that order when several fields are bad; zero length is allowed. The order is
// checked on the core's own validate_extent and, end to end, on what a
// misbehaving provider reports at import.
#include <limits>

#include "core/extent.hpp"
#include "test_support.hpp"

namespace {

using namespace rootspan::testing;
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

rootspan::Extent extent(std::uint64_t offset, std::uint64_t length, std::uint64_t alignment) {
  return {rootspan::Key{3, 12}, offset, length, alignment};
}

// ---- the rule itself (core/extent.hpp) ----------------------------------

TEST(ValidateExtent, RangeOverflowIsReportedBeforeEverythingElse) {
  // All three fields are bad: the overflow wins.
  auto r = rootspan::validate_extent(extent(kMax, 1, 3));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error()->code, ROOTSPAN_ERR_RANGE_OVERFLOW);
  EXPECT_EQ(r.error()->cause, "offset 18446744073709551615 + length 1 overflows 64 bits");
  // Overflow with alignment 0 and a misaligned offset.
  r = rootspan::validate_extent(extent(kMax - 6, 64, 0));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error()->code, ROOTSPAN_ERR_RANGE_OVERFLOW);
}

TEST(ValidateExtent, InvalidAlignmentIsReportedBeforeMisalignedOffset) {
  for (std::uint64_t alignment : {std::uint64_t{0}, std::uint64_t{3}, std::uint64_t{6}, std::uint64_t{96}, kMax}) {
    auto r = rootspan::validate_extent(extent(5, 8, alignment));  // offset 5 is misaligned for everything
    ASSERT_FALSE(r) << alignment;
    EXPECT_EQ(r.error()->code, ROOTSPAN_ERR_INVALID_ALIGNMENT) << alignment;
    EXPECT_EQ(r.error()->cause, "alignment " + str(alignment) + " is not a non-zero power of two");
  }
}

TEST(ValidateExtent, MisalignedOffsetCarriesTheRemainder) {
  auto r = rootspan::validate_extent(extent(48, 16, 64));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error()->code, ROOTSPAN_ERR_MISALIGNED_OFFSET);
  EXPECT_EQ(r.error()->cause, "offset 48 is not a multiple of alignment 64");
  ASSERT_TRUE(r.error()->values.has_value());
  EXPECT_EQ(r.error()->values->first, 0u);
  EXPECT_EQ(r.error()->values->second, 48u);
}

TEST(ValidateExtent, ZeroLengthIsAllowed) {
  EXPECT_TRUE(rootspan::validate_extent(extent(0, 0, 1)));
  EXPECT_TRUE(rootspan::validate_extent(extent(64, 0, 64)));
  EXPECT_TRUE(rootspan::validate_extent(extent(kMax, 0, 1)));  // ends exactly at 2^64 - 1: no overflow
  EXPECT_TRUE(rootspan::validate_extent(extent(kMax - 63, 0, 64)));
}

TEST(ValidateExtent, GoodExtentsPass) {
  EXPECT_TRUE(rootspan::validate_extent(extent(0, 4096, 4096)));
  EXPECT_TRUE(rootspan::validate_extent(extent(128, 64, 64)));
  EXPECT_TRUE(rootspan::validate_extent(extent(kMax - 63, 63, 1)));  // ends at 2^64 - 1
  EXPECT_TRUE(
      rootspan::validate_extent(extent(std::uint64_t{1} << 63, std::uint64_t{1} << 62, std::uint64_t{1} << 63)));
}

TEST(ValidateKey, BothHalvesMustBeNonZero) {
  EXPECT_TRUE(rootspan::validate_key({1, 1}));
  for (rootspan::Key key : {rootspan::Key{0, 1}, rootspan::Key{1, 0}, rootspan::Key{0, 0}}) {
    auto r = rootspan::validate_key(key);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error()->code, ROOTSPAN_ERR_INVALID_KEY);
    EXPECT_EQ(r.error()->cause, "allocation key (" + str(key.domain) + "," + str(key.local) +
                                    ") has a zero half; both domain and local id must be non-zero");
  }
}

// ---- end to end: a provider reporting bad extents -------------------------

class ExtentImport : public CoreTest {
 protected:
  void SetUp() override {
    CoreTest::SetUp();
    add(test_provider_entry);
    domain_ = granted_domain("test");
    ASSERT_NE(domain_, 0u);
  }

  // Allocates 64 bytes from the test provider, expecting a rejection with
  // `code`; checks the shared parts of the diagnostic and that the rejected
  // allocation was released exactly once.
  void expect_rejected(rootspan_status code, Err &e) {
    const int released = counters().release;
    rootspan_allocate_options o = allocate_options("test", 64);
    rootspan_root *root = reinterpret_cast<rootspan_root *>(1);
    ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), code) << e.message();
    EXPECT_EQ(root, nullptr);
    EXPECT_EQ(e.code(), code);
    EXPECT_EQ(e.operation(), "root_allocate");
    EXPECT_EQ(e.policy(), "L9");
    EXPECT_FALSE(e.resolution());
    EXPECT_EQ(counters().release - released, 1) << "the rejected allocation must be released exactly once";
    EXPECT_EQ(live_blocks(), 0);
  }

  std::uint64_t domain_ = 0;
};

TEST_F(ExtentImport, OverflowingExtentIsRangeOverflowEvenWithBadAlignmentAndOffset) {
  behaviour().byte_offset = kMax - 7;  // not a multiple of 3 or of anything else useful
  behaviour().alignment = 3;
  behaviour().host_shift = 0;
  Err e;
  expect_rejected(ROOTSPAN_ERR_RANGE_OVERFLOW, e);
  EXPECT_EQ(e.cause(), "offset 18446744073709551608 + length 64 overflows 64 bits");
  const rootspan_requested r = e.requested();
  EXPECT_EQ(r.kind, ROOTSPAN_REQUESTED_KEY_RANGE);
  EXPECT_EQ(r.key.domain, domain_);
  EXPECT_EQ(r.key.local, 1u);
  EXPECT_EQ(r.offset, kMax - 7);
  EXPECT_EQ(r.length, 64u);
  // The printed range's end is checked in error_test.cpp (it wraps today).
  EXPECT_EQ(e.message().rfind("root_allocate for key (" + str(domain_) + ",1) range [18446744073709551608,", 0), 0u)
      << e.message();
  EXPECT_NE(e.message().find(": unresolved: L9: offset 18446744073709551608 + length 64 overflows 64 bits"),
            std::string::npos)
      << e.message();
}

TEST_F(ExtentImport, ZeroAlignmentIsInvalidAlignmentBeforeMisalignedOffset) {
  behaviour().byte_offset = 3;
  behaviour().alignment = 0;
  Err e;
  expect_rejected(ROOTSPAN_ERR_INVALID_ALIGNMENT, e);
  EXPECT_EQ(e.message(), "root_allocate for key (" + str(domain_) +
                             ",1) range [3,67): unresolved: L9: alignment 0 is not a non-zero power of two");
  EXPECT_EQ(e.cause(), "alignment 0 is not a non-zero power of two");
}

TEST_F(ExtentImport, NonPowerOfTwoAlignmentIsInvalidAlignment) {
  behaviour().byte_offset = 8;
  behaviour().alignment = 24;  // 8 is a multiple of neither 24 nor its power-of-two part
  Err e;
  expect_rejected(ROOTSPAN_ERR_INVALID_ALIGNMENT, e);
  EXPECT_EQ(e.cause(), "alignment 24 is not a non-zero power of two");
}

TEST_F(ExtentImport, OffsetNotAMultipleOfAlignmentIsMisalignedOffset) {
  behaviour().byte_offset = 32;
  behaviour().alignment = 64;
  Err e;
  expect_rejected(ROOTSPAN_ERR_MISALIGNED_OFFSET, e);
  EXPECT_EQ(e.message(), "root_allocate for key (" + str(domain_) +
                             ",1) range [32,96): unresolved: L9: offset 32 is not a multiple of alignment 64");
  std::uint64_t expected = 1, actual = 1;
  ASSERT_TRUE(e.values(&expected, &actual));
  EXPECT_EQ(expected, 0u);
  EXPECT_EQ(actual, 32u);
}

TEST_F(ExtentImport, InvalidKeyIsCheckedBeforeTheExtent) {
  behaviour().local = 0;
  behaviour().byte_offset = kMax;  // overflowing too
  Err e;
  expect_rejected(ROOTSPAN_ERR_INVALID_KEY, e);
  EXPECT_EQ(e.cause(),
            "allocation key (" + str(domain_) + ",0) has a zero half; both domain and local id must be non-zero");
}

TEST_F(ExtentImport, ANonZeroOffsetThatIsAlignedIsAccepted) {
  behaviour().byte_offset = 128;
  behaviour().alignment = 64;
  rootspan_root *root = allocate("test", 64);
  ASSERT_NE(root, nullptr);
  const rootspan_root_info info = info_of(root);
  EXPECT_EQ(info.byte_offset, 128u);
  EXPECT_EQ(info.byte_length, 64u);
  EXPECT_EQ(info.alignment, 64u);
  release(root);
  EXPECT_EQ(counters().release.load(), 1);
}

TEST_F(ExtentImport, ZeroLengthRootsAreAllowed) {
  for (const char *provider : {"host", "test"}) {
    SCOPED_TRACE(provider);
    rootspan_root *root = allocate(provider, 0);
    ASSERT_NE(root, nullptr);
    const rootspan_root_info info = info_of(root);
    EXPECT_EQ(info.byte_length, 0u);
    EXPECT_NE(info.root_id, 0u);
    rootspan_span span{};
    span.struct_size = sizeof span;
    Err e;
    ASSERT_EQ(rootspan_span_derive(root, 0, 0, &span, e.out()), ROOTSPAN_OK) << e.message();
    EXPECT_EQ(span.length, 0u);
    EXPECT_EQ(span.alignment, info.alignment);
    rootspan_claim *c = claim(root, 0, 0, ROOTSPAN_CLAIM_EXCLUSIVE);
    ASSERT_NE(c, nullptr);
    rootspan_mapping *m = nullptr;
    ASSERT_EQ(rootspan_map_write(c, ROOTSPAN_DTYPE_NONE, 0, 0, &m, e.out()), ROOTSPAN_OK) << e.message();
    EXPECT_EQ(rootspan_mapping_length(m), 0u);
    EXPECT_EQ(rootspan_unmap(m), ROOTSPAN_OK);
    release(c);
    release(root);
  }
}

}  // namespace
