// docs/concepts.md Claims: shared claims coexist; an exclusive claim conflicts with
// every overlapping claim, and the Conflict names the other claim's range and
// mode; empty spans overlap nothing; an exclusive claim splits into disjoint
// exclusive children (overlapping children -> Conflict, children outside the
// parent -> OutsideRootExtent, a shared parent cannot split, the parent is
// Busy while children live); exclusive claims on read-only roots -> ReadOnly.
#include <cstring>

#include "test_support.hpp"

namespace {

using namespace rootspan::testing;

class Claims : public CoreTest {
 protected:
  void SetUp() override {
    CoreTest::SetUp();
    root_ = allocate("host", 128);
    ASSERT_NE(root_, nullptr);
  }
  void TearDown() override {
    if (root_ != nullptr) {
      Err e;
      EXPECT_EQ(rootspan_root_release(root_, e.out()), ROOTSPAN_OK) << "a claim was left live: " << e.message();
    }
    CoreTest::TearDown();
  }

  // Expects a Conflict for [offset, offset + length) in `mode`, with `other`
  // as the cause's claim ("exclusive claim [0,96)").
  void expect_conflict(std::uint64_t offset, std::uint64_t length, rootspan_claim_mode mode, const std::string &other) {
    rootspan_claim *c = reinterpret_cast<rootspan_claim *>(1);
    Err e;
    ASSERT_EQ(rootspan_claim_acquire(root_, offset, length, mode, &c, e.out()), ROOTSPAN_ERR_CONFLICT) << e.message();
    EXPECT_EQ(c, nullptr);
    EXPECT_EQ(e.code(), ROOTSPAN_ERR_CONFLICT);
    EXPECT_EQ(e.operation(), "claim_acquire");
    EXPECT_EQ(e.cause(), "conflict with " + other);
    EXPECT_EQ(e.message(),
              root_request("claim_acquire", root_, offset, offset + length) + ": unresolved: conflict with " + other);
    const rootspan_requested r = e.requested();
    EXPECT_EQ(r.kind, ROOTSPAN_REQUESTED_ROOT_KEY_RANGE);
    EXPECT_EQ(r.root_id, info_of(root_).root_id);
    EXPECT_EQ(r.key.domain, info_of(root_).key.domain);
    EXPECT_EQ(r.key.local, info_of(root_).key.local);
    EXPECT_EQ(r.offset, offset);
    EXPECT_EQ(r.length, length);
  }

  rootspan_span span_of(const rootspan_claim *c, rootspan_claim_mode *mode = nullptr) {
    rootspan_span s{};
    s.struct_size = sizeof s;
    EXPECT_EQ(rootspan_claim_get_span(c, &s, mode), ROOTSPAN_OK);
    return s;
  }

