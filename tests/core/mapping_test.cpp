// docs/concepts.md Mappings: map_read needs a claim, map_write an exclusive one;
// the element-type rule (typed roots: the same type or its complex/real
// partner, C32<->F32, C64<->F64; untyped roots: any whole-byte type whose
// size divides the span); element-aligned subranges; LengthMismatch and
// Misaligned checked on what the provider returned, every time (and the
// provider's unmap called); Unsupported without host access; a mapping is
// released before its claim.
#include <cstring>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace rootspan::testing;

class Mapping : public CoreTest {
 protected:
  // Imports `length` bytes of this fixture's buffer as a host root of `dtype`.
  rootspan_root *typed_root(rootspan_dtype dtype, std::uint64_t length = 64) {
    rootspan_host_import import = host_import(buffer_, length, 64, dtype);
    rootspan_root *root = nullptr;
    Err e;
    EXPECT_EQ(rootspan_root_import_host(context_, &import, &root, e.out()), ROOTSPAN_OK) << e.message();
    return root;
  }

  rootspan_status map(rootspan_claim *c, rootspan_dtype dtype, std::uint64_t offset, std::uint64_t length, Err &e,
                      bool write = false) {
    rootspan_mapping *m = nullptr;
    const rootspan_status status = write ? rootspan_map_write(c, dtype, offset, length, &m, e.out())
                                         : rootspan_map_read(c, dtype, offset, length, &m, e.out());
    if (status == ROOTSPAN_OK) {
      EXPECT_NE(m, nullptr);
      EXPECT_EQ(rootspan_mapping_length(m), length);
      EXPECT_EQ(rootspan_unmap(m), ROOTSPAN_OK);
    } else {
      EXPECT_EQ(m, nullptr);
      EXPECT_EQ(e.code(), status);
    }
    return status;
  }

  alignas(64) unsigned char buffer_[256] = {};
};

TEST_F(Mapping, MapReadNeedsAClaim) {
  rootspan_mapping *m = nullptr;
  Err e;
  ASSERT_EQ(rootspan_map_read(nullptr, ROOTSPAN_DTYPE_NONE, 0, 8, &m, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e.message(), "map_read: claim or mapping is NULL");
  ASSERT_EQ(rootspan_map_write(nullptr, ROOTSPAN_DTYPE_NONE, 0, 8, &m, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e.message(), "map_write: claim or mapping is NULL");
  // Both modes of claim can be read.
  rootspan_root *root = allocate("host", 64);
  rootspan_claim *shared = claim(root, 0, 32, ROOTSPAN_CLAIM_SHARED);
  rootspan_claim *exclusive = claim(root, 32, 32, ROOTSPAN_CLAIM_EXCLUSIVE);
  EXPECT_EQ(map(shared, ROOTSPAN_DTYPE_NONE, 0, 32, e), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(map(exclusive, ROOTSPAN_DTYPE_NONE, 0, 32, e), ROOTSPAN_OK) << e.message();
  release(shared);
  release(exclusive);
  release(root);
}

TEST_F(Mapping, MapWriteNeedsAnExclusiveClaim) {
  rootspan_root *root = allocate("host", 64);
  rootspan_claim *shared = claim(root, 16, 32, ROOTSPAN_CLAIM_SHARED);
  Err e;
  ASSERT_EQ(map(shared, ROOTSPAN_DTYPE_NONE, 0, 32, e, true), ROOTSPAN_ERR_READ_ONLY);
  EXPECT_EQ(e.operation(), "map_write");
  EXPECT_EQ(e.message(), root_request("map_write", root, 16, 48) +
                             ": unresolved: map_write needs an exclusive claim; this one is shared");
  release(shared);
  rootspan_claim *exclusive = claim(root, 16, 32, ROOTSPAN_CLAIM_EXCLUSIVE);
  EXPECT_EQ(map(exclusive, ROOTSPAN_DTYPE_NONE, 0, 32, e, true), ROOTSPAN_OK) << e.message();
  release(exclusive);
  release(root);
}

TEST_F(Mapping, RangesAreRelativeToTheClaimAndStayInside) {
  rootspan_root *root = allocate("host", 256);
  Err e;
  rootspan_claim *c = claim(root, 0, 256, ROOTSPAN_CLAIM_EXCLUSIVE);
  const std::vector<unsigned char> zeros(256, 0);  // new host memory is not zeroed
  ASSERT_EQ(rootspan_copy_from_host(c, 0, zeros.data(), zeros.size(), e.out()), ROOTSPAN_OK) << e.message();
  release(c);
  c = claim(root, 64, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_mapping *m = nullptr;
  ASSERT_EQ(rootspan_map_write(c, ROOTSPAN_DTYPE_U32, 16, 32, &m, e.out()), ROOTSPAN_OK) << e.message();
  std::memset(rootspan_mapping_data(m), 0x5A, 32);
  rootspan_unmap(m);
  ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_U8, 60, 8, &m, e.out()), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  EXPECT_EQ(e.message(),
            root_request("map_read", root, 124, 132) + ": unresolved: range ends at 68, past the claim's length 64");
  std::uint64_t expected = 0, actual = 0;
  ASSERT_TRUE(e.values(&expected, &actual));
  EXPECT_EQ(expected, 64u);
  EXPECT_EQ(actual, 68u);
  ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_U8, 8, UINT64_MAX, &m, e.out()), ROOTSPAN_ERR_RANGE_OVERFLOW);
  EXPECT_EQ(e.cause(), "offset 8 + length 18446744073709551615 overflows 64 bits");
  release(c);
  // The bytes landed at root offset 80.
  c = claim(root, 0, 256, ROOTSPAN_CLAIM_SHARED);
  ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_NONE, 0, 256, &m, e.out()), ROOTSPAN_OK);
  const auto *bytes = static_cast<const unsigned char *>(rootspan_mapping_data(m));
  EXPECT_EQ(bytes[79], 0);
  EXPECT_EQ(bytes[80], 0x5A);
  EXPECT_EQ(bytes[111], 0x5A);
  EXPECT_EQ(bytes[112], 0);
  rootspan_unmap(m);
  release(c);
  release(root);
}

