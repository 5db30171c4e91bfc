// docs/concepts.md Import: DuplicateIdentity, DomainNotGranted, InvalidKey,
// Misaligned host pointers, LengthMismatch, DTypeMismatch for typed roots; a
// rejected allocation is released exactly once by the core; caller memory's
// deleter runs exactly once (at release, or on a failed import); read-only,
// typed and untyped roots.
#include <cstddef>
#include <cstring>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace rootspan::testing;

class Import : public CoreTest {
 protected:
  void SetUp() override {
    CoreTest::SetUp();
    add(test_provider_entry);
    domain_ = granted_domain("test");
    ASSERT_NE(domain_, 0u);
  }

  // Allocates from the test provider expecting `code`; checks that the
  // provider's allocation was released exactly once.
  void expect_rejected(rootspan_status code, Err &e, std::uint64_t length = 64, std::uint64_t alignment = 64,
                       rootspan_dtype dtype = ROOTSPAN_DTYPE_NONE) {
    const int released = counters().release;
    const int blocks = live_blocks();
    rootspan_allocate_options o = allocate_options("test", length, alignment, dtype);
    rootspan_root *root = nullptr;
    ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), code) << e.message();
    EXPECT_EQ(root, nullptr);
    EXPECT_EQ(e.code(), code);
    EXPECT_EQ(e.operation(), "root_allocate");
    EXPECT_EQ(counters().release - released, 1) << "the rejected allocation must be released exactly once";
    EXPECT_EQ(live_blocks(), blocks);
  }

  // Imports caller memory through the host provider expecting `code`.
  void expect_import_fails(rootspan_host_import import, rootspan_status code, Err &e) {
    rootspan_root *root = reinterpret_cast<rootspan_root *>(1);
    ASSERT_EQ(rootspan_root_import_host(context_, &import, &root, e.out()), code) << e.message();
    EXPECT_EQ(root, nullptr);
    EXPECT_EQ(e.code(), code);
    EXPECT_EQ(e.operation(), "root_import_host");
  }

  std::uint64_t domain_ = 0;
};

