// docs/concepts.md Root id: fresh, never reused, non-zero, from one process-wide
// counter shared by every context; exhaustion is RootIdExhausted, never a
// wrap; two roots over the same memory get different ids.
#include <limits>
#include <set>
#include <vector>

#include "core/extent.hpp"
#include "test_support.hpp"

namespace {

using namespace rootspan::testing;
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

// Remembers where the process-wide counter stood and, at the end, moves it
// back just above that (past the few ids a test hands out after calling
// restore()), so that later tests keep getting fresh, never reused ids.
class RestoreRootIds {
 public:
  RestoreRootIds() {
    auto id = rootspan::next_root_id();  // spends one id to learn the counter
    EXPECT_TRUE(id);
    fresh_ = id ? id.value() + 1 : std::uint64_t{1} << 48;
  }
  ~RestoreRootIds() { rootspan::testing::set_next_root_id(fresh_ + 1024); }
  // Moves the counter to the first id after the remembered one and returns it.
  std::uint64_t restore() {
    rootspan::testing::set_next_root_id(fresh_);
    return fresh_;
  }

 private:
  std::uint64_t fresh_ = 0;
};

class RootIds : public CoreTest {};

TEST_F(RootIds, EveryRootGetsAFreshNonZeroIncreasingId) {
  std::vector<rootspan_root *> roots;
  std::set<std::uint64_t> ids;
  std::uint64_t last = 0;
  for (int i = 0; i < 8; ++i) {
    roots.push_back(allocate("host", 64));
    ASSERT_NE(roots.back(), nullptr);
    const std::uint64_t id = info_of(roots.back()).root_id;
    EXPECT_NE(id, 0u);
    EXPECT_GT(id, last);
    EXPECT_TRUE(ids.insert(id).second) << "id " << id << " handed out twice";
    last = id;
  }
  // Released ids are never reused.
  for (rootspan_root *r : roots) release(r);
  for (int i = 0; i < 4; ++i) {
    rootspan_root *r = allocate("host", 64);
    ASSERT_NE(r, nullptr);
    const std::uint64_t id = info_of(r).root_id;
    EXPECT_GT(id, last);
    EXPECT_EQ(ids.count(id), 0u);
    last = id;
    release(r);
  }
}

TEST_F(RootIds, TwoRootsOverTheSameMemoryGetDifferentIds) {
  alignas(64) static unsigned char buffer[256];
  rootspan_host_import import = host_import(buffer, sizeof buffer, 64);
  rootspan_root *a = nullptr;
  rootspan_root *b = nullptr;
  Err e;
  ASSERT_EQ(rootspan_root_import_host(context_, &import, &a, e.out()), ROOTSPAN_OK) << e.message();
  ASSERT_EQ(rootspan_root_import_host(context_, &import, &b, e.out()), ROOTSPAN_OK) << e.message();
  const rootspan_root_info ia = info_of(a);
  const rootspan_root_info ib = info_of(b);
  EXPECT_NE(ia.root_id, ib.root_id);
  EXPECT_NE(ia.root_id, 0u);
  EXPECT_NE(ib.root_id, 0u);
  // Same extent, different identity: the host provider gives each a key.
  EXPECT_EQ(ia.byte_length, ib.byte_length);
  EXPECT_EQ(ia.key.domain, ib.key.domain);
  EXPECT_NE(ia.key.local, ib.key.local);
  // Claims on one do not see claims on the other: spans of different roots never overlap.
  rootspan_claim *ca = claim(a, 0, 256, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_claim *cb = claim(b, 0, 256, ROOTSPAN_CLAIM_EXCLUSIVE);
  ASSERT_NE(ca, nullptr);
  ASSERT_NE(cb, nullptr);
  release(ca);
  release(cb);
  release(a);
  release(b);
}

TEST_F(RootIds, ContextsShareTheProcessWideCounter) {
  rootspan_context *other = nullptr;
  Err e;
  ASSERT_EQ(rootspan_context_create(nullptr, &other, e.out()), ROOTSPAN_OK) << e.message();
  rootspan_root *a = allocate("host", 16);
  rootspan_allocate_options o = allocate_options("host", 16);
  rootspan_root *b = nullptr;
  ASSERT_EQ(rootspan_root_allocate(other, &o, &b, e.out()), ROOTSPAN_OK) << e.message();
  rootspan_root *c = allocate("host", 16);
  const std::uint64_t ia = info_of(a).root_id, ib = info_of(b).root_id, ic = info_of(c).root_id;
  EXPECT_LT(ia, ib);
  EXPECT_LT(ib, ic);
  // Keys of different contexts never collide either: the domains differ.
  EXPECT_NE(info_of(a).key.domain, info_of(b).key.domain);
  std::uint64_t live = 0;
  EXPECT_EQ(rootspan_context_destroy(other, &live), ROOTSPAN_OK);
  EXPECT_EQ(live, 1u);
  release(a);
  release(c);
}

TEST_F(RootIds, ExhaustionIsAnErrorAndNeverWraps) {
  RestoreRootIds restore;
  add(test_provider_entry);
  const std::uint64_t domain = granted_domain("test");

  rootspan::testing::set_next_root_id(kMax - 1);
  rootspan_root *last = allocate("test", 64);  // gets the last id there is
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(info_of(last).root_id, kMax - 1);

  for (int attempt = 0; attempt < 3; ++attempt) {  // stays exhausted: no wrap to 0 or 1
    SCOPED_TRACE(attempt);
    const int released = counters().release;
    rootspan_allocate_options o = allocate_options("test", 64);
    rootspan_root *root = nullptr;
    Err e;
    ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_ERR_ROOT_ID_EXHAUSTED) << e.message();
    EXPECT_EQ(root, nullptr);
    EXPECT_EQ(e.code(), ROOTSPAN_ERR_ROOT_ID_EXHAUSTED);
    EXPECT_EQ(e.operation(), "root_allocate");
    EXPECT_EQ(e.cause(), "the process-wide root id counter is exhausted; ids are never reused");
    const std::string key = "(" + str(domain) + "," + str(2 + attempt) + ")";
    EXPECT_EQ(e.message(), "root_allocate for key " + key +
                               " range [0,64): unresolved: L9: the process-wide root id counter is exhausted; ids "
                               "are never reused");
    EXPECT_EQ(counters().release - released, 1) << "the provider allocation is released exactly once";
  }

  // A host import with a deleter: the deleter runs exactly once on the failure.
  alignas(64) static unsigned char buffer[64];
  int deleted = 0;
  rootspan_host_import import = host_import(buffer, sizeof buffer, 64, ROOTSPAN_DTYPE_NONE, &deleted);
  rootspan_root *root = nullptr;
  Err e;
  ASSERT_EQ(rootspan_root_import_host(context_, &import, &root, e.out()), ROOTSPAN_ERR_ROOT_ID_EXHAUSTED);
  EXPECT_EQ(deleted, 1);

  // Another context shares the counter: exhausted there too.
  rootspan_context *other = nullptr;
  ASSERT_EQ(rootspan_context_create(nullptr, &other, e.out()), ROOTSPAN_OK);
  rootspan_allocate_options o = allocate_options("host", 8);
  EXPECT_EQ(rootspan_root_allocate(other, &o, &root, e.out()), ROOTSPAN_ERR_ROOT_ID_EXHAUSTED);
  EXPECT_EQ(rootspan_context_destroy(other, nullptr), ROOTSPAN_OK);

  // The root that got the last id is still a working root.
  rootspan_claim *c = claim(last, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  ASSERT_NE(c, nullptr);
  release(c);
  release(last);

  // Moving the counter back (a test-only hook) makes imports work again.
  const std::uint64_t next = restore.restore();
  rootspan_root *again = allocate("test", 64);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(info_of(again).root_id, next);
  release(again);
}

TEST(RootIdCounter, NextRootIdRefusesAtTheEnd) {
  RestoreRootIds restore;
  rootspan::testing::set_next_root_id(kMax - 2);
  auto a = rootspan::next_root_id();
  auto b = rootspan::next_root_id();
  auto c = rootspan::next_root_id();
  auto d = rootspan::next_root_id();
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  EXPECT_EQ(a.value(), kMax - 2);
  EXPECT_EQ(b.value(), kMax - 1);
  ASSERT_FALSE(c);
  ASSERT_FALSE(d);
  EXPECT_EQ(c.error()->code, ROOTSPAN_ERR_ROOT_ID_EXHAUSTED);
  EXPECT_EQ(d.error()->code, ROOTSPAN_ERR_ROOT_ID_EXHAUSTED);
}

}  // namespace