TEST_F(Mapping, TypedRootsTakeTheirTypeOrItsComplexRealPartner) {
  struct Case {
    rootspan_dtype root, view;
    bool ok;
  };
  const Case cases[] = {
      {ROOTSPAN_DTYPE_F32, ROOTSPAN_DTYPE_F32, true},  {ROOTSPAN_DTYPE_F32, ROOTSPAN_DTYPE_C32, true},
      {ROOTSPAN_DTYPE_C32, ROOTSPAN_DTYPE_F32, true},  {ROOTSPAN_DTYPE_C32, ROOTSPAN_DTYPE_C32, true},
      {ROOTSPAN_DTYPE_F64, ROOTSPAN_DTYPE_C64, true},  {ROOTSPAN_DTYPE_C64, ROOTSPAN_DTYPE_F64, true},
      {ROOTSPAN_DTYPE_F32, ROOTSPAN_DTYPE_I32, false}, {ROOTSPAN_DTYPE_F32, ROOTSPAN_DTYPE_U32, false},
      {ROOTSPAN_DTYPE_F32, ROOTSPAN_DTYPE_U8, false},  {ROOTSPAN_DTYPE_F32, ROOTSPAN_DTYPE_F64, false},
      {ROOTSPAN_DTYPE_F32, ROOTSPAN_DTYPE_C64, false}, {ROOTSPAN_DTYPE_C32, ROOTSPAN_DTYPE_F64, false},
      {ROOTSPAN_DTYPE_C64, ROOTSPAN_DTYPE_F32, false}, {ROOTSPAN_DTYPE_C64, ROOTSPAN_DTYPE_C32, false},
      {ROOTSPAN_DTYPE_I32, ROOTSPAN_DTYPE_F32, false}, {ROOTSPAN_DTYPE_BF16, ROOTSPAN_DTYPE_F16, false},
      {ROOTSPAN_DTYPE_U8, ROOTSPAN_DTYPE_I8, false},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(rootspan_dtype_name(c.root)) + " viewed as " + rootspan_dtype_name(c.view));
    rootspan_root *root = typed_root(c.root);
    ASSERT_NE(root, nullptr);
    rootspan_claim *cl = claim(root, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
    Err e;
    for (bool write : {false, true}) {
      const rootspan_status status = map(cl, c.view, 0, 64, e, write);
      if (c.ok) {
        EXPECT_EQ(status, ROOTSPAN_OK) << e.message();
      } else {
        ASSERT_EQ(status, ROOTSPAN_ERR_DTYPE_MISMATCH);
        const std::string cause = std::string("a root of ") + rootspan_dtype_name(c.root) + " cannot be viewed as " +
                                  rootspan_dtype_name(c.view);
        EXPECT_EQ(e.cause(), cause);
        EXPECT_EQ(e.message(), root_request(write ? "map_write" : "map_read", root, 0, 64) + ": unresolved: " + cause);
      }
    }
    release(cl);
    release(root);
  }
}