TEST_F(Import, DuplicateIdentityIsRefusedAndTheRejectedAllocationReleasedOnce) {
  behaviour().local = 7;  // every allocation reports key (domain, 7)
  rootspan_root *first = allocate("test", 64);
  ASSERT_NE(first, nullptr);
  const std::uint64_t first_id = info_of(first).root_id;

  Err e;
  expect_rejected(ROOTSPAN_ERR_DUPLICATE_IDENTITY, e);
  const std::string key = "(" + str(domain_) + ",7)";
  EXPECT_EQ(e.cause(), "live root " + str(first_id) + " already has key " + key);
  EXPECT_EQ(e.message(), "root_allocate for key " + key + " range [0,64): unresolved: L9: live root " + str(first_id) +
                             " already has key " + key);
  const rootspan_requested r = e.requested();
  EXPECT_EQ(r.kind, ROOTSPAN_REQUESTED_KEY_RANGE);
  EXPECT_EQ(r.key.domain, domain_);
  EXPECT_EQ(r.key.local, 7u);
  EXPECT_EQ(r.offset, 0u);
  EXPECT_EQ(r.length, 64u);
  EXPECT_EQ(e.policy(), "L9");
  EXPECT_FALSE(e.resolution());

  // The first root is untouched and still works.
  rootspan_claim *c = claim(first, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  ASSERT_NE(c, nullptr);
  release(c);
  // Only *live* roots count: once released, the key may come back.
  release(first);
  rootspan_root *again = allocate("test", 64);
  ASSERT_NE(again, nullptr);
  EXPECT_GT(info_of(again).root_id, first_id);
  release(again);
  EXPECT_EQ(counters().release.load(), 3);
}

TEST_F(Import, DomainNotGrantedIsRefused) {
  behaviour().domain = domain_ + ROOTSPAN_DOMAINS_PER_PROVIDER;  // just past its grant
  Err e;
  expect_rejected(ROOTSPAN_ERR_DOMAIN_NOT_GRANTED, e);
  const std::uint64_t bad = domain_ + ROOTSPAN_DOMAINS_PER_PROVIDER;
  EXPECT_EQ(e.cause(), "provider 'test' reported domain " + str(bad) + ", which it was not granted");
  EXPECT_EQ(e.message(), "root_allocate for key (" + str(bad) + ",1) range [0,64): unresolved: L9: " + e.cause());
}

TEST_F(Import, AnotherProvidersDomainIsNotGranted) {
  rootspan_root *host = allocate("host", 8);
  ASSERT_NE(host, nullptr);
  const rootspan_key host_key = info_of(host).key;
  behaviour().domain = host_key.domain;
  behaviour().local = host_key.local;  // even the very key of a live host root
  Err e;
  expect_rejected(ROOTSPAN_ERR_DOMAIN_NOT_GRANTED, e);
  EXPECT_EQ(e.cause(), "provider 'test' reported domain " + str(host_key.domain) + ", which it was not granted");
  release(host);
}

TEST_F(Import, EveryGrantedDomainIsAccepted) {
  for (std::uint64_t i = 0; i < ROOTSPAN_DOMAINS_PER_PROVIDER; ++i) {
    behaviour().domain = domain_ + i;
    rootspan_root *root = allocate("test", 8);
    ASSERT_NE(root, nullptr) << i;
    EXPECT_EQ(info_of(root).key.domain, domain_ + i);
    release(root);
  }
}

TEST_F(Import, KeysWithAZeroHalfAreInvalidKey) {
  behaviour().local = 0;
  Err e;
  expect_rejected(ROOTSPAN_ERR_INVALID_KEY, e);
  EXPECT_EQ(e.message(), "root_allocate for key (" + str(domain_) +
                             ",0) range [0,64): unresolved: L9: allocation key (" + str(domain_) +
                             ",0) has a zero half; both domain and local id must be non-zero");
  behaviour().local.reset();
  behaviour().domain = 0;
  expect_rejected(ROOTSPAN_ERR_INVALID_KEY, e);
  EXPECT_EQ(e.cause(), "allocation key (0,1) has a zero half; both domain and local id must be non-zero");
}

TEST_F(Import, HostPointerThatMissesItsClaimedAlignmentIsMisaligned) {
  behaviour().alignment = 64;
  behaviour().host_shift = 8;
  Err e;
  expect_rejected(ROOTSPAN_ERR_MISALIGNED, e);
  EXPECT_EQ(e.cause(), "provider 'test' claims alignment 64 but its host pointer is 8 bytes past an aligned address");
  EXPECT_EQ(e.message(), "root_allocate for key (" + str(domain_) + ",1) range [0,64): unresolved: L9: " + e.cause());
  std::uint64_t expected = 1, actual = 0;
  ASSERT_TRUE(e.values(&expected, &actual));
  EXPECT_EQ(expected, 0u);
  EXPECT_EQ(actual, 8u);
}

TEST_F(Import, HostPointerIsCheckedAtTheByteOffset) {
  // host_base is 32 bytes off, but byte_offset 32 brings the root's first
  // byte back onto a 64-byte boundary: accepted.
  behaviour().host_shift = 32;
  behaviour().byte_offset = 64;
  behaviour().alignment = 32;
  rootspan_root *root = allocate("test", 64, 32);
  ASSERT_NE(root, nullptr);
  release(root);
  // host_base + byte_offset = 16 past a 32-byte boundary: refused.
  behaviour().host_shift = 16;
  Err e;
  expect_rejected(ROOTSPAN_ERR_MISALIGNED, e, 64, 32);
  EXPECT_EQ(e.cause(), "provider 'test' claims alignment 32 but its host pointer is 16 bytes past an aligned address");
}

TEST_F(Import, AlignmentBelowTheRequestedOneIsMisaligned) {
  behaviour().alignment = 64;
  Err e;
  expect_rejected(ROOTSPAN_ERR_MISALIGNED, e, 64, 256);
  EXPECT_EQ(e.cause(), "provider 'test' guarantees alignment 64, less than the requested 256");
  std::uint64_t expected = 0, actual = 0;
  ASSERT_TRUE(e.values(&expected, &actual));
  EXPECT_EQ(expected, 256u);
  EXPECT_EQ(actual, 64u);
}

TEST_F(Import, ReturnedLengthMustEqualTheRequest) {
  behaviour().byte_length = 65;
  Err e;
  expect_rejected(ROOTSPAN_ERR_LENGTH_MISMATCH, e);
  EXPECT_EQ(e.message(), "root_allocate for key (" + str(domain_) +
                             ",1) range [0,65): unresolved: L9: provider 'test' returned 65 bytes for a request of 64");
  std::uint64_t expected = 0, actual = 0;
  ASSERT_TRUE(e.values(&expected, &actual));
  EXPECT_EQ(expected, 64u);
  EXPECT_EQ(actual, 65u);
  behaviour().byte_length = 0;
  expect_rejected(ROOTSPAN_ERR_LENGTH_MISMATCH, e);
  EXPECT_EQ(e.cause(), "provider 'test' returned 0 bytes for a request of 64");
}

TEST_F(Import, TypedRootMustBeAWholeNumberOfElements) {
  Err e;
  expect_rejected(ROOTSPAN_ERR_DTYPE_MISMATCH, e, 10, 64, ROOTSPAN_DTYPE_F32);
  EXPECT_EQ(e.message(), "root_allocate for key (" + str(domain_) +
                             ",1) range [0,10): unresolved: L9: a typed root of F32 needs a whole number of 4-byte "
                             "elements; length is 10");
  std::uint64_t expected = 1, actual = 0;
  ASSERT_TRUE(e.values(&expected, &actual));
  EXPECT_EQ(expected, 0u);
  EXPECT_EQ(actual, 2u);
  // C64 (two F64, 16 bytes): 24 is not a whole number of them.
  expect_rejected(ROOTSPAN_ERR_DTYPE_MISMATCH, e, 24, 64, ROOTSPAN_DTYPE_C64);
  EXPECT_EQ(e.cause(), "a typed root of C64 needs a whole number of 16-byte elements; length is 24");
  // F4 has no whole-byte element: no typed root of it.
  expect_rejected(ROOTSPAN_ERR_DTYPE_MISMATCH, e, 64, 64, ROOTSPAN_DTYPE_F4);
  // Whole elements are fine.
  rootspan_root *root = allocate("test", 48, 64, ROOTSPAN_DTYPE_C64);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(info_of(root).dtype, ROOTSPAN_DTYPE_C64);
  release(root);
}

TEST_F(Import, UnknownElementTypeIsRefusedBeforeTheProviderIsAsked) {
  rootspan_allocate_options o = allocate_options("test", 64, 64, 99);
  rootspan_root *root = nullptr;
  Err e;
  ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e.message(), "root_allocate for range [0,64): unresolved: dtype 99 is not a rootspan_dtype value");
  EXPECT_EQ(counters().allocate.load(), 0);
}

