// struct_size made mechanical (docs/c-api.md): a struct's published size is the
// end of its last field (ROOTSPAN_<NAME>_STRUCT_SIZE); a reader refuses a
// size below the first published version or one that ends inside a field,
// with InvalidArgument naming the struct, the expected and the actual size,
// and never reads half a field.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "rootspan/rootspan.h"
#include "rootspan/weights.h"
#include "test_support.hpp"

namespace {

using rootspan::testing::CoreTest;
using rootspan::testing::Err;

class StructSize : public CoreTest {};

void expect_refused(const Err &e, const std::string &type, std::size_t expected, std::size_t actual) {
  EXPECT_EQ(e.code(), ROOTSPAN_ERR_INVALID_ARGUMENT) << e.message();
  EXPECT_NE(e.cause().find(type + ": expected " + std::to_string(expected) + ", actual " + std::to_string(actual)),
            std::string::npos)
      << e.message();
  std::uint64_t want = 0, got = 0;
  ASSERT_TRUE(e.values(&want, &got)) << e.message();
  EXPECT_EQ(want, expected);
  EXPECT_EQ(got, actual);
}

TEST_F(StructSize, PublishedSizesEndAtTheLastField) {
  EXPECT_EQ(ROOTSPAN_ALLOCATE_OPTIONS_STRUCT_SIZE, offsetof(rootspan_allocate_options, dtype) + sizeof(rootspan_dtype));
  EXPECT_LT(ROOTSPAN_ALLOCATE_OPTIONS_STRUCT_SIZE, sizeof(rootspan_allocate_options));  // padding left out
  EXPECT_EQ(ROOTSPAN_HOST_IMPORT_STRUCT_SIZE, sizeof(rootspan_host_import));
  EXPECT_EQ(ROOTSPAN_COMPONENT_INFO_STRUCT_SIZE,
            offsetof(rootspan_component_info, source_contiguous) + sizeof(std::int32_t));
  EXPECT_LT(ROOTSPAN_COMPONENT_INFO_STRUCT_SIZE, sizeof(rootspan_component_info));  // padding left out
}

// Every struct's list of published sizes (ROOTSPAN_<NAME>_PUBLISHED_SIZES,
// beside its LAST_FIELD) grows oldest first and ends at its newest size: a
// field appended without listing the new size fails here.
template <std::size_t N>
constexpr bool grows_to(const std::size_t (&sizes)[N], std::size_t newest) {
  for (std::size_t i = 1; i < N; ++i) {
    if (sizes[i] <= sizes[i - 1]) return false;
  }
  return sizes[N - 1] == newest;
}
#define ROOTSPAN_EXPECT_PUBLISHED(NAME)                                       \
  do {                                                                        \
    constexpr std::size_t published[] = {ROOTSPAN_##NAME##_PUBLISHED_SIZES};  \
    EXPECT_TRUE(grows_to(published, ROOTSPAN_##NAME##_STRUCT_SIZE)) << #NAME; \
  } while (false)

TEST_F(StructSize, EachPublishedSizeListEndsAtTheNewestSize) {
  ROOTSPAN_EXPECT_PUBLISHED(REQUESTED);
  ROOTSPAN_EXPECT_PUBLISHED(SPAN);
  ROOTSPAN_EXPECT_PUBLISHED(CONTEXT_OPTIONS);
  ROOTSPAN_EXPECT_PUBLISHED(PROVIDER_REPORT);
  ROOTSPAN_EXPECT_PUBLISHED(ROOT_INFO);
  ROOTSPAN_EXPECT_PUBLISHED(ALLOCATE_OPTIONS);
  ROOTSPAN_EXPECT_PUBLISHED(HOST_IMPORT);
  ROOTSPAN_EXPECT_PUBLISHED(DEVICE_INFO);
  ROOTSPAN_EXPECT_PUBLISHED(DEVICE_ACCESS_REQUEST);
  ROOTSPAN_EXPECT_PUBLISHED(DEVICE_ACCESS);
  ROOTSPAN_EXPECT_PUBLISHED(LOAD_OPTIONS);
  ROOTSPAN_EXPECT_PUBLISHED(COMPONENT_INFO);
  ROOTSPAN_EXPECT_PUBLISHED(INSPECT_OPTIONS);
  constexpr std::size_t load[] = {ROOTSPAN_LOAD_OPTIONS_PUBLISHED_SIZES};
  EXPECT_EQ(std::size(load), 10u)
      << "0.1.0, three 0.2.0 groups, 0.3.0, 0.4.0, 0.5.0, 0.6.0, two 0.7.0 groups (signed models, populate_when_cold)";
}
#undef ROOTSPAN_EXPECT_PUBLISHED

TEST_F(StructSize, AllocateOptionsEndingInsideTheProviderPointerAreRefused) {
  rootspan_allocate_options o = rootspan::testing::allocate_options("host", 64);
  o.struct_size = offsetof(rootspan_allocate_options, provider) + 4;
  rootspan_root *root = nullptr;
  Err e;
  ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  expect_refused(e, "rootspan_allocate_options", ROOTSPAN_ALLOCATE_OPTIONS_STRUCT_SIZE, o.struct_size);
  EXPECT_EQ(root, nullptr);
}

TEST_F(StructSize, AHostImportCuttingTheDeleterIsRefusedAndTheDeleterIsNotCalled) {
  alignas(64) static unsigned char buffer[64];
  int deleted = 0;
  rootspan_host_import i = rootspan::testing::host_import(buffer, 64, 64, ROOTSPAN_DTYPE_NONE, &deleted);
  i.struct_size = offsetof(rootspan_host_import, deleter) + 4;
  rootspan_root *root = nullptr;
  Err e;
  ASSERT_EQ(rootspan_root_import_host(context_, &i, &root, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  expect_refused(e, "rootspan_host_import", ROOTSPAN_HOST_IMPORT_STRUCT_SIZE, i.struct_size);
  EXPECT_EQ(root, nullptr);
  EXPECT_EQ(deleted, 0) << "half a deleter pointer must never be called";
}

TEST_F(StructSize, SizesBelowTheFirstPublishedVersionAreRefused) {
  rootspan_allocate_options o = rootspan::testing::allocate_options("host", 64);
  rootspan_root *root = nullptr;
  Err e;
  for (std::size_t size : {std::size_t{0}, sizeof(std::size_t), offsetof(rootspan_allocate_options, dtype)}) {
    o.struct_size = size;
    ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT) << size;
    expect_refused(e, "rootspan_allocate_options", ROOTSPAN_ALLOCATE_OPTIONS_STRUCT_SIZE, size);
  }
  rootspan_span span{};
  span.struct_size = offsetof(rootspan_span, alignment) + 2;
  rootspan_root *good = allocate("host", 64);
  ASSERT_EQ(rootspan_span_derive(good, 0, 8, &span, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  expect_refused(e, "rootspan_span", ROOTSPAN_SPAN_STRUCT_SIZE, span.struct_size);
  release(good);
}

TEST_F(StructSize, ThePublishedSizeAndLargerNewerSizesAreRead) {
  rootspan_allocate_options o = rootspan::testing::allocate_options("host", 64);
  for (std::size_t size : {std::size_t{ROOTSPAN_ALLOCATE_OPTIONS_STRUCT_SIZE}, sizeof o}) {
    o.struct_size = size;
    rootspan_root *root = nullptr;
    Err e;
    ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_OK) << size << ": " << e.message();
    release(root);
  }
}

TEST_F(StructSize, OutputStructsEndingInsideAFieldAreRefusedAndLeftUnwritten) {
  rootspan_root *root = allocate("host", 64);
  rootspan_root_info info{};
  info.struct_size = offsetof(rootspan_root_info, provider) + 4;
  info.provider = nullptr;
  EXPECT_EQ(rootspan_root_get_info(root, &info), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(info.root_id, 0u);
  rootspan_provider_report report{};
  report.struct_size = offsetof(rootspan_provider_report, name) + 1;
  EXPECT_EQ(rootspan_provider_report_get(context_, 0, &report), ROOTSPAN_ERR_INVALID_ARGUMENT);
  rootspan_device_info device{};
  device.struct_size = offsetof(rootspan_device_info, free_memory_bytes) + 4;
  Err e;
  EXPECT_EQ(rootspan_provider_device_info(context_, "host", 0, &device, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  expect_refused(e, "rootspan_device_info", ROOTSPAN_DEVICE_INFO_STRUCT_SIZE, device.struct_size);
  EXPECT_EQ(device.total_memory_bytes, 0u);
  release(root);
}

TEST_F(StructSize, DeviceAccessStructsAreCheckedToo) {
  add(rootspan::testing::device_sim_entry);
  rootspan_root *root = allocate("device-sim", 64);
  rootspan_claim *c = claim(root, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  const rootspan_root_info info = rootspan::testing::info_of(root);
  const std::uint64_t shape[] = {16};
  const std::int64_t strides[] = {1};
  rootspan_device_access_request request{};
  request.struct_size = offsetof(rootspan_device_access_request, strides) + 4;
  request.key = info.key;
  request.byte_length = 64;
  request.element_size = 4;
  request.rank = 1;
  request.shape = shape;
  request.strides = strides;
  rootspan_device_access access{};
  access.struct_size = ROOTSPAN_DEVICE_ACCESS_STRUCT_SIZE;
  Err e;
  ASSERT_EQ(rootspan_device_access_prepare(c, &request, &access, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  expect_refused(e, "rootspan_device_access_request", ROOTSPAN_DEVICE_ACCESS_REQUEST_STRUCT_SIZE, request.struct_size);
  request.struct_size = ROOTSPAN_DEVICE_ACCESS_REQUEST_STRUCT_SIZE;
  access.struct_size = offsetof(rootspan_device_access, stream) + 4;
  ASSERT_EQ(rootspan_device_access_prepare(c, &request, &access, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  expect_refused(e, "rootspan_device_access", ROOTSPAN_DEVICE_ACCESS_STRUCT_SIZE, access.struct_size);
  EXPECT_EQ(rootspan::testing::counters().prepare.load(), 0);
  release(c);
  release(root);
}

TEST_F(StructSize, LoadOptionsEndingInsideAFieldAreRefused) {
  rootspan_load_options o{};
  o.struct_size = offsetof(rootspan_load_options, progress) + 4;
  rootspan_weights *weights = nullptr;
  Err e;
  ASSERT_EQ(rootspan_weights_load(context_, "/nonexistent.safetensors", &o, &weights, e.out()),
            ROOTSPAN_ERR_INVALID_ARGUMENT);
  expect_refused(e, "rootspan_load_options", ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE, o.struct_size);
  EXPECT_EQ(weights, nullptr);
  // An out-of-range enum is InvalidArgument naming the value.
  o.struct_size = ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE;
  o.strategy = 7;
  ASSERT_EQ(rootspan_weights_load(context_, "/nonexistent.safetensors", &o, &weights, e.out()),
            ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e.cause(), "strategy 7 is not a rootspan_load_strategy value");
  EXPECT_EQ(weights, nullptr);
}

}  // namespace
