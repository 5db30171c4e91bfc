// Copies between host memory and a claim (rootspan.h, docs/concepts.md): through
// the host provider's mapping path when the provider has no copy hook, and
// through a provider's copy hooks (the simulated device). copy_from_host
// needs an exclusive claim on a writable root; ranges stay inside the claim.
#include <cstring>
#include <numeric>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace rootspan::testing;

class Copy : public CoreTest {};

TEST_F(Copy, HostRoundTripThroughTheMappingPath) {
  rootspan_root *root = allocate("host", 256);
  rootspan_claim *c = claim(root, 64, 128, ROOTSPAN_CLAIM_EXCLUSIVE);
  std::vector<unsigned char> in(32);
  std::iota(in.begin(), in.end(), 100);
  Err e;
  ASSERT_EQ(rootspan_copy_from_host(c, 16, in.data(), in.size(), e.out()), ROOTSPAN_OK) << e.message();
  std::vector<unsigned char> out(32, 0);
  ASSERT_EQ(rootspan_copy_to_host(c, 16, out.data(), out.size(), e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(in, out);
  // Zero-length copies are fine, even with NULL buffers.
  EXPECT_EQ(rootspan_copy_from_host(c, 128, nullptr, 0, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(rootspan_copy_to_host(c, 0, nullptr, 0, e.out()), ROOTSPAN_OK) << e.message();
  release(c);
  // The bytes are at root offset 80, seen through a plain mapping.
  c = claim(root, 0, 256, ROOTSPAN_CLAIM_SHARED);
  rootspan_mapping *m = nullptr;
  ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_NONE, 0, 256, &m, e.out()), ROOTSPAN_OK);
  EXPECT_EQ(std::memcmp(static_cast<unsigned char *>(rootspan_mapping_data(m)) + 80, in.data(), 32), 0);
  rootspan_unmap(m);
  // copy_to_host works on a shared claim.
  std::vector<unsigned char> again(32);
  ASSERT_EQ(rootspan_copy_to_host(c, 80, again.data(), again.size(), e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(again, in);
  release(c);
  release(root);
}

TEST_F(Copy, ThroughAProvidersMappingHooks) {
  add(test_provider_entry);
  rootspan_root *root = allocate("test", 64);
  rootspan_claim *c = claim(root, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  const char text[] = "mapped copy";
  Err e;
  ASSERT_EQ(rootspan_copy_from_host(c, 3, text, sizeof text, e.out()), ROOTSPAN_OK) << e.message();
  char out[sizeof text] = {};
  ASSERT_EQ(rootspan_copy_to_host(c, 3, out, sizeof out, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_STREQ(out, text);
  EXPECT_EQ(counters().map.load(), 2);
  EXPECT_EQ(counters().unmap.load(), 2) << "each copy unmaps what it mapped";
  // The checks of the mapping path apply: a wrong-length mapping fails the copy.
  behaviour().map_length_delta = 1;
  ASSERT_EQ(rootspan_copy_to_host(c, 0, out, 8, e.out()), ROOTSPAN_ERR_LENGTH_MISMATCH);
  EXPECT_EQ(e.operation(), "copy_to_host");
  EXPECT_EQ(e.cause(), "provider 'test' mapped 9 bytes for a span of 8");
  EXPECT_EQ(counters().unmap.load(), 3);
  release(c);
  release(root);
}

TEST_F(Copy, TheMappingPathNeedsAnExclusiveClaimToWrite) {
  rootspan_root *root = allocate("host", 64);
  rootspan_claim *c = claim(root, 0, 64, ROOTSPAN_CLAIM_SHARED);
  const std::uint64_t value = 7;
  Err e;
  ASSERT_EQ(rootspan_copy_from_host(c, 0, &value, sizeof value, e.out()), ROOTSPAN_ERR_READ_ONLY);
  EXPECT_EQ(e.operation(), "copy_from_host");
  EXPECT_EQ(e.message(), root_request("copy_from_host", root, 0, 8) +
                             ": unresolved: map_write needs an exclusive claim; this one is shared");
  release(c);
  release(root);
}

TEST_F(Copy, TheMappingPathStaysInsideTheClaim) {
  rootspan_root *root = allocate("host", 128);
  rootspan_claim *c = claim(root, 32, 32, ROOTSPAN_CLAIM_EXCLUSIVE);
  std::vector<unsigned char> buffer(64);
  Err e;
  ASSERT_EQ(rootspan_copy_to_host(c, 16, buffer.data(), 32, e.out()), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  EXPECT_EQ(e.operation(), "copy_to_host");
  EXPECT_EQ(e.message(),
            root_request("copy_to_host", root, 48, 80) + ": unresolved: range ends at 48, past the claim's length 32");
  ASSERT_EQ(rootspan_copy_from_host(c, 0, buffer.data(), 33, e.out()), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  ASSERT_EQ(rootspan_copy_from_host(c, 0, nullptr, 4, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e.message(), "copy_from_host: claim or source is NULL");
  ASSERT_EQ(rootspan_copy_to_host(c, 0, nullptr, 4, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e.message(), "copy_to_host: claim or destination is NULL");
  ASSERT_EQ(rootspan_copy_to_host(nullptr, 0, buffer.data(), 4, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  release(c);
  release(root);
}

TEST_F(Copy, TypedHostRootsCanBeCopied) {
  // Regression test for a bug once in core/copy.cpp.
  std::vector<float> values = {1.f, 2.f, 3.f, 4.f};
  rootspan_host_import import = host_import(values.data(), 16, alignof(float), ROOTSPAN_DTYPE_F32);
  rootspan_root *root = nullptr;
  Err e;
  ASSERT_EQ(rootspan_root_import_host(context_, &import, &root, e.out()), ROOTSPAN_OK) << e.message();
  rootspan_claim *c = claim(root, 0, 16, ROOTSPAN_CLAIM_EXCLUSIVE);
  float out[2] = {};
  EXPECT_EQ(rootspan_copy_to_host(c, 4, out, sizeof out, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(out[0], 2.f);
  EXPECT_EQ(out[1], 3.f);
  const float nine = 9.f;
  EXPECT_EQ(rootspan_copy_from_host(c, 12, &nine, sizeof nine, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(values[3], 9.f);
  release(c);
  release(root);
}

// ---- through a provider's copy hooks ---------------------------------------------

class HookCopy : public CoreTest {
 protected:
  void SetUp() override {
    CoreTest::SetUp();
    add(device_sim_entry);
    rootspan_allocate_options o = allocate_options("device-sim", 256);
    o.memory_kind = ROOTSPAN_MEMORY_DEVICE;
    Err e;
    ASSERT_EQ(rootspan_root_allocate(context_, &o, &root_, e.out()), ROOTSPAN_OK) << e.message();
  }
  void TearDown() override {
    release(root_);
    CoreTest::TearDown();
  }
  rootspan_root *root_ = nullptr;
};

TEST_F(HookCopy, RoundTripThroughTheCopyHooks) {
  rootspan_claim *c = claim(root_, 128, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  std::vector<unsigned char> in(48);
  std::iota(in.begin(), in.end(), 1);
  Err e;
  ASSERT_EQ(rootspan_copy_from_host(c, 8, in.data(), in.size(), e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(counters().copy_from.load(), 1);
  std::vector<unsigned char> out(48);
  ASSERT_EQ(rootspan_copy_to_host(c, 8, out.data(), out.size(), e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(counters().copy_to.load(), 1);
  EXPECT_EQ(in, out);
  EXPECT_EQ(counters().map.load(), 0) << "a provider with copy hooks is not mapped";
  release(c);
  // A shared claim reads through the hook too, at absolute offsets.
  c = claim(root_, 0, 256, ROOTSPAN_CLAIM_SHARED);
  std::vector<unsigned char> all(256);
  ASSERT_EQ(rootspan_copy_to_host(c, 0, all.data(), all.size(), e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(all[135], 0);
  EXPECT_EQ(all[136], 1);
  EXPECT_EQ(all[183], 48);
  EXPECT_EQ(all[184], 0);
  release(c);
}

TEST_F(HookCopy, CopyFromHostNeedsAnExclusiveClaim) {
  rootspan_claim *c = claim(root_, 0, 64, ROOTSPAN_CLAIM_SHARED);
  const int value = 1;
  Err e;
  ASSERT_EQ(rootspan_copy_from_host(c, 0, &value, sizeof value, e.out()), ROOTSPAN_ERR_READ_ONLY);
  EXPECT_EQ(e.message(), root_request("copy_from_host", root_, 0, 4) +
                             ": resolved to span [0,64): copy_from_host needs an exclusive claim on a writable root");
  EXPECT_EQ(counters().copy_from.load(), 0);
  release(c);
}

TEST_F(HookCopy, RangesStayInsideTheClaim) {
  rootspan_claim *c = claim(root_, 64, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  std::vector<unsigned char> buffer(128);
  Err e;
  ASSERT_EQ(rootspan_copy_from_host(c, 60, buffer.data(), 8, e.out()), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  EXPECT_EQ(e.message(), root_request("copy_from_host", root_, 124, 132) +
                             ": resolved to span [64,128): copy range leaves the claim of 64 bytes");
  std::uint64_t expected = 0, actual = 0;
  ASSERT_TRUE(e.values(&expected, &actual));
  EXPECT_EQ(expected, 64u);
  EXPECT_EQ(actual, 68u);
  ASSERT_EQ(rootspan_copy_to_host(c, 1, buffer.data(), UINT64_MAX, e.out()), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  EXPECT_EQ(e.operation(), "copy_to_host");
  EXPECT_EQ(counters().copy_from.load() + counters().copy_to.load(), 0);
  release(c);
}

TEST_F(HookCopy, AFailingCopyHookPassesItsMessage) {
  behaviour().copy_status = ROOTSPAN_ERR_IO;
  behaviour().copy_message = "DMA engine hung";
  rootspan_claim *c = claim(root_, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  std::vector<unsigned char> buffer(16);
  Err e;
  ASSERT_EQ(rootspan_copy_to_host(c, 0, buffer.data(), 16, e.out()), ROOTSPAN_ERR_PROVIDER_FAILURE);
  EXPECT_EQ(e.message(),
            root_request("copy_to_host", root_, 0, 16) +
                ": resolved to span [0,64): provider 'device-sim' copy_to_host failed (Io): DMA engine hung");
  release(c);
}

TEST_F(HookCopy, ASplitParentCannotBeWrittenThroughTheCopyHooks) {
  // Regression test for a bug once in core/copy.cpp.
  rootspan_claim *parent = claim(root_, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  const rootspan_range ranges[] = {{0, 32}, {32, 32}};
  rootspan_claim *children[2] = {};
  Err e;
  ASSERT_EQ(rootspan_claim_split(parent, ranges, 2, children, e.out()), ROOTSPAN_OK) << e.message();
  const char text[] = "over the children";
  EXPECT_EQ(rootspan_copy_from_host(parent, 0, text, sizeof text, e.out()), ROOTSPAN_ERR_BUSY) << e.message();
  EXPECT_EQ(counters().copy_from.load(), 0) << "the provider was asked to write into memory the children own";
  release(children[0]);
  release(children[1]);
  release(parent);
}

TEST_F(Copy, AProviderWithNeitherCopyHooksNorMappingsIsUnsupported) {
  add(nomap_entry);
  rootspan_root *root = allocate("nomap", 32);
  rootspan_claim *c = claim(root, 0, 32, ROOTSPAN_CLAIM_EXCLUSIVE);
  char buffer[8] = {};
  Err e;
  ASSERT_EQ(rootspan_copy_to_host(c, 0, buffer, 8, e.out()), ROOTSPAN_ERR_UNSUPPORTED);
  EXPECT_EQ(e.operation(), "copy_to_host");
  EXPECT_EQ(e.cause(), "provider 'nomap' has no host access for map_read");
  ASSERT_EQ(rootspan_copy_from_host(c, 0, buffer, 8, e.out()), ROOTSPAN_ERR_UNSUPPORTED);
  EXPECT_EQ(e.cause(), "provider 'nomap' has no host access for map_write");
  release(c);
  release(root);
}

}  // namespace
