// docs/concepts.md Spans: derived from a range relative to one root, checked in
// order (root end overflow, relative end overflow -> RangeOverflow; absolute
// offset overflow -> OffsetOverflow; outside the root -> OutsideRootExtent);
// derived alignment = the root's at relative offset 0, else min(root
// alignment, lowest set bit of the offset). Spans of different roots never
// overlap; empty spans overlap nothing.
#include <limits>

#include "core/span_derivation.hpp"
#include "test_support.hpp"

namespace {

using namespace rootspan::testing;
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kHigh = kMax - 127;  // 2^64 - 128: a multiple of 64
constexpr std::uint64_t kHalf = std::uint64_t{1} << 63;

rootspan::Extent root_extent(std::uint64_t offset, std::uint64_t length, std::uint64_t alignment) {
  return {rootspan::Key{5, 9}, offset, length, alignment};
}

// ---- the order of the checks (core/span.hpp) --------------------------------

TEST(DeriveSpan, RootEndOverflowComesFirst) {
  // A root whose own end overflows (import would refuse it, derive_span
  // checks anyway), asked for a range that is bad in every other way too.
  auto s = rootspan::derive_span(1, root_extent(kMax - 1, 4, 1), kMax, 1);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error()->code, ROOTSPAN_ERR_RANGE_OVERFLOW);
  EXPECT_EQ(s.error()->cause, "root end overflows 64 bits");
}

TEST(DeriveSpan, RelativeEndOverflowComesBeforeOffsetOverflow) {
  // offset + length overflows, and so does root offset + offset.
  auto s = rootspan::derive_span(1, root_extent(kHigh, 64, 64), kMax, 1);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error()->code, ROOTSPAN_ERR_RANGE_OVERFLOW);
  EXPECT_EQ(s.error()->cause, "relative offset 18446744073709551615 + length 1 overflows 64 bits");
}

TEST(DeriveSpan, OffsetOverflowComesBeforeOutsideRootExtent) {
  // The range lies outside the 64-byte root, and root offset + offset overflows.
  auto s = rootspan::derive_span(1, root_extent(kHigh, 64, 64), kHalf, 0);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error()->code, ROOTSPAN_ERR_OFFSET_OVERFLOW);
  EXPECT_EQ(s.error()->cause,
            "root offset 18446744073709551488 + relative offset 9223372036854775808 overflows 64 bits");
}

TEST(DeriveSpan, OutsideRootExtentLast) {
  auto s = rootspan::derive_span(1, root_extent(0, 64, 64), 60, 8);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error()->code, ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  EXPECT_EQ(s.error()->cause, "range ends at 68, past the root's length 64");
  ASSERT_TRUE(s.error()->values.has_value());
  EXPECT_EQ(s.error()->values->first, 64u);
  EXPECT_EQ(s.error()->values->second, 68u);
}

TEST(DeriveSpan, DerivedAlignmentExamples) {
  struct Case {
    std::uint64_t root_alignment, offset, expected;
  };
  const Case cases[] = {
      {64, 0, 64},   {64, 48, 16},    {64, 64, 64},       {64, 96, 32},        {64, 1, 1}, {64, 2, 2},
      {64, 128, 64}, {64, 4000, 32},  {4096, 2048, 2048}, {4096, 0, 4096},     {1, 0, 1},  {1, 64, 1},
      {8, 12, 4},    {256, 768, 256}, {kHalf, 0, kHalf},  {kHalf, 1024, 1024},
  };
  for (const Case &c : cases) {
    auto s = rootspan::derive_span(7, root_extent(0, 8192, c.root_alignment), c.offset, 0);
    ASSERT_TRUE(s) << c.offset;
    EXPECT_EQ(s.value().alignment, c.expected)
        << "root alignment " << c.root_alignment << ", relative offset " << c.offset;
  }
}

TEST(DeriveSpan, OffsetsBecomeAbsolute) {
  auto s = rootspan::derive_span(42, root_extent(128, 256, 64), 48, 16);
  ASSERT_TRUE(s);
  EXPECT_EQ(s.value().root_id, 42u);
  EXPECT_EQ(s.value().offset, 176u);
  EXPECT_EQ(s.value().length, 16u);
  EXPECT_EQ(s.value().alignment, 16u);  // relative offset 48 decides, not absolute 176
}

