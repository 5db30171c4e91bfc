// docs/concepts.md Device access: the request is checked in order (key equals the
// root's; byte length within the extent; element size non-zero; for exclusive
// access, no element written twice) -> InvalidRequest; then the provider
// prepares it and returns device pointer, ordinal and stream. Roots of
// providers without device access (the host provider) answer Unsupported.
// The device is simulated in-process (test_providers: "device-sim", with
// prepare/release hooks and no map hooks).
#include <cstring>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace rootspan::testing;

class DeviceAccess : public CoreTest {
 protected:
  void SetUp() override {
    CoreTest::SetUp();
    behaviour().device_count = 2;
    add(device_sim_entry);
    rootspan_allocate_options o = allocate_options("device-sim", 256);
    o.memory_kind = ROOTSPAN_MEMORY_DEVICE;
    o.device = 1;
    Err e;
    ASSERT_EQ(rootspan_root_allocate(context_, &o, &root_, e.out()), ROOTSPAN_OK) << e.message();
    key_ = info_of(root_).key;
  }
  void TearDown() override {
    if (root_ != nullptr) release(root_);
    CoreTest::TearDown();
  }

  // A request over the whole root as 64 floats, contiguous.
  rootspan_device_access_request request() {
    rootspan_device_access_request r{};
    r.struct_size = sizeof r;
    r.key = key_;
    r.byte_length = 256;
    r.element_size = 4;
    r.element_offset = 0;
    r.rank = static_cast<std::uint32_t>(shape_.size());
    r.shape = shape_.data();
    r.strides = strides_.data();
    return r;
  }
  rootspan_device_access access_out() {
    rootspan_device_access a{};
    a.struct_size = sizeof a;
    return a;
  }
  rootspan_status prepare(rootspan_claim *c, const rootspan_device_access_request &r, rootspan_device_access &a,
                          Err &e) {
    return rootspan_device_access_prepare(c, &r, &a, e.out());
  }
  // Expects InvalidRequest with `cause` for a request on a claim of the whole root.
  void expect_invalid(rootspan_claim *c, const rootspan_device_access_request &r, const std::string &cause) {
    rootspan_device_access a = access_out();
    Err e;
    ASSERT_EQ(prepare(c, r, a, e), ROOTSPAN_ERR_INVALID_REQUEST) << e.message();
    EXPECT_EQ(e.code(), ROOTSPAN_ERR_INVALID_REQUEST);
    EXPECT_EQ(e.operation(), "device_access_prepare");
    EXPECT_EQ(e.cause(), cause);
    rootspan_span span{};
    ASSERT_TRUE(e.resolution(&span));
    const rootspan_requested q = e.requested();
    EXPECT_EQ(q.kind, ROOTSPAN_REQUESTED_ROOT_KEY_RANGE);
    EXPECT_EQ(q.root_id, info_of(root_).root_id);
    EXPECT_EQ(e.message(), "device_access_prepare for root " + str(q.root_id) + " key " + key_text(r.key) + " range " +
                               range_text(q.offset, q.offset + r.byte_length) + ": resolved to span " +
                               range_text(span.offset, span.offset + span.length) + ": " + cause);
    EXPECT_EQ(counters().prepare.load(), 0) << "an invalid request must not reach the provider";
  }

  rootspan_root *root_ = nullptr;
  rootspan_key key_{};
  std::vector<std::uint64_t> shape_{64};
  std::vector<std::int64_t> strides_{1};
};

