// The provider choice (docs/writing-a-provider.md): "auto" takes the highest priority among
// started providers with a device, the first listed on a tie; a name or an
// ordinal that does not exist is NOT_FOUND and lists what exists.
#include <gtest/gtest.h>

#include "core/loader/provider_choice.hpp"
#include "test_support.hpp"

namespace rootspan {
namespace {

using testing::Mentions;

ProviderReport started(const std::string &name, std::int32_t priority, std::uint32_t devices,
                       const std::string &no_device_reason = "") {
  ProviderReport r;
  r.name = name;
  r.kind = name;
  r.priority = priority;
  r.device_count = devices;
  r.state = devices == 0 ? ROOTSPAN_PROVIDER_NO_DEVICE : ROOTSPAN_PROVIDER_LOADED;
  r.reason = no_device_reason;
  return r;
}

ProviderReport not_started(const std::string &name, rootspan_provider_state state, std::int32_t priority,
                           const std::string &policy, const std::string &reason, rootspan_status code) {
  ProviderReport r;
  r.name = name;
  r.kind = name;
  r.priority = priority;
  r.state = state;
  r.policy = policy;
  r.reason = reason;
  r.code = code;
  return r;
}

TEST(ProviderChoice, AutoTakesTheHighestPriorityWithADevice) {
  const std::vector<ProviderReport> reports = {
      started("host", 0, 1),
      started("cuda", 100, 2),
      started("rocm", 200, 0, "hipGetDeviceCount: no ROCm-capable device"),
      not_started("bad", ROOTSPAN_PROVIDER_SKIPPED, 300, "L4", "load_plugin: L4: the file is world-writable",
                  ROOTSPAN_ERR_PLUGIN_REJECTED),
      not_started("broken", ROOTSPAN_PROVIDER_FAILED, 400, "L7", "init failed: simulated",
                  ROOTSPAN_ERR_PROVIDER_FAILURE),
  };
  auto chosen = choose_provider(reports, "auto", 1);
  ASSERT_TRUE(chosen) << chosen.error()->message();
  EXPECT_EQ(chosen.value().provider, "cuda");
  EXPECT_EQ(chosen.value().explanation,
            "chose \"cuda\" (priority 100, 2 devices); passed over \"host\": lower priority 0; "
            "\"rocm\": no device (hipGetDeviceCount: no ROCm-capable device); "
            "\"bad\": skipped (load_plugin: L4: the file is world-writable); "
            "\"broken\": failed (L7: init failed: simulated)");
  // An empty request means "auto" too.
  auto empty = choose_provider(reports, "", 0);
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty.value().provider, "cuda");
}

TEST(ProviderChoice, ATieGoesToTheFirstListed) {
  const std::vector<ProviderReport> reports = {started("host", 0, 1), started("cuda", 100, 1), started("rocm", 100, 1)};
  auto chosen = choose_provider(reports, "auto", 0);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen.value().provider, "cuda");
  EXPECT_TRUE(chosen.value().explanation.find("\"rocm\": same priority 100, listed after \"cuda\"") !=
              std::string::npos)
      << chosen.value().explanation;
  // Listed the other way round, the other wins.
  auto swapped = choose_provider({started("rocm", 100, 1), started("cuda", 100, 1)}, "auto", 0);
  ASSERT_TRUE(swapped);
  EXPECT_EQ(swapped.value().provider, "rocm");
}

TEST(ProviderChoice, NegativePrioritiesStillWinWhenAloneWithADevice) {
  auto chosen = choose_provider({started("cuda", 100, 0, "no driver"), started("slow", -5, 1)}, "auto", 0);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen.value().provider, "slow");
  EXPECT_EQ(chosen.value().explanation,
            "chose \"slow\" (priority -5, 1 device); passed over \"cuda\": no device (no driver)");
}

TEST(ProviderChoice, AutoWithNoDeviceAnywhereListsEveryReason) {
  const std::vector<ProviderReport> reports = {
      started("cuda", 100, 0, "cudaGetDeviceCount: no CUDA-capable device is detected"),
      not_started("host", ROOTSPAN_PROVIDER_SKIPPED, 0, "L6",
                  "load_plugin: L6: a provider named 'host' is already loaded", ROOTSPAN_ERR_PLUGIN_REJECTED)};
  auto chosen = choose_provider(reports, "auto", 0);
  ASSERT_FALSE(chosen);
  EXPECT_EQ(chosen.error()->code, ROOTSPAN_ERR_NO_PROVIDER);
  EXPECT_TRUE(Mentions(chosen.error(),
                       "auto: no provider has a device; the providers are: \"cuda\": no device "
                       "(cudaGetDeviceCount: no CUDA-capable device is detected); \"host\": skipped"));
  auto none = choose_provider({}, "auto", 0);
  ASSERT_FALSE(none);
  EXPECT_TRUE(Mentions(none.error(), "no provider at all"));
}

