// Every weights.h call against rootspan_weights_release_component and
// rootspan_weights_free on another thread (rootspan.h: every function is
// safe from any thread; issue 35 item 3): a call that meets a released
// component or freed weights returns a clean status, never reads freed
// memory. Run under ThreadSanitizer by .ci/tsan (WeightsThreads.*); a crash
// or a race report fails it.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "materialize_support.hpp"

namespace rootspan::testing {
namespace {

constexpr std::size_t kTensors = 6;

// The statuses a call may return while another thread releases and frees.
const std::set<rootspan_status> kClean = {ROOTSPAN_OK, ROOTSPAN_ERR_BUSY, ROOTSPAN_ERR_INVALID_ARGUMENT,
                                          ROOTSPAN_ERR_NOT_FOUND};

// One pass of every reading call on `weights`; counts the statuses that are
// not clean, and those that said the handle is gone.
void call_everything(rootspan_weights *weights, std::atomic<int> &unclean, std::atomic<int> &gone) {
  auto seen = [&](rootspan_status status) {
    if (!kClean.contains(status)) ++unclean;
    if (status == ROOTSPAN_ERR_INVALID_ARGUMENT) ++gone;
  };
  // `error` by reference: read after the call that fills it (the order in
  // which arguments are evaluated is unspecified).
  auto seen_error = [&](rootspan_status status, rootspan_error *&error) {
    seen(status);
    rootspan_error_free(error);
    error = nullptr;
  };
  std::size_t count = 0;
  seen(rootspan_weights_component_count(weights, &count));
  std::uint64_t bytes = 0;
  seen(rootspan_weights_bytes_read(weights, &bytes));
  (void)rootspan_weights_provider(weights);
  std::size_t skipped = 0;
  seen(rootspan_weights_skipped_count(weights, &skipped));
  seen(rootspan_weights_skipped(weights, 0, nullptr, nullptr));
  for (std::size_t i = 0; i < kTensors; ++i) {
    rootspan_component_info info{};
    info.struct_size = sizeof info;
    seen(rootspan_weights_component(weights, i, &info));
    std::size_t index = 0;
    const std::string id = "t" + std::to_string(i);
    seen(rootspan_weights_find(weights, id.c_str(), &index));
    rootspan_error *error = nullptr;
    seen_error(rootspan_weights_lookup(weights, (id + "x").c_str(), &index, &error), error);
    char hex[65];
    error = nullptr;
    seen_error(rootspan_weights_component_sha256(weights, i, hex, &error), error);
    error = nullptr;
    seen_error(rootspan_weights_source_sha256(weights, i, hex, &error), error);
  }
  char *json = nullptr;
  rootspan_error *error = nullptr;
  seen_error(rootspan_weights_digests(weights, &json, &error), error);
  rootspan_string_free(json);
  json = nullptr;
  error = nullptr;
  seen_error(rootspan_weights_read_report(weights, &json, &error), error);
  rootspan_string_free(json);
}

TEST(WeightsThreads, CallsRacingReleaseAndFreeReturnCleanStatuses) {
  TempDir dir;
  std::vector<TensorSpec> tensors;
  for (std::size_t i = 0; i < kTensors; ++i) tensors.push_back({"t" + std::to_string(i), "F32", {256}});
  const WrittenFile file = write_safetensors(dir, "model.safetensors", tensors, 7);
  rootspan_context *context = nullptr;
  ASSERT_EQ(rootspan_context_create(nullptr, &context, nullptr), ROOTSPAN_OK);
  constexpr int kRounds = 30;
  constexpr int kReaders = 4;
  for (int round = 0; round < kRounds; ++round) {
    rootspan_load_options o{};
    o.struct_size = sizeof o;
    o.provider = "host";
    o.strategy = round % 2 == 0 ? ROOTSPAN_LOAD_MMAP : ROOTSPAN_LOAD_READ;
    o.source_digests = 1;
    rootspan_weights *weights = nullptr;
    rootspan_error *raw = nullptr;
    ASSERT_EQ(rootspan_weights_load(context, file.path.c_str(), &o, &weights, &raw), ROOTSPAN_OK) << describe(raw);

    std::atomic<bool> done{false};
    std::atomic<int> unclean{0}, gone{0};
    std::vector<std::thread> readers;
    for (int r = 0; r < kReaders; ++r) {
      readers.emplace_back([&] {
        do {
          call_everything(weights, unclean, gone);
        } while (!done.load());
        call_everything(weights, unclean, gone);  // once more, after the free
      });
    }
    // Every component released, then the weights freed, retrying while a
    // reader's hash claims a root (Busy, nothing released).
    for (std::size_t i = 0; i < kTensors; ++i) {
      rootspan_status status;
      while ((status = rootspan_weights_release_component(weights, i, nullptr)) == ROOTSPAN_ERR_BUSY) {
        std::this_thread::yield();
      }
      EXPECT_EQ(status, ROOTSPAN_OK);
    }
    rootspan_status status;
    while ((status = rootspan_weights_free(weights, nullptr)) == ROOTSPAN_ERR_BUSY) std::this_thread::yield();
    EXPECT_EQ(status, ROOTSPAN_OK);
    done = true;
    for (std::thread &reader : readers) reader.join();
    EXPECT_EQ(unclean.load(), 0) << "round " << round << ": a call returned a status outside OK, Busy, "
                                 << "InvalidArgument and NotFound";
    EXPECT_GT(gone.load(), 0) << "the readers' last pass met the freed weights";

    // Freed: every call says so, and a second free is refused, not a double free.
    std::size_t count = 0;
    EXPECT_EQ(rootspan_weights_component_count(weights, &count), ROOTSPAN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(rootspan_weights_provider(weights), nullptr);
    rootspan_error *error = nullptr;
    EXPECT_EQ(rootspan_weights_free(weights, &error), ROOTSPAN_ERR_INVALID_ARGUMENT);
    ASSERT_NE(error, nullptr);
    EXPECT_NE(std::string(rootspan_error_message(error)).find("not a live handle"), std::string::npos)
        << rootspan_error_message(error);
    rootspan_error_free(error);
    char hex[65];
    EXPECT_EQ(rootspan_weights_component_sha256(weights, 0, hex, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
  }
  std::uint64_t live = 0;
  EXPECT_EQ(rootspan_context_destroy(context, &live), ROOTSPAN_OK);
  EXPECT_EQ(live, 0u);
}

// A hash in flight claims its root: a release meanwhile is Busy and
// releases nothing, and the hash still gives the right digest.
TEST(WeightsThreads, AReleaseDuringAHashIsBusyNotAFreedRoot) {
  TempDir dir;
  const WrittenFile file = write_safetensors(dir, "model.safetensors", {{"big", "U8", {16 << 20}}}, 3);
  rootspan_context *context = nullptr;
  ASSERT_EQ(rootspan_context_create(nullptr, &context, nullptr), ROOTSPAN_OK);
  rootspan_load_options o{};
  o.struct_size = sizeof o;
  o.provider = "host";
  o.strategy = ROOTSPAN_LOAD_READ;
  o.source_digests = 1;
  rootspan_weights *weights = nullptr;
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_weights_load(context, file.path.c_str(), &o, &weights, &raw), ROOTSPAN_OK) << describe(raw);
  char expected[65];
  ASSERT_EQ(rootspan_weights_source_sha256(weights, 0, expected, nullptr), ROOTSPAN_OK);

  std::atomic<bool> hashing{false};
  rootspan_status hashed = ROOTSPAN_OK;
  char hex[65] = {};
  std::thread hasher([&] {
    hashing = true;
    hashed = rootspan_weights_component_sha256(weights, 0, hex, nullptr);
    hashing = false;
  });
  while (!hashing.load()) std::this_thread::yield();
  rootspan_status status;
  while ((status = rootspan_weights_release_component(weights, 0, nullptr)) == ROOTSPAN_ERR_BUSY) {
    std::this_thread::yield();
  }
  hasher.join();
  EXPECT_EQ(status, ROOTSPAN_OK);
  // The release either came first (the hash then refused: released), or waited out the hash.
  if (hashed == ROOTSPAN_OK) {
    EXPECT_STREQ(hex, expected);
  } else {
    EXPECT_EQ(hashed, ROOTSPAN_ERR_INVALID_ARGUMENT);
  }
  EXPECT_EQ(rootspan_weights_free(weights, nullptr), ROOTSPAN_OK);
  std::uint64_t live = 0;
  EXPECT_EQ(rootspan_context_destroy(context, &live), ROOTSPAN_OK);
  EXPECT_EQ(live, 0u);
}

}  // namespace
}  // namespace rootspan::testing
