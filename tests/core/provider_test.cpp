// Providers added in-process (rootspan_context_add_provider, docs/writing-a-provider.md / L6 /
// L9): a second provider of a name is refused; a hook that throws becomes
// ProviderFailure and the process keeps serving; a provider's own error
// message passes through; reports; the host provider's device info.
#include <cstring>
#include <string>

#include "test_support.hpp"

namespace {

using namespace rootspan::testing;

class Providers : public CoreTest {
 protected:
  rootspan_provider_report report(std::size_t index) {
    rootspan_provider_report r{};
    r.struct_size = sizeof r;
    EXPECT_EQ(rootspan_provider_report_get(context_, index, &r), ROOTSPAN_OK);
    return r;
  }
  std::size_t report_count() {
    std::size_t n = 0;
    EXPECT_EQ(rootspan_provider_report_count(context_, &n), ROOTSPAN_OK);
    return n;
  }
};

TEST_F(Providers, TheStaticHostProviderIsReported) {
  ASSERT_EQ(report_count(), 1u);
  const rootspan_provider_report r = report(0);
  EXPECT_STREQ(r.name, "host");
  EXPECT_STREQ(r.kind, "host");
  EXPECT_EQ(r.origin, ROOTSPAN_ORIGIN_STATIC);
  EXPECT_EQ(r.state, ROOTSPAN_PROVIDER_LOADED);
  EXPECT_EQ(r.library, nullptr);
  EXPECT_EQ(r.manifest, nullptr);
  EXPECT_EQ(r.abi_major, static_cast<std::uint32_t>(ROOTSPAN_PROVIDER_ABI_MAJOR));
  EXPECT_EQ(r.abi_minor, static_cast<std::uint32_t>(ROOTSPAN_PROVIDER_ABI_MINOR));
  EXPECT_EQ(r.device_count, 1u);
  EXPECT_EQ(r.policy, nullptr);
  EXPECT_EQ(r.reason, nullptr);
  rootspan_provider_report out{};
  out.struct_size = sizeof out;
  EXPECT_EQ(rootspan_provider_report_get(context_, 1, &out), ROOTSPAN_ERR_NOT_FOUND);
  std::size_t manifests = 9;
  EXPECT_EQ(rootspan_manifest_count(context_, &manifests), ROOTSPAN_OK);
  EXPECT_EQ(manifests, 0u);
  EXPECT_EQ(rootspan_manifest_path(context_, 0), nullptr);
}

TEST_F(Providers, AnEmbeddedProviderIsAddedAndReported) {
  add(test_provider_entry);
  ASSERT_EQ(report_count(), 2u);
  const rootspan_provider_report r = report(1);
  EXPECT_STREQ(r.name, "test");
  EXPECT_STREQ(r.kind, "test");
  EXPECT_EQ(r.origin, ROOTSPAN_ORIGIN_EMBEDDED);
  EXPECT_EQ(r.state, ROOTSPAN_PROVIDER_LOADED);
  EXPECT_EQ(r.device_count, 1u);
  EXPECT_EQ(counters().init.load(), 1);
  const std::uint64_t first = granted_domain("test");
  EXPECT_NE(first, 0u);
  // Every instance gets its own domains: the host's keys lie outside the test provider's grant.
  rootspan_root *host = allocate("host", 8);
  const std::uint64_t host_domain = info_of(host).key.domain;
  EXPECT_TRUE(host_domain < first || host_domain >= first + ROOTSPAN_DOMAINS_PER_PROVIDER) << host_domain;
  release(host);
}

TEST_F(Providers, ADuplicateNameIsRefused) {
  add(test_provider_entry);
  Err e;
  ASSERT_EQ(rootspan_context_add_provider(context_, test_provider_entry, nullptr, e.out()),
            ROOTSPAN_ERR_PLUGIN_REJECTED);
  EXPECT_EQ(e.operation(), "load_plugin");
  EXPECT_EQ(e.policy(), "L6");
  EXPECT_EQ(e.cause(), "a provider named 'test' is already loaded");
  EXPECT_EQ(e.message(), "load_plugin: L6: a provider named 'test' is already loaded");
  // Not even a provider of another kind may take the static host's name.
  behaviour().table.name = "host";
  behaviour().table.kind = "other";
  ASSERT_EQ(rootspan_context_add_provider(context_, test_provider_entry, "{}", e.out()), ROOTSPAN_ERR_PLUGIN_REJECTED);
  EXPECT_EQ(e.cause(), "a provider named 'host' is already loaded");
  EXPECT_EQ(report_count(), 2u);
  EXPECT_EQ(counters().init.load(), 1) << "a refused provider is never started";
  // The one that was loaded still serves.
  rootspan_root *root = allocate("test", 16);
  ASSERT_NE(root, nullptr);
  release(root);
}

TEST_F(Providers, NamesAreNotSharedBetweenContexts) {
  add(test_provider_entry);
  rootspan_context *other = nullptr;
  Err e;
  ASSERT_EQ(rootspan_context_create(nullptr, &other, e.out()), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_context_add_provider(other, test_provider_entry, nullptr, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(rootspan_context_destroy(other, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(counters().shutdown.load(), 1);
}

TEST_F(Providers, AThrowingAllocateIsAProviderFailureAndTheProcessKeepsServing) {
  add(test_provider_entry);
  behaviour().allocate_throws = true;
  behaviour().throw_text = "boom";
  rootspan_allocate_options o = allocate_options("test", 64);
  rootspan_root *root = nullptr;
  Err e;
  ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_ERR_PROVIDER_FAILURE);
  EXPECT_EQ(root, nullptr);
  EXPECT_EQ(e.operation(), "root_allocate");
  EXPECT_EQ(e.cause(), "provider 'test' allocate failed (ProviderFailure): threw an exception: boom");
  EXPECT_EQ(e.message(),
            "root_allocate for range [0,64): unresolved: provider 'test' allocate failed "
            "(ProviderFailure): threw an exception: boom");
  behaviour().allocate_throws = false;
  behaviour().allocate_throws_nonstd = true;
  ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_ERR_PROVIDER_FAILURE);
  EXPECT_EQ(e.cause(), "provider 'test' allocate failed (ProviderFailure): threw a non-standard exception");
  EXPECT_EQ(counters().release.load(), 0) << "nothing was allocated, nothing to release";

  // The process keeps serving: the same provider, and others.
  behaviour().allocate_throws_nonstd = false;
  root = allocate("test", 64);
  ASSERT_NE(root, nullptr);
  rootspan_root *host = allocate("host", 64);
  ASSERT_NE(host, nullptr);
  release(root);
  release(host);
}

TEST_F(Providers, AThrowingMapHookIsAProviderFailure) {
  add(test_provider_entry);
  rootspan_root *root = allocate("test", 64);
  rootspan_claim *c = claim(root, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE);
  behaviour().map_throws = true;
  rootspan_mapping *m = nullptr;
  Err e;
  ASSERT_EQ(rootspan_map_write(c, ROOTSPAN_DTYPE_NONE, 0, 64, &m, e.out()), ROOTSPAN_ERR_PROVIDER_FAILURE);
  EXPECT_EQ(e.message(),
            root_request("map_write", root, 0, 64) +
                ": unresolved: provider 'test' map_write failed (ProviderFailure): threw an exception: map "
                "exploded");
  // No mapping is left behind: the claim and root release.
  behaviour().map_throws = false;
  ASSERT_EQ(rootspan_map_write(c, ROOTSPAN_DTYPE_NONE, 0, 64, &m, e.out()), ROOTSPAN_OK) << e.message();
  rootspan_unmap(m);
  release(c);
  release(root);
}

TEST_F(Providers, AThrowingReleaseHookIsSwallowedAndTheRootIsGone) {
  add(test_provider_entry);
  rootspan_root *root = allocate("test", 64);
  behaviour().release_throws = true;
  Err e;
  EXPECT_EQ(rootspan_root_release(root, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(counters().release.load(), 1);
  behaviour().release_throws = false;
  EXPECT_EQ(destroy_context(), 0u) << "the root was released once, and is not released again";
  EXPECT_EQ(counters().release.load(), 1);
}

TEST_F(Providers, AThrowingInitIsAProviderFailureAndTheNameStaysFree) {
  behaviour().init_throws = true;
  Err e;
  ASSERT_EQ(rootspan_context_add_provider(context_, test_provider_entry, nullptr, e.out()),
            ROOTSPAN_ERR_PROVIDER_FAILURE);
  EXPECT_EQ(e.operation(), "load_plugin");
  EXPECT_EQ(e.cause(), "provider 'test' init failed (ProviderFailure): threw an exception: init exploded");
  EXPECT_EQ(report_count(), 1u);
  EXPECT_EQ(counters().shutdown.load(), 0) << "a provider whose init failed is not shut down";
  counters().init = 0;  // the failed start is not owed a shutdown
  behaviour().init_throws = false;
  add(test_provider_entry);
  rootspan_root *root = allocate("test", 8);
  ASSERT_NE(root, nullptr);
  release(root);
}

TEST_F(Providers, AnAllocateErrorPassesTheProvidersMessage) {
  add(test_provider_entry);
  rootspan_allocate_options o = allocate_options("test", 64);
  rootspan_root *root = nullptr;
  Err e;
  // Codes that mean the same to the caller pass through...
  behaviour().allocate_status = ROOTSPAN_ERR_OUT_OF_MEMORY;
  behaviour().allocate_message = "arena exhausted";
  ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(e.message(),
            "root_allocate for range [0,64): unresolved: provider 'test' allocate failed (OutOfMemory): arena "
            "exhausted");
  behaviour().allocate_status = ROOTSPAN_ERR_UNSUPPORTED;
  behaviour().allocate_message = "no such memory kind";
  ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_ERR_UNSUPPORTED);
  EXPECT_EQ(e.cause(), "provider 'test' allocate failed (Unsupported): no such memory kind");
  behaviour().allocate_status = ROOTSPAN_ERR_NOT_FOUND;
  behaviour().allocate_message = "device 0 is gone";
  ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_ERR_NOT_FOUND);
  // ...anything else is a provider failure, with the provider's code and text.
  behaviour().allocate_status = ROOTSPAN_ERR_IO;
  behaviour().allocate_message = "disk on fire";
  ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_ERR_PROVIDER_FAILURE);
  EXPECT_EQ(e.cause(), "provider 'test' allocate failed (Io): disk on fire");
  behaviour().allocate_status = ROOTSPAN_ERR_CONFLICT;
  behaviour().allocate_message = "";
  ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_ERR_PROVIDER_FAILURE);
  EXPECT_EQ(e.cause(), "provider 'test' allocate failed (Conflict)");
  // A message longer than the core's buffer is cut, not overrun.
  behaviour().allocate_status = ROOTSPAN_ERR_IO;
  behaviour().allocate_message = std::string(2000, 'x');
  ASSERT_EQ(rootspan_root_allocate(context_, &o, &root, e.out()), ROOTSPAN_ERR_PROVIDER_FAILURE);
  const std::string prefix = "provider 'test' allocate failed (Io): ";
  ASSERT_EQ(e.cause().rfind(prefix, 0), 0u);
  const std::string text = e.cause().substr(prefix.size());
  EXPECT_GT(text.size(), 100u);
  EXPECT_LT(text.size(), 2000u);
  EXPECT_EQ(text.find_first_not_of('x'), std::string::npos);
  EXPECT_EQ(counters().release.load(), 0);
  // The provider's allocate serves again once it behaves.
  behaviour().allocate_status = ROOTSPAN_OK;
  root = allocate("test", 64);
  ASSERT_NE(root, nullptr);
  release(root);
}

TEST_F(Providers, ALoadedProvidersNoteIsReportedAndAnOlderCallerDoesNotGetIt) {
  behaviour().device_note = "running in unified-memory mode";
  add(test_provider_entry);
  const rootspan_provider_report r = report(1);
  EXPECT_EQ(r.state, ROOTSPAN_PROVIDER_LOADED);
  EXPECT_EQ(r.reason, nullptr);
  ASSERT_NE(r.note, nullptr);
  EXPECT_STREQ(r.note, "running in unified-memory mode");
  // A caller built before the note existed: its struct ends at code, and
  // the bytes after it stay as they were.
  rootspan_provider_report older{};
  std::memset(&older, 0xAB, sizeof older);
  older.struct_size = offsetof(rootspan_provider_report, code) + sizeof(rootspan_status);
  ASSERT_EQ(rootspan_provider_report_get(context_, 1, &older), ROOTSPAN_OK);
  EXPECT_STREQ(older.name, "test");
  const auto *tail = reinterpret_cast<const unsigned char *>(&older) + older.struct_size;
  for (std::size_t i = 0; i < sizeof older - older.struct_size; ++i) EXPECT_EQ(tail[i], 0xAB) << i;
  // The host provider's note says what backs its large allocations.
  const rootspan_provider_report host = report(0);
  if (host.note != nullptr) EXPECT_NE(std::string(host.note).find("transparent huge pages: "), std::string::npos);
}

TEST_F(Providers, AProviderWithNoDeviceReportsWhy) {
  behaviour().device_count = 0;
  behaviour().device_note = "no device is attached";
  add(test_provider_entry);
  const rootspan_provider_report r = report(1);
  EXPECT_EQ(r.device_count, 0u);
  ASSERT_NE(r.reason, nullptr);
  EXPECT_STREQ(r.reason, "no device is attached");
  rootspan_device_info info{};
  info.struct_size = sizeof info;
  Err e;
  ASSERT_EQ(rootspan_provider_device_info(context_, "test", 0, &info, e.out()), ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_EQ(e.message(), "provider_device_info: provider 'test' has 0 devices; ordinal 0 does not exist");
}

TEST_F(Providers, TheHostProvidersDeviceInfo) {
  rootspan_device_info info{};
  info.struct_size = sizeof info;
  Err e;
  ASSERT_EQ(rootspan_provider_device_info(context_, "host", 0, &info, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(info.ordinal, 0u);
  EXPECT_STREQ(info.name, "host");
  EXPECT_STREQ(info.pci_bus_id, "");
  EXPECT_GT(info.total_memory_bytes, 0u);
  EXPECT_LE(info.free_memory_bytes, info.total_memory_bytes);
  EXPECT_EQ(info.struct_size, sizeof info);

  ASSERT_EQ(rootspan_provider_device_info(context_, "host", 1, &info, e.out()), ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_EQ(e.operation(), "provider_device_info");
  EXPECT_EQ(e.message(), "provider_device_info: provider 'host' has 1 devices; ordinal 1 does not exist");
  std::uint64_t expected = 0, actual = 0;
  ASSERT_TRUE(e.values(&expected, &actual));
  EXPECT_EQ(expected, 1u);
  EXPECT_EQ(actual, 1u);

  EXPECT_EQ(rootspan_provider_device_info(context_, nullptr, 0, &info, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rootspan_provider_device_info(context_, "host", 0, nullptr, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
}

TEST_F(Providers, DeviceInfoOfAnUnknownProviderNamesTheOperation) {
  // Regression test for a bug once in core/c_api.cpp.
  rootspan_device_info info{};
  info.struct_size = sizeof info;
  Err e;
  ASSERT_EQ(rootspan_provider_device_info(context_, "gpu", 0, &info, e.out()), ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_EQ(e.cause(), "no loaded provider is named 'gpu' (loaded: host)");
  EXPECT_EQ(e.operation(), "provider_device_info");
  EXPECT_EQ(e.message(), "provider_device_info: no loaded provider is named 'gpu' (loaded: host)");
}

TEST_F(Providers, DeviceInfoOfAnEmbeddedProviderAndAShortReader) {
  behaviour().device_count = 2;
  add(test_provider_entry);
  rootspan_device_info info{};
  std::memset(&info, 0x7F, sizeof info);
  info.struct_size = ROOTSPAN_DEVICE_INFO_STRUCT_SIZE;
  Err e;
  ASSERT_EQ(rootspan_provider_device_info(context_, "test", 1, &info, e.out()), ROOTSPAN_OK) << e.message();
  EXPECT_EQ(info.ordinal, 1u);
  EXPECT_STREQ(info.name, "test device 1");
  EXPECT_STREQ(info.pci_bus_id, "0000:01:00.0");
  // A size no published header ever had is refused before the provider runs.
  std::memset(&info, 0x7F, sizeof info);
  info.struct_size = offsetof(rootspan_device_info, total_memory_bytes);
  ASSERT_EQ(rootspan_provider_device_info(context_, "test", 1, &info, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(e.cause().find("rootspan_device_info: expected " + std::to_string(ROOTSPAN_DEVICE_INFO_STRUCT_SIZE)),
            std::string::npos)
      << e.message();
  EXPECT_EQ(info.ordinal, 0x7F7F7F7Fu) << "a field was written for a refused struct_size";
}

TEST_F(Providers, AContextWithoutStaticProvidersHasNone) {
  rootspan_context_options options{};
  options.struct_size = sizeof options;
  options.no_static_providers = 1;
  rootspan_context *bare = nullptr;
  Err e;
  ASSERT_EQ(rootspan_context_create(&options, &bare, e.out()), ROOTSPAN_OK) << e.message();
  std::size_t n = 9;
  EXPECT_EQ(rootspan_provider_report_count(bare, &n), ROOTSPAN_OK);
  EXPECT_EQ(n, 0u);
  rootspan_allocate_options o = allocate_options("host", 64);
  rootspan_root *root = nullptr;
  ASSERT_EQ(rootspan_root_allocate(bare, &o, &root, e.out()), ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_EQ(e.message(),
            "root_allocate for range [0,64): unresolved: no loaded provider is named 'host' (loaded: none)");
  // An embedded provider may then take the name "host".
  behaviour().table.name = "host";
  ASSERT_EQ(rootspan_context_add_provider(bare, test_provider_entry, nullptr, e.out()), ROOTSPAN_OK) << e.message();
  ASSERT_EQ(rootspan_root_allocate(bare, &o, &root, e.out()), ROOTSPAN_OK) << e.message();
  std::uint64_t live = 0;
  EXPECT_EQ(rootspan_context_destroy(bare, &live), ROOTSPAN_OK);
  EXPECT_EQ(live, 1u);
}

TEST_F(Providers, BadArgumentsAreInvalidArgument) {
  Err e;
  EXPECT_EQ(rootspan_context_add_provider(nullptr, test_provider_entry, nullptr, e.out()),
            ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e.message(), "load_plugin: context or entry is NULL");
  EXPECT_EQ(rootspan_context_add_provider(context_, nullptr, nullptr, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rootspan_context_create(nullptr, nullptr, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  rootspan_context_options options{};
  options.struct_size = 1;
  rootspan_context *c = nullptr;
  EXPECT_EQ(rootspan_context_create(&options, &c, e.out()), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(rootspan_provider_report_count(nullptr, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
}

// ---- negotiation of an embedded provider's table (rootspan.h: "The table is
// negotiated (L6) and validated like a plugin's") ----------------------------
//
// Regression test for a bug once in core/context.cpp.

TEST_F(Providers, AWrongAbiMajorIsRefused) {
  behaviour().table.abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR + 1;
  Err e;
  EXPECT_EQ(rootspan_context_add_provider(context_, test_provider_entry, nullptr, e.out()), ROOTSPAN_ERR_ABI_MISMATCH)
      << e.message();
  EXPECT_EQ(e.policy(), "L6");
}

TEST_F(Providers, ATooOldAbiMinorIsRefused) {
  behaviour().table.abi_minor = 0;  // the draft table, refused by ROOTSPAN_PROVIDER_ABI_MINOR_MIN
  Err e;
  EXPECT_EQ(rootspan_context_add_provider(context_, test_provider_entry, nullptr, e.out()), ROOTSPAN_ERR_ABI_MISMATCH)
      << e.message();
}

TEST_F(Providers, AnEntryReturningNullIsRefused) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Err e;
        const rootspan_status s = rootspan_context_add_provider(context_, null_entry, nullptr, e.out());
        std::exit(s == ROOTSPAN_ERR_PLUGIN_REJECTED ? 0 : 10 + s);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(Providers, ANullRequiredEntryIsRefused) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  behaviour().table.null_init = true;
  EXPECT_EXIT(
      {
        Err e;
        const rootspan_status s = rootspan_context_add_provider(context_, test_provider_entry, nullptr, e.out());
        std::exit(s == ROOTSPAN_ERR_PLUGIN_REJECTED ? 0 : 10 + s);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
