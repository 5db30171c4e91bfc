// The fixture the *_c_api_test.cpp suites share: a rootspan_context made in
// SetUp and destroyed in TearDown (which frees what is loaded and checks that
// no root is left live), rootspan_weights_load into weights_ with the error
// kept in error_, and default load options (host provider). A suite derives
// from it and keeps only its own checkpoint files and helpers;
// UploadCApiLoadTest adds the in-process upload provider.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/c_api_support.hpp"  // rootspan_context -> Context, for live_roots()
#include "materialize_support.hpp"
#include "tests/support/upload_provider.hpp"

namespace rootspan::testing {

class CApiLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rootspan_error *raw = nullptr;
    ASSERT_EQ(rootspan_context_create(nullptr, &context_, &raw), ROOTSPAN_OK) << describe(raw);
  }

  void TearDown() override {
    free_weights();
    if (context_ != nullptr) {
      std::uint64_t live = 0;
      EXPECT_EQ(rootspan_context_destroy(context_, &live), ROOTSPAN_OK);
      EXPECT_EQ(live, 0u) << "roots were left live at the end of the test";
    }
  }

  void free_weights() {
    if (weights_ != nullptr) {
      rootspan_error *raw = nullptr;
      EXPECT_EQ(rootspan_weights_free(weights_, &raw), ROOTSPAN_OK) << describe(raw);
      rootspan_error_free(raw);
    }
    weights_ = nullptr;
  }

  // struct_size and the provider; everything else zero.
  static rootspan_load_options options(const char *provider = "host") {
    rootspan_load_options o{};
    o.struct_size = sizeof o;
    o.provider = provider;
    return o;
  }

  // Frees what was loaded, loads into weights_ and keeps the error in error_.
  rootspan_status load(const fs::path &path, const rootspan_load_options &o) {
    free_weights();
    rootspan_error *raw = nullptr;
    const rootspan_status status = rootspan_weights_load(context_, path.c_str(), &o, &weights_, &raw);
    error_.reset(raw);
    if (status != ROOTSPAN_OK) {
      EXPECT_EQ(weights_, nullptr) << "weights set on failure";
    }
    return status;
  }

  // The last error's message; empty when the last call succeeded.
  std::string message() const { return error_ ? rootspan_error_message(error_.get()) : std::string(); }

  std::size_t live_roots() const { return context_->context->live_roots(); }

  rootspan_context *context_ = nullptr;
  rootspan_weights *weights_ = nullptr;
  ErrorPtr error_;
};

// With the upload provider (tests/support/upload_provider.hpp) added to the
// context, reset before each test and with no block left live after it.
class UploadCApiLoadTest : public CApiLoadTest {
 protected:
  void SetUp() override {
    upload_reset();
    ASSERT_NO_FATAL_FAILURE(CApiLoadTest::SetUp());
    rootspan_error *raw = nullptr;
    ASSERT_EQ(rootspan_context_add_provider(context_, upload_entry, nullptr, &raw), ROOTSPAN_OK) << describe(raw);
  }

  void TearDown() override {
    CApiLoadTest::TearDown();
    EXPECT_EQ(upload_live_blocks(), 0);
  }
};

}  // namespace rootspan::testing
