// rootspan_provider_choose through the C API (the rule itself is tested over
// reports in tests/loader/provider_choice_test.cpp): an embedded provider that
// starts without a device is reported as NO_DEVICE with its reason, keeps its
// name, and is passed over by "auto"; bad arguments are refused by name.
#include <cstring>
#include <string>

#include "test_support.hpp"

namespace {

using namespace rootspan::testing;

class ProviderChoiceApi : public CoreTest {
 protected:
  // Chooses; returns the status, and the name and explanation on success.
  rootspan_status choose(const char *requested, std::uint32_t device, std::string *name, std::string *why, Err &e) {
    rootspan_provider_choice *choice = nullptr;
    const rootspan_status status = rootspan_provider_choose(context_, requested, device, &choice, e.out());
    if (status == ROOTSPAN_OK) {
      *name = rootspan_provider_choice_name(choice);
      *why = rootspan_provider_choice_explanation(choice);
    } else {
      EXPECT_EQ(choice, nullptr);
    }
    rootspan_provider_choice_free(choice);
    return status;
  }
};

TEST_F(ProviderChoiceApi, AProviderWithoutADeviceIsReportedAndPassedOver) {
  behaviour().device_count = 0;
  behaviour().device_note = "testGetDeviceCount: no test device is attached";
  add(test_provider_entry);
  rootspan_provider_report r{};
  r.struct_size = sizeof r;
  ASSERT_EQ(rootspan_provider_report_get(context_, 1, &r), ROOTSPAN_OK);
  EXPECT_STREQ(r.name, "test");
  EXPECT_EQ(r.state, ROOTSPAN_PROVIDER_NO_DEVICE);
  EXPECT_EQ(r.device_count, 0u);
  ASSERT_NE(r.reason, nullptr);
  EXPECT_STREQ(r.reason, "testGetDeviceCount: no test device is attached");
  EXPECT_EQ(r.policy, nullptr);
  EXPECT_EQ(r.code, ROOTSPAN_OK);

  // Started: its name is taken (L6).
  Err taken;
  EXPECT_EQ(rootspan_context_add_provider(context_, test_provider_entry, nullptr, taken.out()),
            ROOTSPAN_ERR_PLUGIN_REJECTED);
  EXPECT_NE(taken.message().find("a provider named 'test' is already loaded"), std::string::npos) << taken.message();

  Err e;
  std::string name;
  std::string why;
  ASSERT_EQ(choose(nullptr, 0, &name, &why, e), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(name, "host");
  EXPECT_EQ(why,
            "chose \"host\" (priority 0, 1 device); passed over \"test\": no device "
            "(testGetDeviceCount: no test device is attached)");
  ASSERT_EQ(choose("host", 0, &name, &why, e), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(name, "host");

  Err none;
  EXPECT_EQ(choose("test", 0, &name, &why, none), ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_NE(none.message().find("device 0 does not exist: provider \"test\" has no device (testGetDeviceCount"),
            std::string::npos)
      << none.message();
}

TEST_F(ProviderChoiceApi, AnUnknownNameListsTheProviders) {
  Err e;
  std::string name;
  std::string why;
  EXPECT_EQ(choose("nope", 0, &name, &why, e), ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_NE(
      e.message().find("no provider is named \"nope\"; the providers are: \"host\": loaded, priority 0, 1 device"),
      std::string::npos)
      << e.message();
}

TEST_F(ProviderChoiceApi, BadArgumentsAreRefusedByName) {
  Err e;
  rootspan_provider_choice *choice = nullptr;
  EXPECT_EQ(rootspan_provider_choose(nullptr, "auto", 0, &choice, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(e.message().find("context or choice is NULL"), std::string::npos) << e.message();
  Err f;
  EXPECT_EQ(rootspan_provider_choose(context_, "auto", 0, nullptr, f.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(f.message().find("context or choice is NULL"), std::string::npos) << f.message();
  EXPECT_EQ(rootspan_provider_choice_name(nullptr), nullptr);
  EXPECT_EQ(rootspan_provider_choice_explanation(nullptr), nullptr);
  rootspan_provider_choice_free(nullptr);  // allowed
}

}  // namespace