TEST(SpansOverlap, EmptySpansAndDifferentRootsNeverOverlap) {
  const rootspan::Span a{1, 0, 64, 64};
  EXPECT_TRUE(rootspan::spans_overlap(a, rootspan::Span{1, 63, 1, 1}));
  EXPECT_FALSE(rootspan::spans_overlap(a, rootspan::Span{1, 64, 8, 64}));  // adjacent
  EXPECT_FALSE(rootspan::spans_overlap(a, rootspan::Span{1, 10, 0, 2}));   // empty inside
  EXPECT_FALSE(rootspan::spans_overlap(rootspan::Span{1, 10, 0, 2}, a));
  EXPECT_FALSE(rootspan::spans_overlap(rootspan::Span{1, 10, 0, 2}, rootspan::Span{1, 10, 0, 2}));
  EXPECT_FALSE(rootspan::spans_overlap(a, rootspan::Span{2, 0, 64, 64}));  // same range, other root
}

// ---- through the C API --------------------------------------------------------

class Spans : public CoreTest {
 protected:
  rootspan_span derive(const rootspan_root *root, std::uint64_t offset, std::uint64_t length) {
    rootspan_span s{};
    s.struct_size = sizeof s;
    Err e;
    EXPECT_EQ(rootspan_span_derive(root, offset, length, &s, e.out()), ROOTSPAN_OK) << e.message();
    return s;
  }
};

TEST_F(Spans, RelativeEndOverflowIsRangeOverflow) {
  rootspan_root *root = allocate("host", 64);
  rootspan_span s{};
  s.struct_size = sizeof s;
  Err e;
  ASSERT_EQ(rootspan_span_derive(root, kMax, 1, &s, e.out()), ROOTSPAN_ERR_RANGE_OVERFLOW);
  EXPECT_EQ(e.code(), ROOTSPAN_ERR_RANGE_OVERFLOW);
  EXPECT_EQ(e.operation(), "span_derive");
  EXPECT_EQ(e.cause(), "relative offset 18446744073709551615 + length 1 overflows 64 bits");
  const rootspan_requested r = e.requested();
  EXPECT_EQ(r.kind, ROOTSPAN_REQUESTED_ROOT_KEY_RANGE);
  EXPECT_EQ(r.root_id, info_of(root).root_id);
  EXPECT_EQ(r.offset, kMax);
  EXPECT_EQ(r.length, 1u);
  EXPECT_FALSE(e.resolution());
  const std::string prefix = root_request("span_derive", root, 0, 0);
  const std::string head = prefix.substr(0, prefix.find(" range ")) + " range [18446744073709551615,";
  EXPECT_EQ(e.message().rfind(head, 0), 0u) << e.message();
  EXPECT_NE(e.message().find(": unresolved: relative offset 18446744073709551615 + length 1 overflows 64 bits"),
            std::string::npos)
      << e.message();
  release(root);
}

TEST_F(Spans, AbsoluteOffsetOverflowIsOffsetOverflow) {
  // A provider whose allocation places the root's bytes at 2^64 - 128.
  add(test_provider_entry);
  behaviour().byte_offset = kHigh;
  rootspan_root *root = allocate("test", 64);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(info_of(root).byte_offset, kHigh);

  rootspan_span s{};
  s.struct_size = sizeof s;
  Err e;
  ASSERT_EQ(rootspan_span_derive(root, kHalf, 0, &s, e.out()), ROOTSPAN_ERR_OFFSET_OVERFLOW);
  EXPECT_EQ(e.message(), root_request("span_derive", root, kHalf, kHalf) +
                             ": unresolved: root offset 18446744073709551488 + relative offset 9223372036854775808 "
                             "overflows 64 bits");
  EXPECT_EQ(e.cause(), "root offset 18446744073709551488 + relative offset 9223372036854775808 overflows 64 bits");
  // The same through a claim.
  rootspan_claim *c = nullptr;
  ASSERT_EQ(rootspan_claim_acquire(root, kHalf, 0, ROOTSPAN_CLAIM_SHARED, &c, e.out()), ROOTSPAN_ERR_OFFSET_OVERFLOW);
  EXPECT_EQ(e.operation(), "claim_acquire");
  // Ranges inside it are fine, with absolute offsets.
  s = derive(root, 0, 64);
  EXPECT_EQ(s.offset, kHigh);
  EXPECT_EQ(s.length, 64u);
  EXPECT_EQ(s.alignment, 64u);
  s = derive(root, 32, 32);
  EXPECT_EQ(s.offset, kHigh + 32);
  EXPECT_EQ(s.alignment, 32u);
  s = derive(root, 64, 0);  // the empty span at the very end
  EXPECT_EQ(s.offset, kHigh + 64);
  release(root);
}

