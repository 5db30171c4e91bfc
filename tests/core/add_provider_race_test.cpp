// rootspan_context_add_provider is safe while other threads use the context
// ("every function is safe from any thread"): threads adding providers race
// threads that allocate, look providers up and read reports.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "rootspan/rootspan.h"
#include "tests/support/embedded_providers.hpp"

namespace {

TEST(AddProviderRace, AddingProvidersWhileOthersAllocateAndReadReports) {
  constexpr int kRounds = 40;
  for (int round = 0; round < kRounds; ++round) {
    rootspan_context *context = nullptr;
    ASSERT_EQ(rootspan_context_create(nullptr, &context, nullptr), ROOTSPAN_OK);
    std::atomic<bool> adding{true};
    std::atomic<int> failures{0};
    std::vector<std::thread> users;
    for (int t = 0; t < 3; ++t) {
      users.emplace_back([&, t] {
        rootspan_allocate_options o{};
        o.struct_size = ROOTSPAN_ALLOCATE_OPTIONS_STRUCT_SIZE;
        o.byte_length = 256;
        std::size_t added = 0;
        do {
          // Allocate from host and from whichever named provider exists by now.
          const std::string named = "named-" + std::to_string(added % rootspan::testing::kNamedProviderCount);
          o.provider = t == 0 ? "host" : named.c_str();
          rootspan_root *root = nullptr;
          const rootspan_status s = rootspan_root_allocate(context, &o, &root, nullptr);
          if (s == ROOTSPAN_OK) {
            if (rootspan_root_release(root, nullptr) != ROOTSPAN_OK) ++failures;
          } else if (s != ROOTSPAN_ERR_NOT_FOUND || t == 0) {
            ++failures;
          }
          size_t count = 0;
          rootspan_provider_report_count(context, &count);
          rootspan_provider_report report{};
          report.struct_size = ROOTSPAN_PROVIDER_REPORT_STRUCT_SIZE;
          if (count != 0 && (rootspan_provider_report_get(context, count - 1, &report) != ROOTSPAN_OK ||
                             report.name == nullptr || report.name[0] == '\0')) {
            ++failures;
          }
          added = count;
        } while (adding.load());
      });
    }
    for (std::size_t i = 0; i < rootspan::testing::kNamedProviderCount; ++i) {
      ASSERT_EQ(rootspan_context_add_provider(context, rootspan::testing::named_provider_entry(i), nullptr, nullptr),
                ROOTSPAN_OK);
    }
    adding = false;
    for (std::thread &t : users) t.join();
    EXPECT_EQ(failures.load(), 0) << "round " << round;
    std::uint64_t live = 1;
    EXPECT_EQ(rootspan_context_destroy(context, &live), ROOTSPAN_OK);
    EXPECT_EQ(live, 0u);
  }
}

TEST(AddProviderRace, TwoThreadsAddingTheSameNameLoadItOnce) {
  for (int round = 0; round < 50; ++round) {
    rootspan_context *context = nullptr;
    ASSERT_EQ(rootspan_context_create(nullptr, &context, nullptr), ROOTSPAN_OK);
    std::atomic<int> loaded{0};
    std::atomic<int> refused{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        const rootspan_status s =
            rootspan_context_add_provider(context, rootspan::testing::named_provider_entry(0), nullptr, nullptr);
        ++(s == ROOTSPAN_OK ? loaded : refused);
      });
    }
    for (std::thread &t : threads) t.join();
    EXPECT_EQ(loaded.load(), 1);
    EXPECT_EQ(refused.load(), 3);
    EXPECT_EQ(rootspan_context_destroy(context, nullptr), ROOTSPAN_OK);
  }
}

}  // namespace