TEST_F(Import, UnknownMemoryKindIsInvalidArgumentNamingTheValue) {
  rootspan_allocate_options o = allocate_options("test", 64, 64);
  rootspan_root *root = nullptr;
  Err e;
  for (rootspan_memory_kind kind : {3, -1, 1000}) {
    o.memory_kind = kind;
    ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT) << kind;
    EXPECT_EQ(e.cause(), "memory_kind " + std::to_string(kind) + " is not a rootspan_memory_kind value");
    EXPECT_EQ(root, nullptr);
  }
  EXPECT_EQ(counters().allocate.load(), 0);
}

TEST_F(Import, AllocateRefusesBadAlignmentAndUnknownProvider) {
  rootspan_allocate_options o = allocate_options("test", 64, 48);
  rootspan_root *root = nullptr;
  Err e;
  ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_ERR_INVALID_ALIGNMENT);
  EXPECT_EQ(e.message(), "root_allocate for range [0,64): unresolved: alignment 48 is not a non-zero power of two");
  o = allocate_options("nope", 64);
  ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_EQ(e.message(),
            "root_allocate for range [0,64): unresolved: no loaded provider is named 'nope' (loaded: host, test)");
  EXPECT_EQ(counters().allocate.load(), 0);
  // Alignment 0 means 64.
  o = allocate_options("test", 64, 0);
  ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(info_of(root).alignment, 64u);
  release(root);
}

// ---- caller memory with a deleter ------------------------------------------