  rootspan_root *root_ = nullptr;
};

TEST_F(Claims, SharedClaimsCoexist) {
  rootspan_claim *a = claim(root_, 0, 128, ROOTSPAN_CLAIM_SHARED);
  rootspan_claim *b = claim(root_, 0, 128, ROOTSPAN_CLAIM_SHARED);
  rootspan_claim *c = claim(root_, 32, 16, ROOTSPAN_CLAIM_SHARED);
  ASSERT_TRUE(a && b && c);
  rootspan_claim_mode mode = ROOTSPAN_CLAIM_EXCLUSIVE;
  const rootspan_span s = span_of(c, &mode);
  EXPECT_EQ(mode, ROOTSPAN_CLAIM_SHARED);
  EXPECT_EQ(s.root_id, info_of(root_).root_id);
  EXPECT_EQ(s.offset, 32u);
  EXPECT_EQ(s.length, 16u);
  EXPECT_EQ(s.alignment, 32u);
  release(a);
  release(b);
  release(c);
}

TEST_F(Claims, SharedClaimAgainstALiveExclusiveOneIsAConflictNamingIt) {
  // The example of docs/concepts.md.
  rootspan_claim *x = claim(root_, 0, 96, ROOTSPAN_CLAIM_EXCLUSIVE);
  ASSERT_NE(x, nullptr);
  expect_conflict(64, 64, ROOTSPAN_CLAIM_SHARED, "exclusive claim [0,96)");
  expect_conflict(64, 64, ROOTSPAN_CLAIM_EXCLUSIVE, "exclusive claim [0,96)");
  expect_conflict(95, 1, ROOTSPAN_CLAIM_SHARED, "exclusive claim [0,96)");
  // Adjacent is not overlapping.
  rootspan_claim *after = claim(root_, 96, 32, ROOTSPAN_CLAIM_EXCLUSIVE);
  ASSERT_NE(after, nullptr);
  release(x);
  // Once released, the range is free again.
  rootspan_claim *again = claim(root_, 64, 32, ROOTSPAN_CLAIM_SHARED);
  ASSERT_NE(again, nullptr);
  release(again);
  release(after);
}

TEST_F(Claims, ExclusiveClaimAgainstALiveSharedOneIsAConflictNamingIt) {
  rootspan_claim *s = claim(root_, 16, 32, ROOTSPAN_CLAIM_SHARED);
  ASSERT_NE(s, nullptr);
  expect_conflict(0, 17, ROOTSPAN_CLAIM_EXCLUSIVE, "shared claim [16,48)");
  expect_conflict(47, 81, ROOTSPAN_CLAIM_EXCLUSIVE, "shared claim [16,48)");
  // Another shared claim over it is fine; exclusive claims beside it are fine.
  rootspan_claim *s2 = claim(root_, 0, 128, ROOTSPAN_CLAIM_SHARED);
  release(s2);
  rootspan_claim *left = claim(root_, 0, 16, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_claim *right = claim(root_, 48, 80, ROOTSPAN_CLAIM_EXCLUSIVE);
  ASSERT_TRUE(left && right);
  release(left);
  release(right);
  release(s);
}

TEST_F(Claims, EmptySpansOverlapNothing) {
  rootspan_claim *all = claim(root_, 0, 128, ROOTSPAN_CLAIM_EXCLUSIVE);
  ASSERT_NE(all, nullptr);
  // Empty claims inside, at the start and at the end of a live exclusive claim.
  rootspan_claim *e1 = claim(root_, 64, 0, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_claim *e2 = claim(root_, 0, 0, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_claim *e3 = claim(root_, 128, 0, ROOTSPAN_CLAIM_SHARED);
  rootspan_claim *e4 = claim(root_, 64, 0, ROOTSPAN_CLAIM_EXCLUSIVE);  // two empty exclusive claims at one offset
  ASSERT_TRUE(e1 && e2 && e3 && e4);
  release(all);
  // And a non-empty claim over a live empty exclusive claim.
  rootspan_claim *over = claim(root_, 0, 128, ROOTSPAN_CLAIM_EXCLUSIVE);
  ASSERT_NE(over, nullptr);
  release(over);
  release(e1);
  release(e2);
  release(e3);
  release(e4);
}

TEST_F(Claims, ClaimsAreCheckedAsSpans) {
  rootspan_claim *c = nullptr;
  Err e;
  ASSERT_EQ(rootspan_claim_acquire(root_, 100, 100, ROOTSPAN_CLAIM_SHARED, &c, e.out()),
            ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  EXPECT_EQ(e.message(), root_request("claim_acquire", root_, 100, 200) +
                             ": unresolved: range ends at 200, past the root's length 128");
  ASSERT_EQ(rootspan_claim_acquire(root_, 1, UINT64_MAX, ROOTSPAN_CLAIM_SHARED, &c, e.out()),
            ROOTSPAN_ERR_RANGE_OVERFLOW);
  EXPECT_EQ(e.cause(), "relative offset 1 + length 18446744073709551615 overflows 64 bits");
  ASSERT_EQ(rootspan_claim_acquire(root_, 0, 8, 7, &c, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e.message(), "claim_acquire: mode is neither ROOTSPAN_CLAIM_SHARED nor ROOTSPAN_CLAIM_EXCLUSIVE");
  ASSERT_EQ(rootspan_claim_acquire(nullptr, 0, 8, ROOTSPAN_CLAIM_SHARED, &c, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rootspan_claim_release(nullptr, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e.message(), "claim_release: claim is NULL");
}

TEST_F(Claims, ExclusiveClaimOnAReadOnlyRootIsReadOnly) {
  static const unsigned char bytes[64] = {1, 2, 3};
  rootspan_host_import import =
      host_import(const_cast<unsigned char *>(bytes), sizeof bytes, 1, ROOTSPAN_DTYPE_NONE, nullptr, true);
  rootspan_root *ro = nullptr;
  Err e;
  ASSERT_EQ(rootspan_root_import_host(context_, &import, &ro, e.out()), ROOTSPAN_OK) << e.message();
  rootspan_claim *c = nullptr;
  ASSERT_EQ(rootspan_claim_acquire(ro, 8, 8, ROOTSPAN_CLAIM_EXCLUSIVE, &c, e.out()), ROOTSPAN_ERR_READ_ONLY);
  EXPECT_EQ(e.message(), root_request("claim_acquire", ro, 8, 16) +
                             ": unresolved: root is read-only; an exclusive claim needs write access");
  // Even an empty exclusive claim asks for write access.
  ASSERT_EQ(rootspan_claim_acquire(ro, 8, 0, ROOTSPAN_CLAIM_EXCLUSIVE, &c, e.out()), ROOTSPAN_ERR_READ_ONLY);
  c = claim(ro, 0, 64, ROOTSPAN_CLAIM_SHARED);
  ASSERT_NE(c, nullptr);
  release(c);
  release(ro);
}

// ---- split -------------------------------------------------------------------

TEST_F(Claims, AnExclusiveClaimSplitsIntoDisjointChildren) {
  rootspan_claim *parent = claim(root_, 0, 128, ROOTSPAN_CLAIM_EXCLUSIVE);
  const rootspan_range ranges[] = {{0, 32}, {32, 32}, {96, 32}};
  rootspan_claim *children[3] = {};
  Err e;
  ASSERT_EQ(rootspan_claim_split(parent, ranges, 3, children, e.out()), ROOTSPAN_OK) << e.message();
  for (int i = 0; i < 3; ++i) {
    ASSERT_NE(children[i], nullptr);
    rootspan_claim_mode mode = ROOTSPAN_CLAIM_SHARED;
    const rootspan_span s = span_of(children[i], &mode);
    EXPECT_EQ(mode, ROOTSPAN_CLAIM_EXCLUSIVE);
    EXPECT_EQ(s.offset, ranges[i].offset);
    EXPECT_EQ(s.length, ranges[i].length);
    // Each child is writable on its own.
    rootspan_mapping *m = nullptr;
    ASSERT_EQ(rootspan_map_write(children[i], ROOTSPAN_DTYPE_NONE, 0, 32, &m, e.out()), ROOTSPAN_OK) << e.message();
    std::memset(rootspan_mapping_data(m), 'a' + i, 32);
    rootspan_unmap(m);
  }
  // The parent is Busy: no mapping, no release, no second split while children live.
  rootspan_mapping *m = nullptr;
  ASSERT_EQ(rootspan_map_read(parent, ROOTSPAN_DTYPE_NONE, 0, 128, &m, e.out()), ROOTSPAN_ERR_BUSY);
  EXPECT_EQ(e.message(),
            root_request("map_read", root_, 0, 128) + ": unresolved: the claim is split; map its children instead");
  ASSERT_EQ(rootspan_claim_release(parent, e.out()), ROOTSPAN_ERR_BUSY);
  EXPECT_EQ(e.operation(), "claim_release");
  EXPECT_EQ(e.message(), root_request("claim_release", root_, 0, 128) +
                             ": resolved to span [0,128): exclusive claim [0,128) still has 3 children, 0 mappings and "
                             "0 device accesses");
  rootspan_span resolved{};
  ASSERT_TRUE(e.resolution(&resolved));
  EXPECT_EQ(resolved.offset, 0u);
  EXPECT_EQ(resolved.length, 128u);
  const rootspan_range more[] = {{64, 32}};
  rootspan_claim *extra = nullptr;
  ASSERT_EQ(rootspan_claim_split(parent, more, 1, &extra, e.out()), ROOTSPAN_ERR_BUSY);
  EXPECT_EQ(e.message(), root_request("claim_split", root_, 0, 128) +
                             ": resolved to span [0,128): the parent exclusive claim [0,128) is mapped, accessed or "
                             "already split");
  // Another claim over the parent's range still conflicts with the parent.
  expect_conflict(64, 8, ROOTSPAN_CLAIM_SHARED, "exclusive claim [0,128)");
  // The root is Busy with four live claims.
  ASSERT_EQ(rootspan_root_release(root_, e.out()), ROOTSPAN_ERR_BUSY);
  EXPECT_EQ(e.cause().rfind("4 claims are live, the first:", 0), 0u) << e.cause();
  EXPECT_NE(e.cause().find("exclusive claim [0,128); the root stays valid"), std::string::npos) << e.cause();

  // Children are released in any order; the parent only after the last.
  release(children[1]);
  ASSERT_EQ(rootspan_claim_release(parent, e.out()), ROOTSPAN_ERR_BUSY);
  EXPECT_EQ(e.cause(), "exclusive claim [0,128) still has 2 children, 0 mappings and 0 device accesses");
  release(children[2]);
  release(children[0]);
  // What the children wrote is there.
  ASSERT_EQ(rootspan_map_read(parent, ROOTSPAN_DTYPE_NONE, 0, 128, &m, e.out()), ROOTSPAN_OK) << e.message();
  const auto *bytes = static_cast<const unsigned char *>(rootspan_mapping_data(m));
  EXPECT_EQ(bytes[0], 'a');
  EXPECT_EQ(bytes[40], 'b');
  EXPECT_EQ(bytes[127], 'c');
  rootspan_unmap(m);
  release(parent);
}

TEST_F(Claims, ChildrenAreRelativeToTheParentAndCanSplitAgain) {
  rootspan_claim *parent = claim(root_, 32, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  const rootspan_range halves[] = {{0, 32}, {32, 32}};
  rootspan_claim *children[2] = {};
  Err e;
  ASSERT_EQ(rootspan_claim_split(parent, halves, 2, children, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(span_of(children[0]).offset, 32u);
  EXPECT_EQ(span_of(children[1]).offset, 64u);
  const rootspan_range quarters[] = {{0, 16}, {16, 16}};
  rootspan_claim *grandchildren[2] = {};
  ASSERT_EQ(rootspan_claim_split(children[1], quarters, 2, grandchildren, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(span_of(grandchildren[1]).offset, 80u);
  EXPECT_EQ(rootspan_claim_release(children[1], e.out()), ROOTSPAN_ERR_BUSY);
  release(grandchildren[0]);
  release(grandchildren[1]);
  release(children[1]);
  release(children[0]);
  release(parent);
}

TEST_F(Claims, OverlappingChildrenAreAConflictAndNoChildIsMade) {
  rootspan_claim *parent = claim(root_, 0, 128, ROOTSPAN_CLAIM_EXCLUSIVE);
  const rootspan_range ranges[] = {{0, 32}, {16, 32}};
  rootspan_claim *children[2] = {};
  Err e;
  ASSERT_EQ(rootspan_claim_split(parent, ranges, 2, children, e.out()), ROOTSPAN_ERR_CONFLICT);
  EXPECT_EQ(e.operation(), "claim_split");
  EXPECT_EQ(e.cause(), "child 1 [16,48) overlaps child 0 [0,32)");
  EXPECT_EQ(e.message(), root_request("claim_split", root_, 0, 128) +
                             ": resolved to span [0,128): child 1 [16,48) overlaps child 0 [0,32)");
  EXPECT_EQ(children[0], nullptr);
  EXPECT_EQ(children[1], nullptr);
  // No child was made: the parent releases at once.
  release(parent);
}

// Every child is checked against every earlier one, not only its neighbour:
// here the first and the third overlap while each adjacent pair is disjoint.
TEST_F(Claims, NonAdjacentOverlappingChildrenAreAConflict) {
  rootspan_claim *parent = claim(root_, 0, 128, ROOTSPAN_CLAIM_EXCLUSIVE);
  const rootspan_range ranges[] = {{0, 32}, {64, 32}, {16, 8}};
  rootspan_claim *children[3] = {};
  Err e;
  ASSERT_EQ(rootspan_claim_split(parent, ranges, 3, children, e.out()), ROOTSPAN_ERR_CONFLICT);
  EXPECT_EQ(e.operation(), "claim_split");
  EXPECT_EQ(e.cause(), "child 2 [16,24) overlaps child 0 [0,32)");
  for (rootspan_claim *c : children) EXPECT_EQ(c, nullptr);
  release(parent);
}

TEST_F(Claims, EmptyChildrenOverlapNothing) {
  rootspan_claim *parent = claim(root_, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  const rootspan_range ranges[] = {{0, 64}, {32, 0}, {32, 0}};
  rootspan_claim *children[3] = {};
  Err e;
  ASSERT_EQ(rootspan_claim_split(parent, ranges, 3, children, e.out()), ROOTSPAN_OK) << e.message();
  for (rootspan_claim *c : children) release(c);
  release(parent);
}

TEST_F(Claims, ChildrenOutsideTheParentAreOutsideRootExtent) {
  rootspan_claim *parent = claim(root_, 32, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_claim *children[2] = {};
  Err e;
  // Inside the root, past the parent's end.
  const rootspan_range past_parent[] = {{0, 16}, {48, 32}};
  ASSERT_EQ(rootspan_claim_split(parent, past_parent, 2, children, e.out()), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  EXPECT_EQ(e.message(), root_request("claim_split", root_, 32, 96) +
                             ": resolved to span [32,96): child 1 [80,112) lies outside the parent exclusive claim "
                             "[32,96)");
  // Past the root itself: refused as a span.
  const rootspan_range past_root[] = {{80, 32}};
  ASSERT_EQ(rootspan_claim_split(parent, past_root, 1, children, e.out()), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  EXPECT_EQ(e.message(), root_request("claim_split", root_, 112, 144) +
                             ": unresolved: range ends at 144, past the root's length 128");
  // An overflowing child offset.
  const rootspan_range overflowing[] = {{UINT64_MAX - 8, 1}};
  ASSERT_EQ(rootspan_claim_split(parent, overflowing, 1, children, e.out()), ROOTSPAN_ERR_OFFSET_OVERFLOW);
  EXPECT_EQ(e.cause(), "child 0 offset overflows 64 bits");
  EXPECT_EQ(children[0], nullptr);
  release(parent);
}

TEST_F(Claims, ASharedClaimCannotBeSplit) {
  rootspan_claim *parent = claim(root_, 0, 64, ROOTSPAN_CLAIM_SHARED);
  const rootspan_range ranges[] = {{0, 32}, {32, 32}};
  rootspan_claim *children[2] = {};
  Err e;
  ASSERT_EQ(rootspan_claim_split(parent, ranges, 2, children, e.out()), ROOTSPAN_ERR_CONFLICT);
  EXPECT_EQ(e.message(), root_request("claim_split", root_, 0, 64) +
                             ": resolved to span [0,64): only an exclusive claim can be split; the parent is a shared "
                             "claim [0,64)");
  release(parent);
}

TEST_F(Claims, AMappedParentCannotBeSplit) {
  rootspan_claim *parent = claim(root_, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_mapping *m = nullptr;
  Err e;
  ASSERT_EQ(rootspan_map_read(parent, ROOTSPAN_DTYPE_NONE, 0, 64, &m, e.out()), ROOTSPAN_OK);
  const rootspan_range ranges[] = {{0, 32}};
  rootspan_claim *child = nullptr;
  ASSERT_EQ(rootspan_claim_split(parent, ranges, 1, &child, e.out()), ROOTSPAN_ERR_BUSY);
  rootspan_unmap(m);
  ASSERT_EQ(rootspan_claim_split(parent, ranges, 1, &child, e.out()), ROOTSPAN_OK) << e.message();
  release(child);
  release(parent);
}

}  // namespace