TEST_F(DeviceAccess, TheSimulatedDeviceReturnsPointerOrdinalAndStream) {
  const rootspan_root_info info = info_of(root_);
  EXPECT_EQ(info.host_accessible, 0);
  EXPECT_EQ(info.device, 1u);
  EXPECT_STREQ(info.provider, "device-sim");
  rootspan_claim *c = claim(root_, 64, 128, ROOTSPAN_CLAIM_EXCLUSIVE);
  shape_ = {4, 8};
  strides_ = {8, 1};
  rootspan_device_access_request r = request();
  r.byte_length = 128;
  r.element_offset = 0;
  rootspan_device_access a = access_out();
  Err e;
  ASSERT_EQ(prepare(c, r, a, e), ROOTSPAN_OK) << e.message();
  EXPECT_NE(a.device_ptr, nullptr);
  EXPECT_EQ(a.device_ordinal, 1u);
  EXPECT_EQ(a.stream, behaviour().stream);
  EXPECT_EQ(a.provider_token, reinterpret_cast<void *>(std::uintptr_t{0xacce55}));
  EXPECT_EQ(a.struct_size, sizeof a);
  EXPECT_EQ(counters().prepare.load(), 1);
  EXPECT_EQ(counters().last_prepare_byte_offset.load(), 64u) << "the provider gets where the claim starts";

  // The access holds the claim.
  ASSERT_EQ(rootspan_claim_release(c, e.out()), ROOTSPAN_ERR_BUSY);
  EXPECT_EQ(e.cause(), "exclusive claim [64,192) still has 0 children, 0 mappings and 1 device accesses");
  // The device pointer points at the claim's first byte: copy something in
  // through the provider's copy hook and look at it through the pointer.
  const char text[] = "on the device";
  ASSERT_EQ(rootspan_copy_from_host(c, 0, text, sizeof text, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_STREQ(static_cast<const char *>(a.device_ptr), text);

  EXPECT_EQ(rootspan_device_access_release(c, &a), ROOTSPAN_OK);
  EXPECT_EQ(counters().release_access.load(), 1);
  EXPECT_EQ(rootspan_device_access_release(c, &a), ROOTSPAN_ERR_INVALID_ARGUMENT) << "nothing left to release";
  EXPECT_EQ(counters().release_access.load(), 1);
  release(c);
}

TEST_F(DeviceAccess, TheElementOffsetCountsFromTheClaim) {
  rootspan_claim *c = claim(root_, 32, 64, ROOTSPAN_CLAIM_SHARED);
  shape_ = {4};
  strides_ = {1};
  rootspan_device_access_request r = request();
  r.byte_length = 64;
  r.element_offset = 3;
  rootspan_device_access a = access_out();
  rootspan_device_access b = access_out();
  Err e;
  ASSERT_EQ(prepare(c, r, a, e), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(counters().last_prepare_element_offset.load(), 3u);
  // A second access on the same shared claim; its pointer is 12 bytes further.
  r.element_offset = 6;
  ASSERT_EQ(prepare(c, r, b, e), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(static_cast<char *>(b.device_ptr) - static_cast<char *>(a.device_ptr), 12);
  ASSERT_EQ(rootspan_claim_release(c, e.out()), ROOTSPAN_ERR_BUSY);
  EXPECT_EQ(e.cause(), "shared claim [32,96) still has 0 children, 0 mappings and 2 device accesses");
  // An access this claim did not prepare never reaches the provider.
  rootspan_device_access stranger = b;
  stranger.device_ptr = static_cast<char *>(b.device_ptr) + 1;
  EXPECT_EQ(rootspan_device_access_release(c, &stranger), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(counters().release_access.load(), 0);
  EXPECT_EQ(rootspan_device_access_release(c, &a), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_device_access_release(c, &b), ROOTSPAN_OK);
  EXPECT_EQ(counters().release_access.load(), 2);
  release(c);
}

TEST_F(DeviceAccess, AReaderStructBelowItsFirstVersionIsRefusedBeforeTheProvider) {
  rootspan_claim *c = claim(root_, 0, 256, ROOTSPAN_CLAIM_SHARED);
  rootspan_device_access a{};
  std::memset(&a, 0xCD, sizeof a);
  a.struct_size = offsetof(rootspan_device_access, stream);  // no published header ended there
  rootspan_device_access_request r = request();
  Err e;
  ASSERT_EQ(rootspan_device_access_prepare(c, &r, &a, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e.cause(), "access.struct_size 24 is below its first published size (rootspan_device_access: expected " +
                           std::to_string(ROOTSPAN_DEVICE_ACCESS_STRUCT_SIZE) + ", actual 24)");
  void *untouched = nullptr;
  std::memset(&untouched, 0xCD, sizeof untouched);
  EXPECT_EQ(a.device_ptr, untouched);
  EXPECT_EQ(counters().prepare.load(), 0);
  EXPECT_EQ(rootspan_device_access_release(c, &a), ROOTSPAN_ERR_INVALID_ARGUMENT);
  release(c);
}

TEST_F(DeviceAccess, AKeyMismatchIsInvalidRequest) {
  rootspan_claim *c = claim(root_, 0, 256, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_device_access_request r = request();
  r.key.local += 1;
  expect_invalid(c, r, "request key " + key_text(r.key) + " does not match the root's key " + key_text(key_));
  r = request();
  r.key.domain += 1;
  r.element_size = 0;  // bad too, but the key is checked first
  expect_invalid(c, r, "request key " + key_text(r.key) + " does not match the root's key " + key_text(key_));
  release(c);
}

TEST_F(DeviceAccess, AByteLengthBeyondTheExtentIsInvalidRequest) {
  rootspan_claim *c = claim(root_, 0, 256, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_device_access_request r = request();
  r.byte_length = 257;
  r.element_size = 0;  // bad too, but the length is checked first
  expect_invalid(c, r, "request of 257 bytes exceeds the root's extent of 256");
  rootspan_device_access a = access_out();
  Err e;
  ASSERT_EQ(prepare(c, r, a, e), ROOTSPAN_ERR_INVALID_REQUEST);
  std::uint64_t expected = 0, actual = 0;
  ASSERT_TRUE(e.values(&expected, &actual));
  EXPECT_EQ(expected, 256u);
  EXPECT_EQ(actual, 257u);
  release(c);
}

TEST_F(DeviceAccess, AZeroElementSizeIsInvalidRequest) {
  rootspan_claim *c = claim(root_, 0, 256, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_device_access_request r = request();
  r.element_size = 0;
  strides_ = {0};  // would alias too; the element size is checked first
  r.strides = strides_.data();
  expect_invalid(c, r, "element size is zero");
  rootspan_device_access a = access_out();
  Err e;
  ASSERT_EQ(prepare(c, r, a, e), ROOTSPAN_ERR_INVALID_REQUEST);
  std::uint64_t expected = 0, actual = 1;
  ASSERT_TRUE(e.values(&expected, &actual));
  EXPECT_EQ(expected, 1u);
  EXPECT_EQ(actual, 0u);
  release(c);
}

TEST_F(DeviceAccess, AliasingStridesAreRefusedForExclusiveAccessOnly) {
  const char *alias = "exclusive access needs a layout that writes no element twice; these strides alias";
  struct Layout {
    std::vector<std::uint64_t> shape;
    std::vector<std::int64_t> strides;
  };
  const Layout aliasing[] = {
      {{4}, {0}},         // broadcast
      {{2, 3}, {2, 1}},   // rows overlap by one element
      {{2, 2}, {1, 1}},   // a transposed copy of itself
      {{4, 4}, {-1, 1}},  // negative strides alias too
  };
  rootspan_claim *x = claim(root_, 0, 256, ROOTSPAN_CLAIM_EXCLUSIVE);
  for (const Layout &l : aliasing) {
    shape_ = l.shape;
    strides_ = l.strides;
    rootspan_device_access_request r = request();
    r.element_offset = 8;
    expect_invalid(x, r, alias);
  }
  // Layouts that write each element once are fine for exclusive access.
  const Layout distinct[] = {
      {{4, 8}, {8, 1}},  // row major
      {{4, 8}, {1, 4}},  // column major
      {{8}, {-1}},       // reversed
      {{4, 1}, {1, 0}},  // a stride over an extent of 1 never steps
      {{0, 3}, {0, 0}},  // an empty view writes nothing
      {{}, {}},          // a scalar
  };
  for (const Layout &l : distinct) {
    shape_ = l.shape;
    strides_ = l.strides;
    rootspan_device_access_request r = request();
    r.element_offset = 8;
    rootspan_device_access a = access_out();
    Err e;
    ASSERT_EQ(prepare(x, r, a, e), ROOTSPAN_OK) << e.message();
    EXPECT_EQ(rootspan_device_access_release(x, &a), ROOTSPAN_OK);
  }
  release(x);

  // The same aliasing layouts are fine under a shared claim (reads only).
  rootspan_claim *s = claim(root_, 0, 256, ROOTSPAN_CLAIM_SHARED);
  for (const Layout &l : aliasing) {
    shape_ = l.shape;
    strides_ = l.strides;
    rootspan_device_access_request r = request();
    r.element_offset = 8;
    rootspan_device_access a = access_out();
    Err e;
    ASSERT_EQ(prepare(s, r, a, e), ROOTSPAN_OK) << e.message();
    EXPECT_EQ(rootspan_device_access_release(s, &a), ROOTSPAN_OK);
  }
  release(s);
}

TEST_F(DeviceAccess, ALayoutLeavingTheClaimIsInvalidRequest) {
  rootspan_claim *c = claim(root_, 0, 64, ROOTSPAN_CLAIM_SHARED);
  shape_ = {17};
  strides_ = {1};
  rootspan_device_access_request r = request();
  r.byte_length = 64;
  expect_invalid(c, r, "the strided layout reaches past the 16 elements of the claim and request");
  shape_ = {4};
  strides_ = {-1};
  r = request();
  r.byte_length = 64;
  r.element_offset = 2;  // reaches element -1
  expect_invalid(c, r, "the strided layout reaches past the 16 elements of the claim and request");
  release(c);
}

TEST_F(DeviceAccess, HostRootsAreUnsupported) {
  rootspan_root *host = allocate("host", 64);
  rootspan_claim *c = claim(host, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  shape_ = {16};
  strides_ = {1};
  rootspan_device_access_request r = request();
  r.key = info_of(host).key;
  r.byte_length = 64;
  rootspan_device_access a = access_out();
  Err e;
  ASSERT_EQ(prepare(c, r, a, e), ROOTSPAN_ERR_UNSUPPORTED);
  EXPECT_EQ(e.message(), root_request("device_access_prepare", host, 0, 64) +
                             ": resolved to span [0,64): provider 'host' has no device access");
  EXPECT_EQ(a.device_ptr, nullptr);
  // Nothing is held: the claim releases.
  release(c);
  release(host);
}

TEST_F(DeviceAccess, ANullDevicePointerFromTheProviderIsAProviderFailure) {
  behaviour().prepare_null_pointer = true;
  rootspan_claim *c = claim(root_, 0, 256, ROOTSPAN_CLAIM_SHARED);
  rootspan_device_access_request r = request();
  rootspan_device_access a = access_out();
  Err e;
  ASSERT_EQ(prepare(c, r, a, e), ROOTSPAN_ERR_PROVIDER_FAILURE);
  EXPECT_EQ(e.cause(), "provider 'device-sim' returned a NULL device pointer");
  EXPECT_EQ(counters().release_access.load(), 1) << "the half-made access is handed back";
  release(c);  // not held
}

TEST_F(DeviceAccess, ASplitClaimIsBusyAndItsChildrenAreAccessible) {
  rootspan_claim *parent = claim(root_, 0, 256, ROOTSPAN_CLAIM_EXCLUSIVE);
  const rootspan_range ranges[] = {{0, 128}, {128, 128}};
  rootspan_claim *children[2] = {};
  Err e;
  ASSERT_EQ(rootspan_claim_split(parent, ranges, 2, children, e.out()), ROOTSPAN_OK) << e.message();
  rootspan_device_access_request r = request();
  rootspan_device_access a = access_out();
  ASSERT_EQ(prepare(parent, r, a, e), ROOTSPAN_ERR_BUSY);
  EXPECT_EQ(e.cause(), "the claim is split");
  shape_ = {32};
  r = request();
  r.byte_length = 128;
  ASSERT_EQ(prepare(children[1], r, a, e), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(counters().last_prepare_byte_offset.load(), 128u);
  EXPECT_EQ(rootspan_device_access_release(children[1], &a), ROOTSPAN_OK);
  release(children[0]);
  release(children[1]);
  release(parent);
}

TEST_F(DeviceAccess, DeviceMemoryHasNoHostMapping) {
  rootspan_claim *c = claim(root_, 0, 256, ROOTSPAN_CLAIM_SHARED);
  rootspan_mapping *m = nullptr;
  Err e;
  ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_NONE, 0, 256, &m, e.out()), ROOTSPAN_ERR_UNSUPPORTED);
  EXPECT_EQ(e.message(), root_request("map_read", root_, 0, 256) +
                             ": unresolved: provider 'device-sim' has no host access for map_read");
  release(c);
}

TEST_F(DeviceAccess, BadArgumentsAreInvalidArgument) {
  rootspan_claim *c = claim(root_, 0, 256, ROOTSPAN_CLAIM_SHARED);
  rootspan_device_access_request r = request();
  rootspan_device_access a = access_out();
  Err e;
  EXPECT_EQ(rootspan_device_access_prepare(nullptr, &r, &a, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rootspan_device_access_prepare(c, nullptr, &a, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rootspan_device_access_prepare(c, &r, nullptr, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e.operation(), "device_access_prepare");
  r.rank = 2;
  r.shape = nullptr;
  ASSERT_EQ(rootspan_device_access_prepare(c, &r, &a, e.out()), ROOTSPAN_ERR_INVALID_REQUEST);
  EXPECT_EQ(e.cause(), "rank is non-zero but shape or strides is NULL");
  EXPECT_EQ(rootspan_device_access_release(nullptr, &a), ROOTSPAN_ERR_INVALID_ARGUMENT);
  release(c);
}

}  // namespace