TEST_F(Spans, RangesLeavingTheRootAreOutsideRootExtent) {
  rootspan_root *root = allocate("host", 64);
  rootspan_span s{};
  s.struct_size = sizeof s;
  Err e;
  ASSERT_EQ(rootspan_span_derive(root, 60, 8, &s, e.out()), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  EXPECT_EQ(e.message(),
            root_request("span_derive", root, 60, 68) + ": unresolved: range ends at 68, past the root's length 64");
  std::uint64_t expected = 0, actual = 0;
  ASSERT_TRUE(e.values(&expected, &actual));
  EXPECT_EQ(expected, 64u);
  EXPECT_EQ(actual, 68u);
  // An empty range past the end is outside too; one at the end is not.
  ASSERT_EQ(rootspan_span_derive(root, 65, 0, &s, e.out()), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  EXPECT_EQ(e.cause(), "range ends at 65, past the root's length 64");
  s = derive(root, 64, 0);
  EXPECT_EQ(s.length, 0u);
  s = derive(root, 0, 64);
  EXPECT_EQ(s.length, 64u);
  release(root);
}

TEST_F(Spans, DerivedAlignmentThroughTheCApi) {
  rootspan_root *root = allocate("host", 8192, 64);
  const std::uint64_t id = info_of(root).root_id;
  struct Case {
    std::uint64_t offset, expected;
  } cases[] = {{0, 64}, {48, 16}, {64, 64}, {96, 32}, {1, 1}, {2, 2}, {24, 8}, {128, 64}, {4000, 32}};
  for (const Case &c : cases) {
    const rootspan_span s = derive(root, c.offset, 16);
    EXPECT_EQ(s.alignment, c.expected) << "offset " << c.offset;
    EXPECT_EQ(s.root_id, id);
    EXPECT_EQ(s.offset, c.offset);
    EXPECT_EQ(s.length, 16u);
  }
  release(root);

  rootspan_root *page = allocate("host", 8192, 4096);
  EXPECT_EQ(derive(page, 0, 0).alignment, 4096u);
  EXPECT_EQ(derive(page, 2048, 8).alignment, 2048u);
  EXPECT_EQ(derive(page, 4096, 8).alignment, 4096u);
  EXPECT_EQ(derive(page, 6144, 8).alignment, 2048u);
  release(page);
}

TEST_F(Spans, SpansOfARootWithAByteOffsetAreAbsolute) {
  add(test_provider_entry);
  behaviour().byte_offset = 64;
  behaviour().alignment = 64;
  rootspan_root *root = allocate("test", 128);
  const rootspan_span s = derive(root, 16, 16);
  EXPECT_EQ(s.offset, 80u);
  EXPECT_EQ(s.alignment, 16u);
  // Claims report the same absolute span.
  rootspan_claim *c = claim(root, 16, 16, ROOTSPAN_CLAIM_SHARED);
  rootspan_span cs{};
  cs.struct_size = sizeof cs;
  rootspan_claim_mode mode = ROOTSPAN_CLAIM_EXCLUSIVE;
  ASSERT_EQ(rootspan_claim_get_span(c, &cs, &mode), ROOTSPAN_OK);
  EXPECT_EQ(cs.offset, 80u);
  EXPECT_EQ(cs.length, 16u);
  EXPECT_EQ(cs.alignment, 16u);
  EXPECT_EQ(mode, ROOTSPAN_CLAIM_SHARED);
  release(c);
  release(root);
}

TEST_F(Spans, BadArgumentsAreInvalidArgument) {
  rootspan_root *root = allocate("host", 64);
  rootspan_span s{};
  s.struct_size = 0;  // too small to be a struct at all
  Err e;
  EXPECT_EQ(rootspan_span_derive(root, 0, 8, &s, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e.operation(), "span_derive");
  EXPECT_EQ(rootspan_span_derive(nullptr, 0, 8, &s, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rootspan_span_derive(root, 0, 8, nullptr, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  release(root);
}

}  // namespace
