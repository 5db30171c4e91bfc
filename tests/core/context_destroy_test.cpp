// Destroying a context with live handles: every live mapping is unmapped and
// every live device access released through the provider before the
// allocation under it is released.
#include <gtest/gtest.h>

#include "test_support.hpp"

namespace {

using rootspan::testing::CoreTest;
using rootspan::testing::counters;
using rootspan::testing::Err;

class ContextDestroy : public CoreTest {};

TEST_F(ContextDestroy, LiveMappingsAreUnmappedBeforeTheirRootIsReleased) {
  add(rootspan::testing::test_provider_entry);
  rootspan_root *root = allocate("test", 128);
  rootspan_claim *reader = claim(root, 0, 64, ROOTSPAN_CLAIM_SHARED);
  rootspan_claim *writer = claim(root, 64, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_mapping *a = nullptr;
  rootspan_mapping *b = nullptr;
  rootspan_mapping *c = nullptr;
  Err e;
  ASSERT_EQ(rootspan_map_read(reader, ROOTSPAN_DTYPE_NONE, 0, 64, &a, e.out()), ROOTSPAN_OK) << e.message();
  ASSERT_EQ(rootspan_map_read(reader, ROOTSPAN_DTYPE_NONE, 0, 32, &b, e.out()), ROOTSPAN_OK) << e.message();
  ASSERT_EQ(rootspan_map_write(writer, ROOTSPAN_DTYPE_NONE, 0, 64, &c, e.out()), ROOTSPAN_OK) << e.message();
  ASSERT_EQ(counters().map.load(), 3);
  EXPECT_EQ(destroy_context(), 1u);
  EXPECT_EQ(counters().unmap.load(), 3) << "live mappings were not unmapped through the provider";
  EXPECT_EQ(counters().unmap_after_release.load(), 0) << "a mapping was unmapped after its allocation was released";
  EXPECT_EQ(counters().release.load(), 1);
}

TEST_F(ContextDestroy, LiveDeviceAccessesAreReleasedBeforeTheirRootIsReleased) {
  add(rootspan::testing::device_sim_entry);
  rootspan_root *root = allocate("device-sim", 64);
  rootspan_claim *c = claim(root, 0, 64, ROOTSPAN_CLAIM_SHARED);
  const rootspan_root_info info = rootspan::testing::info_of(root);
  const std::uint64_t shape[] = {16};
  const std::int64_t strides[] = {1};
  rootspan_device_access_request request{};
  request.struct_size = ROOTSPAN_DEVICE_ACCESS_REQUEST_STRUCT_SIZE;
  request.key = info.key;
  request.byte_length = 64;
  request.element_size = 4;
  request.rank = 1;
  request.shape = shape;
  request.strides = strides;
  Err e;
  for (int i = 0; i < 2; ++i) {
    rootspan_device_access access{};
    access.struct_size = ROOTSPAN_DEVICE_ACCESS_STRUCT_SIZE;
    ASSERT_EQ(rootspan_device_access_prepare(c, &request, &access, e.out()), ROOTSPAN_OK) << e.message();
  }
  ASSERT_EQ(counters().prepare.load(), 2);
  EXPECT_EQ(destroy_context(), 1u);
  EXPECT_EQ(counters().release_access.load(), 2) << "live device accesses were not released through the provider";
  EXPECT_EQ(counters().access_released_after_release.load(), 0);
  EXPECT_EQ(counters().release.load(), 1);
}

}  // namespace
