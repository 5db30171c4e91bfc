// Shared helpers for the core suites: an owning error handle, a fixture with
// a fresh context and reset test providers, and small wrappers over the C API.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "rootspan/rootspan.h"
#include "tests/support/test_providers.hpp"

namespace rootspan::testing {

// Owns one rootspan_error; out() hands a fresh slot to a C call.
class Err {
 public:
  Err() = default;
  Err(const Err &) = delete;
  Err &operator=(const Err &) = delete;
  ~Err() { rootspan_error_free(error_); }

  rootspan_error **out() {
    rootspan_error_free(error_);
    error_ = nullptr;
    return &error_;
  }
  rootspan_error *get() const { return error_; }
  explicit operator bool() const { return error_ != nullptr; }

  rootspan_status code() const { return rootspan_error_code(error_); }
  std::string message() const { return error_ ? rootspan_error_message(error_) : "(no error)"; }
  std::string cause() const { return error_ ? rootspan_error_cause(error_) : ""; }
  std::string operation() const { return error_ ? rootspan_error_operation(error_) : ""; }
  std::string policy() const { return error_ ? rootspan_error_policy(error_) : ""; }
  rootspan_requested requested() const {
    rootspan_requested r{};
    r.struct_size = sizeof r;
    EXPECT_EQ(rootspan_error_requested(error_, &r), ROOTSPAN_OK);
    return r;
  }
  // Whether the request resolved to a span, and which.
  bool resolution(rootspan_span *span = nullptr) const {
    rootspan_span s{};
    s.struct_size = sizeof s;
    const int resolved = rootspan_error_resolution(error_, &s);
    if (span != nullptr) *span = s;
    return resolved != 0;
  }
  // Whether the cause carries expected and actual values; fills them.
  bool values(std::uint64_t *expected, std::uint64_t *actual) const {
    return rootspan_error_values(error_, expected, actual) != 0;
  }

 private:
  rootspan_error *error_ = nullptr;
};

inline std::string str(std::uint64_t v) { return std::to_string(v); }
inline std::string key_text(rootspan_key key) { return "(" + str(key.domain) + "," + str(key.local) + ")"; }
inline std::string range_text(std::uint64_t begin, std::uint64_t end) {
  return "[" + str(begin) + "," + str(end) + ")";
}

inline rootspan_root_info info_of(const rootspan_root *root) {
  rootspan_root_info info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(rootspan_root_get_info(root, &info), ROOTSPAN_OK);
  return info;
}

// "<op> for root <id> key (<d>,<l>) range [<a>,<b>)" for a root and a range relative to it.
inline std::string root_request(const char *operation, const rootspan_root *root, std::uint64_t begin,
                                std::uint64_t end) {
  const rootspan_root_info info = info_of(root);
  return std::string(operation) + " for root " + str(info.root_id) + " key " + key_text(info.key) + " range " +
         range_text(begin, end);
}

inline rootspan_allocate_options allocate_options(const char *provider, std::uint64_t length,
                                                  std::uint64_t alignment = 64,
                                                  rootspan_dtype dtype = ROOTSPAN_DTYPE_NONE) {
  rootspan_allocate_options o{};
  o.struct_size = sizeof o;
  o.provider = provider;
  o.device = 0;
  o.memory_kind = ROOTSPAN_MEMORY_HOST;
  o.byte_length = length;
  o.alignment = alignment;
  o.dtype = dtype;
  return o;
}

// A deleter that counts its calls per context (an int).
inline void counting_deleter(void *context, void *) { ++*static_cast<int *>(context); }

inline rootspan_host_import host_import(void *data, std::uint64_t length, std::uint64_t alignment,
                                        rootspan_dtype dtype = ROOTSPAN_DTYPE_NONE, int *deleted = nullptr,
                                        bool read_only = false) {
  rootspan_host_import i{};
  i.struct_size = sizeof i;
  i.provider = nullptr;
  i.data = data;
  i.byte_length = length;
  i.alignment = alignment;
  i.dtype = dtype;
  i.read_only = read_only ? 1 : 0;
  i.deleter = deleted ? counting_deleter : nullptr;
  i.deleter_context = deleted;
  return i;
}

// A fixture with a fresh context (static providers: host), test providers
// reset, and a check at the end that every test-provider allocation was
// released exactly once.
class CoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reset();
    Err e;
    ASSERT_EQ(rootspan_context_create(nullptr, &context_, e.out()), ROOTSPAN_OK) << e.message();
  }

  void TearDown() override {
    destroy_context();
    EXPECT_EQ(live_blocks(), 0) << "a test-provider allocation was never released";
    EXPECT_EQ(counters().double_release.load(), 0) << "a test-provider allocation was released twice";
    EXPECT_EQ(counters().allocated.load(), counters().release.load());
    EXPECT_EQ(counters().init.load(), counters().shutdown.load()) << "a started provider was never shut down";
  }

  std::uint64_t destroy_context() {
    std::uint64_t live = 0;
    if (context_ != nullptr) {
      EXPECT_EQ(rootspan_context_destroy(context_, &live), ROOTSPAN_OK);
      context_ = nullptr;
    }
    return live;
  }

  void add(rootspan_provider_entry_fn entry) {
    Err e;
    ASSERT_EQ(rootspan_context_add_provider(context_, entry, nullptr, e.out()), ROOTSPAN_OK) << e.message();
  }

  rootspan_root *allocate(const char *provider, std::uint64_t length, std::uint64_t alignment = 64,
                          rootspan_dtype dtype = ROOTSPAN_DTYPE_NONE) {
    rootspan_allocate_options o = allocate_options(provider, length, alignment, dtype);
    rootspan_root *root = nullptr;
    Err e;
    EXPECT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_OK) << e.message();
    return root;
  }

  rootspan_claim *claim(rootspan_root *root, std::uint64_t offset, std::uint64_t length, rootspan_claim_mode mode) {
    rootspan_claim *c = nullptr;
    Err e;
    EXPECT_EQ(rootspan_claim_acquire(root, offset, length, mode, &c, e.out()), ROOTSPAN_OK) << e.message();
    return c;
  }

  void release(rootspan_claim *c) {
    Err e;
    EXPECT_EQ(rootspan_claim_release(c, e.out()), ROOTSPAN_OK) << e.message();
  }

  void release(rootspan_root *root) {
    Err e;
    EXPECT_EQ(rootspan_root_release(root, e.out()), ROOTSPAN_OK) << e.message();
  }

  rootspan_context *context_ = nullptr;
};

}  // namespace rootspan::testing