// Found by tests/fuzz/fuzz_c_api: an import whose byte_length runs past the
// end of the address space was accepted, and a copy into the root then wrote
// through the wrapped-around range.
TEST_F(Import, ALengthPastTheEndOfTheAddressSpaceIsRangeOverflow) {
  alignas(64) static unsigned char buffer[128];
  const std::uint64_t room = UINTPTR_MAX - reinterpret_cast<std::uintptr_t>(buffer);
  for (std::uint64_t length : {room + 1, room + 4096, std::uint64_t{UINT64_MAX}}) {
    SCOPED_TRACE(length);
    int deleted = 0;
    Err e;
    rootspan_host_import import = host_import(buffer, length, 64, ROOTSPAN_DTYPE_NONE, &deleted);
    rootspan_root *root = nullptr;
    ASSERT_EQ(rootspan_root_import_host(context_, &import, &root, e.out()), ROOTSPAN_ERR_RANGE_OVERFLOW);
    EXPECT_EQ(root, nullptr);
    EXPECT_EQ(e.message(), "root_import_host for range [0," + str(length) + "): unresolved: data + byte_length " +
                               str(length) + " runs past the end of the address space");
    EXPECT_EQ(deleted, 1);
  }
  // The last byte of the address space may still be reached.
  int deleted = 0;
  rootspan_host_import fits = host_import(buffer, room, 64, ROOTSPAN_DTYPE_NONE, &deleted);
  rootspan_root *root = nullptr;
  Err e;
  ASSERT_EQ(rootspan_root_import_host(context_, &fits, &root, e.out()), ROOTSPAN_OK) << e.message();
  release(root);
  EXPECT_EQ(deleted, 1);
}

