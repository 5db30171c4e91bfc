// Provider report strings live as long as the context (rootspan.h): adding
// providers later must not move them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rootspan/rootspan.h"
#include "tests/support/embedded_providers.hpp"

namespace {

TEST(ReportLifetime, ReportStringsStayPutWhileProvidersAreAdded) {
  rootspan_context *context = nullptr;
  ASSERT_EQ(rootspan_context_create(nullptr, &context, nullptr), ROOTSPAN_OK);
  rootspan_provider_report first{};
  first.struct_size = ROOTSPAN_PROVIDER_REPORT_STRUCT_SIZE;
  ASSERT_EQ(rootspan_provider_report_get(context, 0, &first), ROOTSPAN_OK);
  ASSERT_STREQ(first.name, "host");
  const char *name = first.name;
  const char *kind = first.kind;

  for (std::size_t i = 0; i < rootspan::testing::kNamedProviderCount; ++i) {
    rootspan_error *error = nullptr;
    ASSERT_EQ(rootspan_context_add_provider(context, rootspan::testing::named_provider_entry(i), nullptr, &error),
              ROOTSPAN_OK)
        << rootspan_error_message(error);
  }
  size_t count = 0;
  ASSERT_EQ(rootspan_provider_report_count(context, &count), ROOTSPAN_OK);
  EXPECT_EQ(count, 1 + rootspan::testing::kNamedProviderCount);

  rootspan_provider_report again{};
  again.struct_size = ROOTSPAN_PROVIDER_REPORT_STRUCT_SIZE;
  ASSERT_EQ(rootspan_provider_report_get(context, 0, &again), ROOTSPAN_OK);
  // The very same storage, still holding the same text.
  EXPECT_EQ(again.name, name);
  EXPECT_EQ(again.kind, kind);
  EXPECT_STREQ(name, "host");
  EXPECT_STREQ(kind, "host");
  EXPECT_EQ(rootspan_context_destroy(context, nullptr), ROOTSPAN_OK);
}

}  // namespace