TEST(ProviderChoice, AnUnknownNameIsNotFoundAndListsWhatExists) {
  const std::vector<ProviderReport> reports = {started("host", 0, 1), started("cuda", 100, 0, "no driver")};
  auto chosen = choose_provider(reports, "nope", 0);
  ASSERT_FALSE(chosen);
  EXPECT_EQ(chosen.error()->code, ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_EQ(chosen.error()->operation, "provider_choose");
  EXPECT_TRUE(Mentions(chosen.error(),
                       "no provider is named \"nope\"; the providers are: \"host\": loaded, "
                       "priority 0, 1 device; \"cuda\": no device (no driver)"));
}

TEST(ProviderChoice, AMissingOrdinalIsNotFoundAndListsTheOrdinals) {
  const std::vector<ProviderReport> reports = {started("host", 0, 1), started("cuda", 100, 4),
                                               started("rocm", 50, 0, "no /dev/kfd")};
  auto named = choose_provider(reports, "cuda", 7);
  ASSERT_FALSE(named);
  EXPECT_EQ(named.error()->code, ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_TRUE(Mentions(named.error(), "device 7 does not exist: provider \"cuda\" has 4 devices, ordinals 0-3"));
  ASSERT_TRUE(named.error()->values);
  EXPECT_EQ(named.error()->values->first, 4u);
  EXPECT_EQ(named.error()->values->second, 7u);
  auto automatic = choose_provider(reports, "auto", 4);  // auto chooses cuda, which lacks ordinal 4
  ASSERT_FALSE(automatic);
  EXPECT_TRUE(Mentions(automatic.error(), "provider \"cuda\" has 4 devices, ordinals 0-3"));
  // A started provider without a device has no ordinal at all, and says why.
  auto empty = choose_provider(reports, "rocm", 0);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error()->code, ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_TRUE(Mentions(empty.error(), "device 0 does not exist: provider \"rocm\" has no device (no /dev/kfd)"));
  auto fits = choose_provider(reports, "cuda", 3);
  ASSERT_TRUE(fits);
  EXPECT_EQ(fits.value().provider, "cuda");
}

TEST(ProviderChoice, ANamedProviderThatDidNotStartFailsWithItsOwnError) {
  const std::vector<ProviderReport> reports = {
      started("host", 0, 1),
      not_started("cuda", ROOTSPAN_PROVIDER_FAILED, 100, "L7", "init failed: out of handles",
                  ROOTSPAN_ERR_PROVIDER_FAILURE),
      not_started("off", ROOTSPAN_PROVIDER_SKIPPED, 0, "L7", "L7: manifest m entry 2 \"off\" is disabled",
                  ROOTSPAN_OK)};
  auto failed = choose_provider(reports, "cuda", 0);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error()->code, ROOTSPAN_ERR_PROVIDER_FAILURE);
  EXPECT_TRUE(Mentions(failed.error(), "provider \"cuda\" was not started: failed (L7: init failed: out of handles)"));
  auto disabled = choose_provider(reports, "off", 0);
  ASSERT_FALSE(disabled);
  EXPECT_EQ(disabled.error()->code, ROOTSPAN_ERR_NO_PROVIDER);
  EXPECT_TRUE(Mentions(disabled.error(), "is disabled"));
}

TEST(ProviderChoice, TheStartedProviderOfANameWinsOverASkippedEntryOfIt) {
  // The manifest's host is skipped (L6) beside the static one, listed first here.
  const std::vector<ProviderReport> reports = {
      not_started("host", ROOTSPAN_PROVIDER_SKIPPED, 0, "L6",
                  "load_plugin: L6: a provider named 'host' is already loaded", ROOTSPAN_ERR_PLUGIN_REJECTED),
      started("host", 0, 1)};
  auto chosen = choose_provider(reports, "host", 0);
  ASSERT_TRUE(chosen) << chosen.error()->message();
  EXPECT_EQ(chosen.value().provider, "host");
}

}  // namespace
}  // namespace rootspan
