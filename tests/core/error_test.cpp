// docs/concepts.md Diagnostics through the C API: every status code has a
// name; the error object's accessors (code, operation, message, cause,
// policy, requested, resolution, values) and its free function; NULL error
// pointers; element type names and sizes.
#include <limits>
#include <string>

#include "test_support.hpp"

namespace {

using namespace rootspan::testing;

TEST(StatusNames, EveryCodeHasItsName) {
  const char *names[] = {"Ok",
                         "InvalidArgument",
                         "RangeOverflow",
                         "InvalidAlignment",
                         "MisalignedOffset",
                         "OffsetOverflow",
                         "OutsideRootExtent",
                         "InvalidKey",
                         "DomainNotGranted",
                         "DuplicateIdentity",
                         "RootIdExhausted",
                         "Busy",
                         "ReadOnly",
                         "Conflict",
                         "DTypeMismatch",
                         "LengthMismatch",
                         "Misaligned",
                         "Unsupported",
                         "InvalidRequest",
                         "ProviderFailure",
                         "NotFound",
                         "OutOfMemory",
                         "InvalidManifest",
                         "PluginRejected",
                         "AbiMismatch",
                         "NoProvider",
                         "Io",
                         "InvalidCheckpoint",
                         "InvalidSchema",
                         "InvalidPayload",
                         "Cancelled",
                         "DigestMismatch",
                         "SignatureInvalid"};
  static_assert(ROOTSPAN_ERR_SIGNATURE_INVALID == 32);
  for (rootspan_status s = 0; s <= ROOTSPAN_ERR_SIGNATURE_INVALID; ++s) {
    EXPECT_STREQ(rootspan_status_name(s), names[s]) << s;
  }
  EXPECT_STREQ(rootspan_status_name(33), "Unknown");
  EXPECT_STREQ(rootspan_status_name(-1), "Unknown");
  // The pinned numbers of docs/concepts.md codes.
  EXPECT_EQ(ROOTSPAN_ERR_RANGE_OVERFLOW, 2);
  EXPECT_EQ(ROOTSPAN_ERR_CONFLICT, 13);
  EXPECT_EQ(ROOTSPAN_ERR_INVALID_REQUEST, 18);
}

TEST(DTypes, NamesAndSizes) {
  EXPECT_STREQ(rootspan_dtype_name(ROOTSPAN_DTYPE_F32), "F32");
  EXPECT_STREQ(rootspan_dtype_name(ROOTSPAN_DTYPE_C32), "C32");
  EXPECT_STREQ(rootspan_dtype_name(ROOTSPAN_DTYPE_NONE), "NONE");
  EXPECT_STREQ(rootspan_dtype_name(999), "unknown");
  EXPECT_EQ(rootspan_dtype_size(ROOTSPAN_DTYPE_NONE), 0u);
  EXPECT_EQ(rootspan_dtype_size(ROOTSPAN_DTYPE_BOOL), 1u);
  EXPECT_EQ(rootspan_dtype_size(ROOTSPAN_DTYPE_BF16), 2u);
  EXPECT_EQ(rootspan_dtype_size(ROOTSPAN_DTYPE_F32), 4u);
  EXPECT_EQ(rootspan_dtype_size(ROOTSPAN_DTYPE_C32), 8u);
  EXPECT_EQ(rootspan_dtype_size(ROOTSPAN_DTYPE_C64), 16u);
  EXPECT_EQ(rootspan_dtype_size(ROOTSPAN_DTYPE_F4), 0u);
  EXPECT_EQ(rootspan_dtype_size(ROOTSPAN_DTYPE_F6_E2M3), 0u);
  EXPECT_EQ(rootspan_dtype_size(-3), 0u);
  EXPECT_STREQ(rootspan_version(), "0.7.0");
}

TEST(ErrorObject, AccessorsOnNullAreSafe) {
  EXPECT_EQ(rootspan_error_code(nullptr), ROOTSPAN_ERR_OUT_OF_MEMORY);
  EXPECT_STREQ(rootspan_error_operation(nullptr), "");
  EXPECT_STREQ(rootspan_error_cause(nullptr), "");
  EXPECT_STREQ(rootspan_error_policy(nullptr), "");
  EXPECT_NE(rootspan_error_message(nullptr), nullptr);
  rootspan_requested r{};
  r.struct_size = sizeof r;
  EXPECT_EQ(rootspan_error_requested(nullptr, &r), ROOTSPAN_ERR_INVALID_ARGUMENT);
  rootspan_span s{};
  s.struct_size = sizeof s;
  EXPECT_EQ(rootspan_error_resolution(nullptr, &s), 0);
  std::uint64_t a = 0, b = 0;
  EXPECT_EQ(rootspan_error_values(nullptr, &a, &b), 0);
  rootspan_error_free(nullptr);
}

class Errors : public CoreTest {};

TEST_F(Errors, EveryFieldOfAConflict) {
  rootspan_root *root = allocate("host", 128);
  rootspan_claim *x = claim(root, 0, 96, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_claim *c = nullptr;
  rootspan_error *error = nullptr;
  ASSERT_EQ(rootspan_claim_acquire(root, 64, 64, ROOTSPAN_CLAIM_SHARED, &c, &error), ROOTSPAN_ERR_CONFLICT);
  ASSERT_NE(error, nullptr);
  const rootspan_root_info info = info_of(root);
  EXPECT_EQ(rootspan_error_code(error), ROOTSPAN_ERR_CONFLICT);
  EXPECT_STREQ(rootspan_error_operation(error), "claim_acquire");
  EXPECT_STREQ(rootspan_error_cause(error), "conflict with exclusive claim [0,96)");
  EXPECT_STREQ(rootspan_error_policy(error), "");
  // The very shape of docs/concepts.md example, with this root's id and key.
  EXPECT_EQ(std::string(rootspan_error_message(error)),
            "claim_acquire for root " + str(info.root_id) + " key (" + str(info.key.domain) + "," +
                str(info.key.local) + ") range [64,128): unresolved: conflict with exclusive claim [0,96)");
  rootspan_requested r{};
  r.struct_size = sizeof r;
  ASSERT_EQ(rootspan_error_requested(error, &r), ROOTSPAN_OK);
  EXPECT_EQ(r.kind, ROOTSPAN_REQUESTED_ROOT_KEY_RANGE);
  EXPECT_EQ(r.root_id, info.root_id);
  EXPECT_EQ(r.key.domain, info.key.domain);
  EXPECT_EQ(r.key.local, info.key.local);
  EXPECT_EQ(r.offset, 64u);
  EXPECT_EQ(r.length, 64u);
  EXPECT_EQ(rootspan_error_resolution(error, nullptr), 0);
  std::uint64_t a = 5, b = 6;
  EXPECT_EQ(rootspan_error_values(error, &a, &b), 0);
  EXPECT_EQ(a, 5u) << "untouched when there are no values";
  // A size below the struct's first published version is refused, unwritten.
  rootspan_requested small{};
  small.struct_size = offsetof(rootspan_requested, key);
  small.offset = 777;
  ASSERT_EQ(rootspan_error_requested(error, &small), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(small.root_id, 0u);
  EXPECT_EQ(small.offset, 777u);
  small.struct_size = 0;
  EXPECT_EQ(rootspan_error_requested(error, &small), ROOTSPAN_ERR_INVALID_ARGUMENT);
  rootspan_error_free(error);
  release(x);
  release(root);
}

TEST_F(Errors, ResolutionAndValuesWhenPresent) {
  rootspan_root *root = allocate("host", 64);
  rootspan_claim *c = claim(root, 16, 32, ROOTSPAN_CLAIM_SHARED);
  rootspan_mapping *m = nullptr;
  Err e;
  ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_NONE, 0, 32, &m, e.out()), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_claim_release(c, e.out()), ROOTSPAN_ERR_BUSY);
  rootspan_span s{};
  s.struct_size = sizeof s;
  ASSERT_EQ(rootspan_error_resolution(e.get(), &s), 1);
  EXPECT_EQ(s.root_id, info_of(root).root_id);
  EXPECT_EQ(s.offset, 16u);
  EXPECT_EQ(s.length, 32u);
  EXPECT_EQ(s.alignment, 16u);
  EXPECT_EQ(rootspan_error_resolution(e.get(), nullptr), 1) << "NULL span: only whether it resolved";
  rootspan_unmap(m);
  release(c);
  ASSERT_EQ(rootspan_span_derive(root, 60, 8, &s, e.out()), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  std::uint64_t expected = 0, actual = 0;
  EXPECT_EQ(rootspan_error_values(e.get(), &expected, &actual), 1);
  EXPECT_EQ(expected, 64u);
  EXPECT_EQ(actual, 68u);
  EXPECT_EQ(rootspan_error_values(e.get(), nullptr, nullptr), 1);
  release(root);
}

TEST_F(Errors, ANullErrorPointerStillReturnsTheCode) {
  rootspan_root *root = allocate("host", 64);
  rootspan_span s{};
  s.struct_size = sizeof s;
  EXPECT_EQ(rootspan_span_derive(root, 0, 65, &s, nullptr), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  rootspan_claim *c = nullptr;
  EXPECT_EQ(rootspan_claim_acquire(root, 0, 65, ROOTSPAN_CLAIM_SHARED, &c, nullptr), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  EXPECT_EQ(c, nullptr);
  release(root);
}

TEST_F(Errors, ARequestedRangeWhoseEndOverflowsIsNotPrintedWrapped) {
  // Regression test for a bug once in core/diagnostic.cpp.
  rootspan_root *root = allocate("host", 64);
  rootspan_span s{};
  s.struct_size = sizeof s;
  Err e;
  ASSERT_EQ(rootspan_span_derive(root, std::numeric_limits<std::uint64_t>::max(), 1, &s, e.out()),
            ROOTSPAN_ERR_RANGE_OVERFLOW);
  EXPECT_EQ(e.message().find("range [18446744073709551615,0)"), std::string::npos) << e.message();
  release(root);
}

}  // namespace
