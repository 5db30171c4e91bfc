// rootspan_weights_free is all or nothing (weights.h: Busy frees nothing):
// the claim checks and the removal of every component happen as one step,
// so by the time the provider releases the first component, no component is
// left for another thread to claim; and a claimed component frees nothing.
#include <gtest/gtest.h>

#include <vector>

#include "core/c_api_support.hpp"  // rootspan_context -> Context, for live_roots()
#include "materialize_support.hpp"
#include "tests/support/upload_provider.hpp"

namespace rootspan::testing {
namespace {

class WeightsFree : public ::testing::Test {
 protected:
  void SetUp() override {
    upload_reset();
    ASSERT_EQ(rootspan_context_create(nullptr, &context_, nullptr), ROOTSPAN_OK);
    ASSERT_EQ(rootspan_context_add_provider(context_, upload_entry, nullptr, nullptr), ROOTSPAN_OK);
    std::vector<TensorSpec> tensors;
    for (int i = 0; i < 6; ++i) tensors.push_back({"t" + std::to_string(i), "U8", {64}});
    file_ = write_safetensors(dir_, "model.safetensors", tensors, 3);
    rootspan_load_options o{};
    o.struct_size = ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE;
    o.provider = kUploadProviderName;
    rootspan_error *raw = nullptr;
    ASSERT_EQ(rootspan_weights_load(context_, file_.path.c_str(), &o, &weights_, &raw), ROOTSPAN_OK) << describe(raw);
  }
  void TearDown() override {
    upload_behaviour().on_release = nullptr;
    if (weights_ != nullptr) {
      EXPECT_EQ(rootspan_weights_free(weights_, nullptr), ROOTSPAN_OK);
    }
    EXPECT_EQ(rootspan_context_destroy(context_, nullptr), ROOTSPAN_OK);
    EXPECT_EQ(upload_live_blocks(), 0);
  }

  rootspan_root *root(std::size_t index) const {
    rootspan_component_info info{};
    info.struct_size = ROOTSPAN_COMPONENT_INFO_STRUCT_SIZE;
    EXPECT_EQ(rootspan_weights_component(weights_, index, &info), ROOTSPAN_OK);
    return info.root;
  }

  TempDir dir_;
  WrittenFile file_;
  rootspan_context *context_ = nullptr;
  rootspan_weights *weights_ = nullptr;
};

TEST_F(WeightsFree, EveryComponentLeavesTheContextBeforeTheFirstIsReleased) {
  std::vector<std::size_t> live_at_release;
  upload_behaviour().on_release = [&] { live_at_release.push_back(context_->context->live_roots()); };
  ASSERT_EQ(rootspan_weights_free(weights_, nullptr), ROOTSPAN_OK);
  weights_ = nullptr;
  ASSERT_EQ(live_at_release.size(), 6u);
  for (std::size_t live : live_at_release) {
    EXPECT_EQ(live, 0u) << "a component was still claimable while another was being released";
  }
}

TEST_F(WeightsFree, AClaimOnAnyComponentFreesNothing) {
  for (std::size_t claimed : {std::size_t{0}, std::size_t{5}}) {
    rootspan_claim *claim = nullptr;
    ASSERT_EQ(rootspan_claim_acquire(root(claimed), 0, 64, ROOTSPAN_CLAIM_SHARED, &claim, nullptr), ROOTSPAN_OK);
    rootspan_error *raw = nullptr;
    ASSERT_EQ(rootspan_weights_free(weights_, &raw), ROOTSPAN_ERR_BUSY);
    ErrorPtr busy(raw);
    EXPECT_NE(std::string(rootspan_error_message(busy.get())).find("component \"t" + std::to_string(claimed) + "\""),
              std::string::npos)
        << rootspan_error_message(busy.get());
    EXPECT_EQ(context_->context->live_roots(), 6u);
    EXPECT_EQ(upload_counters().release.load(), 0);
    ASSERT_EQ(rootspan_claim_release(claim, nullptr), ROOTSPAN_OK);
  }
}

}  // namespace
}  // namespace rootspan::testing
