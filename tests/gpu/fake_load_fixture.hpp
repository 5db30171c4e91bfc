// A context holding the GPU provider over the fake runtime, for the tests
// that load checkpoints into fake device memory, and the check every such
// test ends with: no live root, no fake allocation, and nothing freed or
// destroyed while a copy was pending.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "../materialize/materialize_support.hpp"
#include "fake_runtime.hpp"
#include "plugins/gpu/gpu_provider.hpp"
#include "rootspan/rootspan.h"
#include "rootspan/weights.h"

namespace rootspan::testing {

using FakeProvider = rootspan_gpu::GpuProvider<fake_gpu::Runtime>;

inline const rootspan_provider_table *fake_entry(std::uint32_t, std::uint32_t) { return &FakeProvider::table; }

// Base: ::testing::Test, or ::testing::TestWithParam<...> for a parameterized suite.
template <class Base>
class FakeLoadFixture : public Base {
 protected:
  explicit FakeLoadFixture(std::uint32_t devices) : devices_(devices) {}

  void SetUp() override {
    fake_gpu::reset(devices_);
    rootspan_error *raw = nullptr;
    ASSERT_EQ(rootspan_context_create(nullptr, &context_, &raw), ROOTSPAN_OK) << rootspan::testing::describe(raw);
    ASSERT_EQ(rootspan_context_add_provider(context_, fake_entry, "{}", &raw), ROOTSPAN_OK)
        << rootspan::testing::describe(raw);
  }
  void TearDown() override {
    if (weights_ != nullptr) {
      EXPECT_EQ(rootspan_weights_free(weights_, nullptr), ROOTSPAN_OK);
    }
    std::uint64_t live = 0;
    if (context_ != nullptr) {
      EXPECT_EQ(rootspan_context_destroy(context_, &live), ROOTSPAN_OK);
    }
    EXPECT_EQ(live, 0u);
    EXPECT_TRUE(fake_gpu::state().allocations.empty());
    EXPECT_EQ(fake_gpu::state().pending_at_free, 0);
    EXPECT_EQ(fake_gpu::state().pending_at_destroy, 0);
    EXPECT_EQ(fake_gpu::state().invalid_frees, 0);
  }

  const std::uint32_t devices_;
  rootspan_context *context_ = nullptr;
  rootspan_weights *weights_ = nullptr;
};

}  // namespace rootspan::testing
