// docs/concepts.md Release: Busy while claims live (nothing changes, the root
// stays valid and usable); the provider's release hook runs exactly once;
// destroying a context releases the remaining roots, each once, shuts the
// providers down, and reports how many were live.
#include <cstring>

#include "test_support.hpp"

namespace {

using namespace rootspan::testing;

class Release : public CoreTest {
 protected:
  void SetUp() override {
    CoreTest::SetUp();
    add(test_provider_entry);
  }
};

TEST_F(Release, BusyWhileAClaimLivesAndTheRootStaysUsable) {
  rootspan_root *root = allocate("test", 256);
  ASSERT_NE(root, nullptr);
  // Put something in it first.
  rootspan_claim *writer = claim(root, 0, 256, ROOTSPAN_CLAIM_EXCLUSIVE);
  const char text[] = "still here";
  Err e;
  ASSERT_EQ(rootspan_copy_from_host(writer, 100, text, sizeof text, e.out()), ROOTSPAN_OK) << e.message();
  release(writer);

  rootspan_claim *c = claim(root, 0, 64, ROOTSPAN_CLAIM_SHARED);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(rootspan_root_release(root, e.out()), ROOTSPAN_ERR_BUSY);
  EXPECT_EQ(e.code(), ROOTSPAN_ERR_BUSY);
  EXPECT_EQ(e.operation(), "root_release");
  EXPECT_EQ(e.cause(), "1 claims are live, the first: shared claim [0,64); the root stays valid");
  EXPECT_EQ(e.message(), root_request("root_release", root, 0, 256) +
                             ": unresolved: 1 claims are live, the first: shared claim [0,64); the root stays valid");
  std::uint64_t expected = 1, actual = 0;
  ASSERT_TRUE(e.values(&expected, &actual));
  EXPECT_EQ(expected, 0u);
  EXPECT_EQ(actual, 1u);
  const rootspan_requested r = e.requested();
  EXPECT_EQ(r.kind, ROOTSPAN_REQUESTED_ROOT_KEY_RANGE);
  EXPECT_EQ(r.root_id, info_of(root).root_id);
  EXPECT_EQ(counters().release.load(), 0) << "a Busy release must not reach the provider";

  // Nothing was lost: the root still answers, claims, maps and reads.
  EXPECT_EQ(info_of(root).byte_length, 256u);
  rootspan_claim *more = claim(root, 64, 192, ROOTSPAN_CLAIM_SHARED);
  ASSERT_NE(more, nullptr);
  char back[sizeof text] = {};
  ASSERT_EQ(rootspan_copy_to_host(more, 36, back, sizeof back, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_STREQ(back, text);
  // Two claims: the count says so.
  ASSERT_EQ(rootspan_root_release(root, e.out()), ROOTSPAN_ERR_BUSY);
  EXPECT_EQ(e.cause(), "2 claims are live, the first: shared claim [0,64); the root stays valid");
  release(c);
  ASSERT_EQ(rootspan_root_release(root, e.out()), ROOTSPAN_ERR_BUSY);
  EXPECT_EQ(e.cause(), "1 claims are live, the first: shared claim [64,256); the root stays valid");
  release(more);
  release(root);
  EXPECT_EQ(counters().release.load(), 1);
}

TEST_F(Release, BusyWhileAnExclusiveClaimIsMapped) {
  rootspan_root *root = allocate("test", 64);
  rootspan_claim *c = claim(root, 8, 16, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_mapping *m = nullptr;
  Err e;
  ASSERT_EQ(rootspan_map_write(c, ROOTSPAN_DTYPE_NONE, 0, 16, &m, e.out()), ROOTSPAN_OK) << e.message();
  ASSERT_EQ(rootspan_root_release(root, e.out()), ROOTSPAN_ERR_BUSY);
  // (The core's text reads "the first a exclusive claim"; only the claim is pinned here.)
  EXPECT_NE(e.cause().find("exclusive claim [8,24); the root stays valid"), std::string::npos) << e.cause();
  EXPECT_EQ(rootspan_unmap(m), ROOTSPAN_OK);
  release(c);
  release(root);
}

TEST_F(Release, TheReleaseHookRunsExactlyOncePerRoot) {
  rootspan_root *roots[3];
  for (auto &r : roots) {
    r = allocate("test", 32);
    ASSERT_NE(r, nullptr);
  }
  EXPECT_EQ(live_blocks(), 3);
  for (int i = 0; i < 3; ++i) {
    release(roots[i]);
    EXPECT_EQ(counters().release.load(), i + 1);
    EXPECT_EQ(live_blocks(), 2 - i);
  }
  // The context has nothing left to release.
  EXPECT_EQ(destroy_context(), 0u);
  EXPECT_EQ(counters().release.load(), 3);
  EXPECT_EQ(counters().double_release.load(), 0);
  EXPECT_EQ(counters().shutdown.load(), 1);
}

TEST_F(Release, ReleaseOfNothingIsInvalidArgument) {
  Err e;
  EXPECT_EQ(rootspan_root_release(nullptr, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e.message(), "root_release: root is NULL");
  EXPECT_EQ(e.operation(), "root_release");
  // A NULL error pointer is allowed: only the status comes back.
  EXPECT_EQ(rootspan_root_release(nullptr, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
}

TEST_F(Release, ContextDestroyReleasesTheRemainingRootsAndReportsTheCount) {
  rootspan_root *a = allocate("test", 32);
  rootspan_root *b = allocate("test", 32);
  rootspan_root *c = allocate("test", 32);
  rootspan_root *h = allocate("host", 32);
  alignas(64) static unsigned char buffer[64];
  int deleted = 0;
  rootspan_host_import import = host_import(buffer, 64, 64, ROOTSPAN_DTYPE_NONE, &deleted);
  rootspan_root *imported = nullptr;
  Err e;
  ASSERT_EQ(rootspan_root_import_host(context_, &import, &imported, e.out()), ROOTSPAN_OK) << e.message();
  ASSERT_TRUE(a && b && c && h);
  release(b);
  EXPECT_EQ(counters().release.load(), 1);
  // Leave a claim and a mapping on one of them: destroy still releases it.
  rootspan_claim *held = claim(a, 0, 32, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_mapping *m = nullptr;
  ASSERT_EQ(rootspan_map_read(held, ROOTSPAN_DTYPE_NONE, 0, 32, &m, e.out()), ROOTSPAN_OK) << e.message();

  EXPECT_EQ(destroy_context(), 4u);  // a, c, h, imported
  EXPECT_EQ(counters().release.load(), 3) << "each remaining test root released exactly once";
  EXPECT_EQ(counters().double_release.load(), 0);
  EXPECT_EQ(live_blocks(), 0);
  EXPECT_EQ(deleted, 1);
  EXPECT_EQ(counters().shutdown.load(), 1) << "the provider is shut down after its roots";
}

TEST_F(Release, AnEmptyContextReportsZero) {
  rootspan_context *other = nullptr;
  Err e;
  ASSERT_EQ(rootspan_context_create(nullptr, &other, e.out()), ROOTSPAN_OK);
  std::uint64_t live = 99;
  EXPECT_EQ(rootspan_context_destroy(other, &live), ROOTSPAN_OK);
  EXPECT_EQ(live, 0u);
  EXPECT_EQ(rootspan_context_destroy(nullptr, &live), ROOTSPAN_ERR_INVALID_ARGUMENT);
}

TEST_F(Release, ClaimsOnDifferentRootsDoNotHoldEachOtherUp) {
  rootspan_root *a = allocate("test", 32);
  rootspan_root *b = allocate("test", 32);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  rootspan_claim *c = claim(a, 0, 32, ROOTSPAN_CLAIM_EXCLUSIVE);
  ASSERT_NE(c, nullptr);
  // The same range of the other root is free, even exclusively.
  rootspan_claim *on_b = claim(b, 0, 32, ROOTSPAN_CLAIM_EXCLUSIVE);
  ASSERT_NE(on_b, nullptr);
  release(on_b);
  // a's claim holds a up, and only a.
  Err e;
  ASSERT_EQ(rootspan_root_release(a, e.out()), ROOTSPAN_ERR_BUSY);
  EXPECT_EQ(e.cause(), "1 claims are live, the first: exclusive claim [0,32); the root stays valid");
  ASSERT_EQ(rootspan_root_release(b, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(counters().release.load(), 1) << "b reached its provider's release hook";
  release(c);
  release(a);
  EXPECT_EQ(counters().release.load(), 2);
}

}  // namespace