TEST_F(Mapping, UntypedRootsTakeAnyTypeWhoseSizeDividesTheSpan) {
  rootspan_root *root = allocate("host", 64);
  rootspan_claim *c = claim(root, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  Err e;
  for (rootspan_dtype ok : {ROOTSPAN_DTYPE_NONE, ROOTSPAN_DTYPE_U8, ROOTSPAN_DTYPE_BOOL, ROOTSPAN_DTYPE_U16,
                            ROOTSPAN_DTYPE_F16, ROOTSPAN_DTYPE_F32, ROOTSPAN_DTYPE_I32, ROOTSPAN_DTYPE_F8_E4M3}) {
    EXPECT_EQ(map(c, ok, 0, 12, e), ROOTSPAN_OK) << rootspan_dtype_name(ok) << ": " << e.message();
  }
  EXPECT_EQ(map(c, ROOTSPAN_DTYPE_F64, 0, 16, e), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(map(c, ROOTSPAN_DTYPE_C64, 0, 32, e, true), ROOTSPAN_OK) << e.message();

  ASSERT_EQ(map(c, ROOTSPAN_DTYPE_F64, 0, 12, e), ROOTSPAN_ERR_DTYPE_MISMATCH);
  EXPECT_EQ(e.message(), root_request("map_read", root, 0, 12) +
                             ": unresolved: span length 12 is not a whole number of F64 elements");
  std::uint64_t expected = 1, actual = 0;
  ASSERT_TRUE(e.values(&expected, &actual));
  EXPECT_EQ(expected, 0u);
  EXPECT_EQ(actual, 4u);
  ASSERT_EQ(map(c, ROOTSPAN_DTYPE_C32, 0, 12, e), ROOTSPAN_ERR_DTYPE_MISMATCH);
  EXPECT_EQ(e.cause(), "span length 12 is not a whole number of C32 elements");
  ASSERT_EQ(map(c, ROOTSPAN_DTYPE_U32, 0, 6, e, true), ROOTSPAN_ERR_DTYPE_MISMATCH);
  EXPECT_EQ(e.cause(), "span length 6 is not a whole number of U32 elements");
  release(c);
  release(root);
}

TEST_F(Mapping, SubByteAndUnknownTypesAreRefused) {
  rootspan_root *root = allocate("host", 64);
  rootspan_claim *c = claim(root, 0, 64, ROOTSPAN_CLAIM_SHARED);
  Err e;
  for (rootspan_dtype sub : {ROOTSPAN_DTYPE_F4, ROOTSPAN_DTYPE_F6_E2M3, ROOTSPAN_DTYPE_F6_E3M2}) {
    ASSERT_EQ(map(c, sub, 0, 64, e), ROOTSPAN_ERR_DTYPE_MISMATCH) << rootspan_dtype_name(sub);
    EXPECT_EQ(e.message(), root_request("map_read", root, 0, 64) + ": unresolved: " + rootspan_dtype_name(sub) +
                               " has no whole-byte size and cannot be mapped");
  }
  // Out-of-range enum values are InvalidArgument naming the value (types.h).
  ASSERT_EQ(map(c, 77, 0, 64, e), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e.cause(), "dtype 77 is not a rootspan_dtype value");
  ASSERT_EQ(map(c, -1, 0, 64, e), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e.cause(), "dtype -1 is not a rootspan_dtype value");
  release(c);
  release(root);
}

TEST_F(Mapping, TheRangeMustBeElementAligned) {
  rootspan_root *root = allocate("host", 64);
  rootspan_claim *c = claim(root, 0, 64, ROOTSPAN_CLAIM_SHARED);
  Err e;
  ASSERT_EQ(map(c, ROOTSPAN_DTYPE_F32, 2, 8, e), ROOTSPAN_ERR_MISALIGNED_OFFSET);
  EXPECT_EQ(e.message(), root_request("map_read", root, 2, 10) +
                             ": unresolved: range [2,10) is not element-aligned for 4-byte elements");
  std::uint64_t expected = 1, actual = 0;
  ASSERT_TRUE(e.values(&expected, &actual));
  EXPECT_EQ(expected, 0u);
  EXPECT_EQ(actual, 2u);
  release(c);
  // A claim that starts off an element boundary: relative offsets count from the root.
  c = claim(root, 2, 16, ROOTSPAN_CLAIM_SHARED);
  ASSERT_EQ(map(c, ROOTSPAN_DTYPE_U16, 0, 8, e), ROOTSPAN_OK) << e.message();
  ASSERT_EQ(map(c, ROOTSPAN_DTYPE_F32, 2, 8, e), ROOTSPAN_OK) << e.message();  // root offset 4
  ASSERT_EQ(map(c, ROOTSPAN_DTYPE_F32, 0, 8, e), ROOTSPAN_ERR_MISALIGNED_OFFSET);
  EXPECT_EQ(e.cause(), "range [2,10) is not element-aligned for 4-byte elements");
  release(c);
  release(root);

  // Typed roots: both the root's and the view's elements start at the range.
  rootspan_root *f32 = typed_root(ROOTSPAN_DTYPE_F32);
  c = claim(f32, 0, 64, ROOTSPAN_CLAIM_SHARED);
  ASSERT_EQ(map(c, ROOTSPAN_DTYPE_F32, 2, 4, e), ROOTSPAN_ERR_MISALIGNED_OFFSET);
  ASSERT_EQ(map(c, ROOTSPAN_DTYPE_C32, 4, 8, e), ROOTSPAN_ERR_MISALIGNED_OFFSET);
  EXPECT_EQ(e.cause(), "range [4,12) is not element-aligned for 8-byte elements");
  ASSERT_EQ(map(c, ROOTSPAN_DTYPE_C32, 8, 8, e), ROOTSPAN_OK) << e.message();
  release(c);
  release(f32);
  rootspan_root *c32 = typed_root(ROOTSPAN_DTYPE_C32);
  c = claim(c32, 0, 64, ROOTSPAN_CLAIM_SHARED);
  ASSERT_EQ(map(c, ROOTSPAN_DTYPE_F32, 4, 8, e), ROOTSPAN_ERR_MISALIGNED_OFFSET);  // half a complex number
  ASSERT_EQ(map(c, ROOTSPAN_DTYPE_F32, 0, 4, e), ROOTSPAN_ERR_MISALIGNED_OFFSET);
  EXPECT_EQ(e.cause(), "range [0,4) is not element-aligned for 8-byte elements");
  ASSERT_EQ(map(c, ROOTSPAN_DTYPE_F32, 8, 16, e), ROOTSPAN_OK) << e.message();
  release(c);
  release(c32);
}

// ---- what a misbehaving provider returns ---------------------------------------

class ProviderMapping : public Mapping {
 protected:
  void SetUp() override {
    Mapping::SetUp();
    add(test_provider_entry);
    root_ = allocate("test", 64);
    ASSERT_NE(root_, nullptr);
    claim_ = claim(root_, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  }
  void TearDown() override {
    release(claim_);
    release(root_);
    Mapping::TearDown();
  }
  rootspan_root *root_ = nullptr;
  rootspan_claim *claim_ = nullptr;
};

TEST_F(ProviderMapping, AMisalignedPointerIsRefusedEveryTimeAndUnmapped) {
  Err e;
  ASSERT_EQ(map(claim_, ROOTSPAN_DTYPE_F32, 0, 16, e), ROOTSPAN_OK) << e.message();  // well-behaved first
  EXPECT_EQ(counters().unmap.load(), 1);
  behaviour().map_pointer_shift = 1;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    for (bool write : {false, true}) {
      const int unmaps = counters().unmap;
      ASSERT_EQ(map(claim_, ROOTSPAN_DTYPE_F32, 0, 16, e, write), ROOTSPAN_ERR_MISALIGNED);
      EXPECT_EQ(counters().unmap - unmaps, 1) << "the refused mapping is handed back to the provider";
      EXPECT_EQ(e.message(),
                root_request(write ? "map_write" : "map_read", root_, 0, 16) +
                    ": resolved to span [0,16): L9: provider 'test' returned a pointer 1 bytes past 4-byte "
                    "alignment");
      std::uint64_t expected = 1, actual = 0;
      ASSERT_TRUE(e.values(&expected, &actual));
      EXPECT_EQ(expected, 0u);
      EXPECT_EQ(actual, 1u);
      rootspan_span resolved{};
      ASSERT_TRUE(e.resolution(&resolved));
      EXPECT_EQ(resolved.offset, 0u);
      EXPECT_EQ(resolved.length, 16u);
    }
  }
  // 8-byte elements need 8-byte pointers.
  behaviour().map_pointer_shift = 4;
  ASSERT_EQ(map(claim_, ROOTSPAN_DTYPE_F64, 0, 16, e), ROOTSPAN_ERR_MISALIGNED);
  EXPECT_EQ(e.cause(), "provider 'test' returned a pointer 4 bytes past 8-byte alignment");
  // C32 needs F32's 4: aligned, but away from the allocation's bytes.
  ASSERT_EQ(map(claim_, ROOTSPAN_DTYPE_C32, 0, 16, e), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT) << e.message();
  behaviour().map_pointer_shift = 0;
  ASSERT_EQ(map(claim_, ROOTSPAN_DTYPE_F64, 0, 16, e), ROOTSPAN_OK) << e.message();
  // No mapping leaked: the claim releases (in TearDown) without Busy.
  EXPECT_EQ(counters().map.load(), counters().unmap.load());
}

// Found by tests/fuzz/fuzz_c_api: a mapping aligned for its element type but
// away from host_base + offset was accepted, and copy_from_host, which copies
// through a mapping when the provider has no copy hooks, wrote past the
// allocation.
TEST_F(ProviderMapping, AMappingAwayFromTheAllocationIsRefusedAndNeverWrittenThrough) {
  behaviour().map_pointer_shift = 4096;
  Err e;
  for (bool write : {false, true}) {
    const int unmaps = counters().unmap;
    ASSERT_EQ(map(claim_, ROOTSPAN_DTYPE_NONE, 8, 8, e, write), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
    EXPECT_EQ(e.message(), root_request(write ? "map_write" : "map_read", root_, 8, 16) +
                               ": resolved to span [8,16): L9: provider 'test' mapped offset 8 at a pointer 4096 "
                               "bytes away from host_base + 8");
    EXPECT_EQ(counters().unmap - unmaps, 1) << "the refused mapping is handed back to the provider";
  }
  unsigned char bytes[16] = {1, 2, 3};
  ASSERT_EQ(rootspan_copy_from_host(claim_, 0, bytes, sizeof bytes, e.out()), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  EXPECT_EQ(e.operation(), "copy_from_host");
  ASSERT_EQ(rootspan_copy_to_host(claim_, 0, bytes, sizeof bytes, e.out()), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  EXPECT_EQ(e.operation(), "copy_to_host");
  EXPECT_EQ(counters().map.load(), counters().unmap.load());
}

TEST_F(ProviderMapping, ANullPointerIsRefused) {
  behaviour().map_null = true;
  Err e;
  const int unmaps = counters().unmap;
  ASSERT_EQ(map(claim_, ROOTSPAN_DTYPE_NONE, 8, 8, e), ROOTSPAN_ERR_MISALIGNED);
  EXPECT_EQ(e.cause(), "provider 'test' returned a pointer 0 bytes past 1-byte alignment (NULL)");
  EXPECT_EQ(counters().unmap - unmaps, 1);
}

TEST_F(ProviderMapping, AMappingOfTheWrongLengthIsLengthMismatch) {
  Err e;
  for (std::int64_t delta : {-1, 1, -64}) {
    SCOPED_TRACE(delta);
    behaviour().map_length_delta = delta;
    const int unmaps = counters().unmap;
    ASSERT_EQ(map(claim_, ROOTSPAN_DTYPE_NONE, 0, 64, e, true), ROOTSPAN_ERR_LENGTH_MISMATCH);
    EXPECT_EQ(counters().unmap - unmaps, 1);
    const std::uint64_t got = static_cast<std::uint64_t>(64 + delta);
    EXPECT_EQ(e.message(), root_request("map_write", root_, 0, 64) +
                               ": resolved to span [0,64): L9: provider 'test' mapped " + str(got) +
                               " bytes for a span of 64");
    std::uint64_t expected = 0, actual = 0;
    ASSERT_TRUE(e.values(&expected, &actual));
    EXPECT_EQ(expected, 64u);
    EXPECT_EQ(actual, got);
  }
  behaviour().map_length_delta = 0;
  EXPECT_EQ(map(claim_, ROOTSPAN_DTYPE_NONE, 0, 64, e, true), ROOTSPAN_OK) << e.message();
}

TEST_F(ProviderMapping, AFailingMapHookPassesItsMessage) {
  behaviour().map_status = ROOTSPAN_ERR_IO;
  behaviour().map_message = "page table on fire";
  Err e;
  const int unmaps = counters().unmap;
  ASSERT_EQ(map(claim_, ROOTSPAN_DTYPE_NONE, 0, 8, e), ROOTSPAN_ERR_PROVIDER_FAILURE);
  EXPECT_EQ(e.message(), root_request("map_read", root_, 0, 8) +
                             ": unresolved: provider 'test' map_read failed (Io): page table on fire");
  EXPECT_EQ(counters().unmap - unmaps, 0) << "nothing was mapped, nothing to unmap";
  // A status that means the same to the caller passes through.
  behaviour().map_status = ROOTSPAN_ERR_UNSUPPORTED;
  behaviour().map_message = "not today";
  ASSERT_EQ(map(claim_, ROOTSPAN_DTYPE_NONE, 0, 8, e, true), ROOTSPAN_ERR_UNSUPPORTED);
  EXPECT_EQ(e.cause(), "provider 'test' map_write failed (Unsupported): not today");
}

TEST_F(Mapping, AProviderWithoutMapHooksIsUnsupported) {
  add(nomap_entry);
  rootspan_root *root = allocate("nomap", 64);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(info_of(root).host_accessible, 0);
  rootspan_claim *c = claim(root, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  Err e;
  ASSERT_EQ(map(c, ROOTSPAN_DTYPE_NONE, 0, 64, e), ROOTSPAN_ERR_UNSUPPORTED);
  EXPECT_EQ(e.message(),
            root_request("map_read", root, 0, 64) + ": unresolved: provider 'nomap' has no host access for map_read");
  ASSERT_EQ(map(c, ROOTSPAN_DTYPE_NONE, 0, 64, e, true), ROOTSPAN_ERR_UNSUPPORTED);
  EXPECT_EQ(e.cause(), "provider 'nomap' has no host access for map_write");
  release(c);
  release(root);
}

TEST_F(Mapping, AnAllocationWithoutHostAccessIsNotMappedEvenWhenTheProviderHasMapHooks) {
  // Regression test for a bug once in core/mapping.cpp.
  add(test_provider_entry);
  behaviour().byte_offset = std::uint64_t{1} << 40;  // too far to back: host_base stays NULL
  rootspan_root *root = allocate("test", 64);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(info_of(root).host_accessible, 0);
  rootspan_claim *c = claim(root, 0, 64, ROOTSPAN_CLAIM_SHARED);
  rootspan_mapping *m = nullptr;
  Err e;
  const rootspan_status status = rootspan_map_read(c, ROOTSPAN_DTYPE_NONE, 0, 64, &m, e.out());
  EXPECT_EQ(status, ROOTSPAN_ERR_UNSUPPORTED) << "mapped to " << (m ? rootspan_mapping_data(m) : nullptr);
  if (status == ROOTSPAN_OK) {
    rootspan_unmap(m);
  } else {
    EXPECT_EQ(e.message(),
              root_request("map_read", root, 0, 64) + ": unresolved: provider 'test' has no host access for map_read");
  }
  EXPECT_EQ(counters().map.load(), 0) << "the provider's map hook was asked to map memory without a host address";
  release(c);
  release(root);
}

// ---- release order -----------------------------------------------------------------

TEST_F(Mapping, AMappingIsReleasedBeforeItsClaim) {
  rootspan_root *root = allocate("host", 64);
  rootspan_claim *c = claim(root, 0, 64, ROOTSPAN_CLAIM_SHARED);
  rootspan_mapping *m1 = nullptr;
  rootspan_mapping *m2 = nullptr;
  Err e;
  ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_NONE, 0, 64, &m1, e.out()), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_claim_release(c, e.out()), ROOTSPAN_ERR_BUSY);
  EXPECT_EQ(e.message(), root_request("claim_release", root, 0, 64) +
                             ": resolved to span [0,64): shared claim [0,64) still has 0 children, 1 mappings and 0 "
                             "device accesses");
  ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_U32, 32, 32, &m2, e.out()), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_claim_release(c, e.out()), ROOTSPAN_ERR_BUSY);
  EXPECT_EQ(e.cause(), "shared claim [0,64) still has 0 children, 2 mappings and 0 device accesses");
  ASSERT_EQ(rootspan_root_release(root, e.out()), ROOTSPAN_ERR_BUSY);
  // The mappings still work after the refused releases.
  EXPECT_EQ(static_cast<unsigned char *>(rootspan_mapping_data(m1)) + 32, rootspan_mapping_data(m2));
  EXPECT_EQ(rootspan_unmap(m1), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_claim_release(c, e.out()), ROOTSPAN_ERR_BUSY);
  EXPECT_EQ(e.cause(), "shared claim [0,64) still has 0 children, 1 mappings and 0 device accesses");
  EXPECT_EQ(rootspan_unmap(m2), ROOTSPAN_OK);
  release(c);
  release(root);
  EXPECT_EQ(rootspan_unmap(nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rootspan_mapping_data(nullptr), nullptr);
  EXPECT_EQ(rootspan_mapping_length(nullptr), 0u);
}

TEST_F(Mapping, WritesThroughAMappingAreSeenByLaterReaders) {
  rootspan_root *root = allocate("host", 64, 64, ROOTSPAN_DTYPE_F32);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(info_of(root).dtype, ROOTSPAN_DTYPE_F32);
  rootspan_claim *w = claim(root, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_mapping *m = nullptr;
  Err e;
  ASSERT_EQ(rootspan_map_write(w, ROOTSPAN_DTYPE_F32, 0, 64, &m, e.out()), ROOTSPAN_OK) << e.message();
  auto *f = static_cast<float *>(rootspan_mapping_data(m));
  for (int i = 0; i < 16; ++i) f[i] = static_cast<float>(i) + 0.25f;
  rootspan_unmap(m);
  release(w);
  rootspan_claim *r = claim(root, 32, 32, ROOTSPAN_CLAIM_SHARED);
  ASSERT_EQ(rootspan_map_read(r, ROOTSPAN_DTYPE_C32, 0, 32, &m, e.out()), ROOTSPAN_OK) << e.message();
  const auto *g = static_cast<const float *>(rootspan_mapping_data(m));
  EXPECT_EQ(g[0], 8.25f);
  EXPECT_EQ(g[7], 15.25f);
  rootspan_unmap(m);
  release(r);
  release(root);
}

}  // namespace