TEST_F(Import, DeleterRunsExactlyOnceAtRelease) {
  std::vector<float> values(16);
  for (int i = 0; i < 16; ++i) values[i] = static_cast<float>(i) * 0.5f;
  int deleted = 0;
  rootspan_host_import import =
      host_import(values.data(), values.size() * sizeof(float), alignof(float), ROOTSPAN_DTYPE_F32, &deleted);
  rootspan_root *root = nullptr;
  Err e;
  ASSERT_EQ(rootspan_root_import_host(context_, &import, &root, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(deleted, 0);
  const rootspan_root_info info = info_of(root);
  EXPECT_EQ(info.dtype, ROOTSPAN_DTYPE_F32);
  EXPECT_EQ(info.byte_length, 64u);
  EXPECT_EQ(info.alignment, alignof(float));
  EXPECT_EQ(info.read_only, 0);
  EXPECT_EQ(info.host_accessible, 1);
  EXPECT_STREQ(info.provider, "host");
  // Zero copy: the mapping is the caller's memory.
  rootspan_claim *c = claim(root, 0, 64, ROOTSPAN_CLAIM_SHARED);
  rootspan_mapping *m = nullptr;
  ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_F32, 0, 64, &m, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(rootspan_mapping_data(m), values.data());
  EXPECT_EQ(static_cast<const float *>(rootspan_mapping_data(m))[3], 1.5f);
  rootspan_unmap(m);
  release(c);
  EXPECT_EQ(deleted, 0);
  release(root);
  EXPECT_EQ(deleted, 1);
}

TEST_F(Import, DeleterRunsExactlyOnceOnEveryFailedImport) {
  alignas(64) static unsigned char buffer[128];
  Err e;
  {
    SCOPED_TRACE("alignment 3");
    int deleted = 0;
    expect_import_fails(host_import(buffer, 64, 3, ROOTSPAN_DTYPE_NONE, &deleted), ROOTSPAN_ERR_INVALID_ALIGNMENT, e);
    EXPECT_EQ(e.message(), "root_import_host for range [0,64): unresolved: alignment 3 is not a non-zero power of two");
    EXPECT_EQ(deleted, 1);
  }
  {
    SCOPED_TRACE("alignment 0");
    int deleted = 0;
    expect_import_fails(host_import(buffer, 64, 0, ROOTSPAN_DTYPE_NONE, &deleted), ROOTSPAN_ERR_INVALID_ALIGNMENT, e);
    EXPECT_EQ(deleted, 1);
  }
  {
    SCOPED_TRACE("unknown provider");
    int deleted = 0;
    rootspan_host_import import = host_import(buffer, 64, 64, ROOTSPAN_DTYPE_NONE, &deleted);
    import.provider = "nope";
    expect_import_fails(import, ROOTSPAN_ERR_NOT_FOUND, e);
    EXPECT_EQ(e.message(),
              "root_import_host for range [0,64): unresolved: no loaded provider is named 'nope' (loaded: host, test)");
    EXPECT_EQ(deleted, 1);
  }
  {
    SCOPED_TRACE("provider without import");
    int deleted = 0;
    rootspan_host_import import = host_import(buffer, 64, 64, ROOTSPAN_DTYPE_NONE, &deleted);
    import.provider = "test";
    expect_import_fails(import, ROOTSPAN_ERR_UNSUPPORTED, e);
    EXPECT_EQ(e.message(), "root_import_host for range [0,64): unresolved: provider 'test' cannot import host memory");
    EXPECT_EQ(deleted, 1);
  }
  {
    SCOPED_TRACE("NULL data");
    int deleted = 0;
    expect_import_fails(host_import(nullptr, 64, 64, ROOTSPAN_DTYPE_NONE, &deleted), ROOTSPAN_ERR_INVALID_ARGUMENT, e);
    EXPECT_EQ(e.message(), "root_import_host for range [0,64): unresolved: data is NULL for a non-empty import");
    EXPECT_EQ(deleted, 1);
  }
  {
    SCOPED_TRACE("pointer misses the claimed alignment");
    int deleted = 0;
    expect_import_fails(host_import(buffer + 4, 64, 16, ROOTSPAN_DTYPE_NONE, &deleted), ROOTSPAN_ERR_MISALIGNED, e);
    const rootspan_requested r = e.requested();
    EXPECT_EQ(r.kind, ROOTSPAN_REQUESTED_KEY_RANGE);
    EXPECT_EQ(e.message(), "root_import_host for key " + key_text(r.key) +
                               " range [0,64): unresolved: L9: provider 'host' claims alignment 16 but its host "
                               "pointer is 4 bytes past an aligned address");
    EXPECT_EQ(deleted, 1);
  }
  {
    SCOPED_TRACE("typed import not a whole number of elements");
    int deleted = 0;
    expect_import_fails(host_import(buffer, 12, 8, ROOTSPAN_DTYPE_F64, &deleted), ROOTSPAN_ERR_DTYPE_MISMATCH, e);
    const rootspan_requested r = e.requested();
    EXPECT_EQ(e.message(), "root_import_host for key " + key_text(r.key) +
                               " range [0,12): unresolved: L9: a typed root of F64 needs a whole number of 8-byte "
                               "elements; length is 12");
    EXPECT_EQ(deleted, 1);
  }
  {
    SCOPED_TRACE("unknown element type");
    int deleted = 0;
    expect_import_fails(host_import(buffer, 64, 64, 1234, &deleted), ROOTSPAN_ERR_INVALID_ARGUMENT, e);
    EXPECT_EQ(e.message(), "root_import_host for range [0,64): unresolved: dtype 1234 is not a rootspan_dtype value");
    EXPECT_EQ(deleted, 1);
  }
  {
    SCOPED_TRACE("NULL context");
    int deleted = 0;
    rootspan_host_import import = host_import(buffer, 64, 64, ROOTSPAN_DTYPE_NONE, &deleted);
    rootspan_root *root = nullptr;
    EXPECT_EQ(rootspan_root_import_host(nullptr, &import, &root, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(e.operation(), "root_import_host");
    EXPECT_EQ(deleted, 1);
  }
  {
    SCOPED_TRACE("NULL root out-pointer");
    int deleted = 0;
    rootspan_host_import import = host_import(buffer, 64, 64, ROOTSPAN_DTYPE_NONE, &deleted);
    EXPECT_EQ(rootspan_root_import_host(context_, &import, nullptr, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(deleted, 1);
  }
  EXPECT_EQ(counters().allocate.load(), 0);
}

TEST_F(Import, DeleterRunsOnceWhenTheContextReleasesTheRoot) {
  alignas(64) static unsigned char buffer[64];
  int deleted = 0;
  rootspan_host_import import = host_import(buffer, 64, 64, ROOTSPAN_DTYPE_NONE, &deleted);
  rootspan_root *root = nullptr;
  Err e;
  ASSERT_EQ(rootspan_root_import_host(context_, &import, &root, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(destroy_context(), 1u);
  EXPECT_EQ(deleted, 1);
}

TEST_F(Import, BorrowedMemoryWithoutDeleterAndEmptyImports) {
  alignas(64) static unsigned char buffer[64];
  rootspan_host_import import = host_import(buffer, 64, 64);
  rootspan_root *root = nullptr;
  Err e;
  ASSERT_EQ(rootspan_root_import_host(context_, &import, &root, e.out()), ROOTSPAN_OK) << e.message();
  release(root);
  // Zero length with a NULL pointer is a valid (empty) import.
  int deleted = 0;
  import = host_import(nullptr, 0, 1, ROOTSPAN_DTYPE_NONE, &deleted);
  ASSERT_EQ(rootspan_root_import_host(context_, &import, &root, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(info_of(root).byte_length, 0u);
  release(root);
  EXPECT_EQ(deleted, 1);
}

// ---- read-only, typed and untyped roots ----------------------------------------

TEST_F(Import, ReadOnlyRootsRefuseExclusiveClaimsAndWriteMappings) {
  static const std::uint32_t words[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  int deleted = 0;
  rootspan_host_import import = host_import(const_cast<std::uint32_t *>(words), sizeof words, alignof(std::uint32_t),
                                            ROOTSPAN_DTYPE_U32, &deleted, true);
  rootspan_root *root = nullptr;
  Err e;
  ASSERT_EQ(rootspan_root_import_host(context_, &import, &root, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(info_of(root).read_only, 1);
  EXPECT_EQ(info_of(root).dtype, ROOTSPAN_DTYPE_U32);

  rootspan_claim *c = nullptr;
  ASSERT_EQ(rootspan_claim_acquire(root, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE, &c, e.out()), ROOTSPAN_ERR_READ_ONLY);
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(e.message(), root_request("claim_acquire", root, 0, 64) +
                             ": unresolved: root is read-only; an exclusive claim needs write access");
  EXPECT_EQ(e.operation(), "claim_acquire");

  c = claim(root, 16, 32, ROOTSPAN_CLAIM_SHARED);
  ASSERT_NE(c, nullptr);
  rootspan_mapping *m = nullptr;
  ASSERT_EQ(rootspan_map_write(c, ROOTSPAN_DTYPE_U32, 0, 32, &m, e.out()), ROOTSPAN_ERR_READ_ONLY);
  EXPECT_EQ(e.message(), root_request("map_write", root, 16, 48) + ": unresolved: root is read-only");
  ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_U32, 0, 32, &m, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(static_cast<const std::uint32_t *>(rootspan_mapping_data(m))[0], 5u);
  rootspan_unmap(m);
  const std::uint32_t nine = 9;
  EXPECT_EQ(rootspan_copy_from_host(c, 0, &nine, sizeof nine, e.out()), ROOTSPAN_ERR_READ_ONLY);
  EXPECT_EQ(e.operation(), "copy_from_host");
  release(c);
  release(root);
  EXPECT_EQ(deleted, 1);
  EXPECT_EQ(words[4], 5u);
}

TEST_F(Import, UntypedRootsReportNoElementType) {
  rootspan_root *root = allocate("host", 100, 128);
  ASSERT_NE(root, nullptr);
  const rootspan_root_info info = info_of(root);
  EXPECT_EQ(info.dtype, ROOTSPAN_DTYPE_NONE);
  EXPECT_EQ(info.byte_length, 100u);
  EXPECT_EQ(info.byte_offset, 0u);
  EXPECT_EQ(info.alignment, 128u);
  EXPECT_EQ(info.read_only, 0);
  EXPECT_EQ(info.host_accessible, 1);
  EXPECT_EQ(info.device, 0u);
  EXPECT_NE(info.key.domain, 0u);
  EXPECT_NE(info.key.local, 0u);
  EXPECT_STREQ(info.provider, "host");
  release(root);
}

TEST_F(Import, RootInfoRefusesASizeBelowItsFirstVersionAndWritesNothing) {
  rootspan_root *root = allocate("host", 64);
  ASSERT_NE(root, nullptr);
  // No published header ever ended at byte_length: refused, nothing written.
  rootspan_root_info info{};
  std::memset(&info, 0xAB, sizeof info);
  info.struct_size = offsetof(rootspan_root_info, alignment);
  ASSERT_EQ(rootspan_root_get_info(root, &info), ROOTSPAN_ERR_INVALID_ARGUMENT);
  std::uint64_t untouched = 0;
  std::memset(&untouched, 0xAB, sizeof untouched);
  EXPECT_EQ(info.byte_length, untouched) << "a field was written for a refused struct_size";
  // A newer reader's larger struct gets the fields this core knows, and its
  // struct_size is kept.
  struct Newer {
    rootspan_root_info info;
    std::uint64_t future_field;
  } newer;
  std::memset(&newer, 0xAB, sizeof newer);
  newer.info.struct_size = sizeof newer;
  ASSERT_EQ(rootspan_root_get_info(root, &newer.info), ROOTSPAN_OK);
  EXPECT_EQ(newer.info.struct_size, sizeof newer);
  EXPECT_EQ(newer.info.byte_length, 64u);
  EXPECT_STREQ(newer.info.provider, "host");
  EXPECT_EQ(newer.future_field, untouched) << "a field past what the core knows was written";
  EXPECT_EQ(rootspan_root_get_info(root, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
  release(root);
}

}  // namespace
