// rootspan_context_create's manifest list: a NULL list with a non-zero count,
// or a NULL path inside it, is InvalidArgument naming what is NULL.
#include <gtest/gtest.h>

#include <string>

#include "rootspan/rootspan.h"
#include "test_support.hpp"

namespace {

using rootspan::testing::Err;

TEST(ContextOptions, ANullManifestListWithACountIsInvalidArgument) {
  rootspan_context_options options{};
  options.struct_size = ROOTSPAN_CONTEXT_OPTIONS_STRUCT_SIZE;
  options.manifests = nullptr;
  options.manifest_count = 3;
  rootspan_context *context = reinterpret_cast<rootspan_context *>(0x1);
  Err e;
  ASSERT_EQ(rootspan_context_create(&options, &context, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(context, nullptr);
  EXPECT_EQ(e.operation(), "context_create");
  EXPECT_EQ(e.cause(), "options.manifests is NULL but options.manifest_count is 3");
}

TEST(ContextOptions, ANullPathInsideTheManifestListIsInvalidArgumentNamingItsIndex) {
  const char *paths[] = {"/nonexistent/first.json", nullptr, "/nonexistent/third.json"};
  rootspan_context_options options{};
  options.struct_size = ROOTSPAN_CONTEXT_OPTIONS_STRUCT_SIZE;
  options.manifests = paths;
  options.manifest_count = 3;
  rootspan_context *context = nullptr;
  Err e;
  ASSERT_EQ(rootspan_context_create(&options, &context, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT) << e.message();
  EXPECT_EQ(context, nullptr);
  EXPECT_EQ(e.cause(), "options.manifests[1] is NULL (of 3 manifest paths)");
}

TEST(ContextOptions, AnEmptyManifestListMayBeNull) {
  rootspan_context_options options{};
  options.struct_size = ROOTSPAN_CONTEXT_OPTIONS_STRUCT_SIZE;
  rootspan_context *context = nullptr;
  Err e;
  ASSERT_EQ(rootspan_context_create(&options, &context, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(rootspan_context_destroy(context, nullptr), ROOTSPAN_OK);
}

}  // namespace
