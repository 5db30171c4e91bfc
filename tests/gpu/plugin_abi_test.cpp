// The device plugins below the core: the entry symbol and table, what the
// library exports, options, the zero-device answers (everywhere), and with a
// device the asynchronous copies and events, which only the provider ABI has.
#include <link.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "gpu_support.hpp"

namespace rootspan::testing {
namespace {

class PluginAbiTest : public GpuProviderTest {
 protected:
  void SetUp() override {
    GPU_TEST_REQUIRE_PLUGIN(kind());
    plugin_ = std::make_unique<DirectPlugin>(kind());
    ASSERT_NE(plugin_->handle(), nullptr) << plugin_->load_error();
    ASSERT_NE(plugin_->table(), nullptr);
  }
  // Starts the provider; the device count in count_.
  void start(const std::string &options = "{}") {
    std::string text;
    ASSERT_EQ(plugin_->init(options, &text), ROOTSPAN_OK) << text;
    ASSERT_EQ(plugin_->device_count(&count_, &reason_), ROOTSPAN_OK) << reason_;
  }
  const rootspan_provider_table &t() const { return *plugin_->table(); }

  std::unique_ptr<DirectPlugin> plugin_;
  std::uint32_t count_ = 0;
  std::string reason_;
};

bool any_loaded_object_contains(const char *part) {
  struct Search {
    const char *part;
    bool found = false;
  } search{part};
  ::dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        auto *s = static_cast<Search *>(data);
        if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, s->part) != nullptr) s->found = true;
        return 0;
      },
      &search);
  return search.found;
}

TEST_P(PluginAbiTest, EntryReturnsAFullTable) {
  EXPECT_EQ(t().struct_size, sizeof(rootspan_provider_table));
  EXPECT_EQ(t().abi_major, ROOTSPAN_PROVIDER_ABI_MAJOR);
  EXPECT_GE(t().abi_minor, ROOTSPAN_PROVIDER_ABI_MINOR_MIN);
  EXPECT_STREQ(t().name, kind().c_str());
  EXPECT_STREQ(t().kind, kind().c_str());
  // Every entry, required and optional, is offered.
  EXPECT_NE(t().init, nullptr);
  EXPECT_NE(t().shutdown, nullptr);
  EXPECT_NE(t().device_count, nullptr);
  EXPECT_NE(t().device_info, nullptr);
  EXPECT_NE(t().allocate, nullptr);
  EXPECT_NE(t().release, nullptr);
  EXPECT_NE(t().map_read, nullptr);
  EXPECT_NE(t().map_write, nullptr);
  EXPECT_NE(t().unmap, nullptr);
  EXPECT_NE(t().prepare_device_access, nullptr);
  EXPECT_NE(t().release_device_access, nullptr);
  EXPECT_NE(t().copy_from_host, nullptr);
  EXPECT_NE(t().copy_to_host, nullptr);
  EXPECT_NE(t().event_wait, nullptr);
  EXPECT_NE(t().import_host_memory, nullptr);
}

TEST_P(PluginAbiTest, CudaRuntimeIsStaticAndPrivate) {
  if (kind() != "cuda") GTEST_SKIP() << "HIP has no static runtime; libamdhip64.so is a dependency";
  EXPECT_FALSE(any_loaded_object_contains("libcudart")) << "the plugin must not need libcudart.so";
  EXPECT_EQ(::dlsym(plugin_->handle(), "cudaGetDeviceCount"), nullptr) << "the static runtime leaks out";
  EXPECT_EQ(::dlsym(plugin_->handle(), "cudaMalloc"), nullptr);
}

TEST_P(PluginAbiTest, InitRejectsBadOptions) {
  struct Case {
    const char *options;
    const char *says;
  };
  const Case cases[] = {
      {"[1]", "must be a JSON object"},
      {"{\"devices\": \"all\"}", "must be an array"},
      {"{\"devices\": [-1]}", "non-negative device ordinal"},
      {"{\"devices\": [0, 0]}", "twice"},
      {"{\"gpus\": [0]}", "unknown option \"gpus\""},
      {"{not json", "not JSON"},
  };
  for (const Case &c : cases) {
    DirectPlugin plugin(kind());
    std::string text;
    EXPECT_EQ(plugin.init(c.options, &text), ROOTSPAN_ERR_INVALID_ARGUMENT) << c.options;
    EXPECT_NE(text.find(c.says), std::string::npos) << c.options << " -> " << text;
  }
}

TEST_P(PluginAbiTest, ZeroDevicesSayWhy) {
  start("{\"devices\": [0]}");
  if (count_ != 0) GTEST_SKIP() << "this machine has a " << runtime_of(kind()) << " device";
  // The runtime's own reason, naming the call that said it.
  const std::string call = kind() == "cuda" ? "cudaGetDeviceCount" : "hipGetDeviceCount";
  EXPECT_NE(reason_.find(call), std::string::npos) << reason_;
  std::printf("[ %s ] zero devices: %s\n", kind().c_str(), reason_.c_str());

  rootspan_device_info info{};
  info.struct_size = sizeof info;
  std::string text;
  EXPECT_EQ(plugin_->call(
                [&](rootspan_provider_message *m) { return t().device_info(plugin_->instance(), 0, &info, m); }, &text),
            ROOTSPAN_ERR_NOT_FOUND);

  for (rootspan_memory_kind memory : {ROOTSPAN_MEMORY_DEVICE, ROOTSPAN_MEMORY_HOST_PINNED}) {
    rootspan_provider_allocation allocation{};
    EXPECT_EQ(plugin_->allocate(memory, 4096, 64, &allocation, &text), ROOTSPAN_ERR_NOT_FOUND);
    EXPECT_NE(text.find(std::string("no ") + runtime_of(kind()) + " device: " + reason_), std::string::npos) << text;
  }

  std::vector<char> bytes(4096);
  rootspan_host_memory memory{sizeof memory, bytes.data(), bytes.size(), 1, nullptr, nullptr};
  rootspan_provider_allocation allocation{};
  allocation.struct_size = sizeof allocation;
  EXPECT_EQ(plugin_->call(
                [&](rootspan_provider_message *m) {
                  return t().import_host_memory(plugin_->instance(), &memory, &allocation, m);
                },
                &text),
            ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_NE(text.find(reason_), std::string::npos) << text;
}

TEST_P(PluginAbiTest, OrdinaryHostMemoryIsNotItsBusiness) {
  start();
  rootspan_provider_allocation allocation{};
  std::string text;
  // With or without a device: the memory kind is checked first.
  EXPECT_EQ(plugin_->allocate(ROOTSPAN_MEMORY_HOST, 64, 64, &allocation, &text), ROOTSPAN_ERR_UNSUPPORTED) << text;
  EXPECT_NE(text.find("host provider"), std::string::npos) << text;
}

// ---- with a device ------------------------------------------------------------------

class PluginDeviceTest : public PluginAbiTest {
 protected:
  void SetUp() override {
    PluginAbiTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    start();
    if (HasFatalFailure()) return;
    if (count_ == 0) GTEST_SKIP() << "no " << runtime_of(kind()) << " device: " << reason_;
  }
};

TEST_P(PluginDeviceTest, OptionsSelectDevices) {
  DirectPlugin plugin(kind());
  std::string text;
  ASSERT_EQ(plugin.init("{\"devices\": [0]}", &text), ROOTSPAN_OK) << text;
  std::uint32_t count = 0;
  ASSERT_EQ(plugin.device_count(&count, &text), ROOTSPAN_OK);
  EXPECT_EQ(count, 1u);

  DirectPlugin missing(kind());
  EXPECT_EQ(missing.init("{\"devices\": [4096]}", &text), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(text.find("names device 4096"), std::string::npos) << text;
}

TEST_P(PluginDeviceTest, KeysLieInTheDevicesDomain) {
  rootspan_provider_allocation a{};
  rootspan_provider_allocation b{};
  std::string text;
  ASSERT_EQ(plugin_->allocate(ROOTSPAN_MEMORY_DEVICE, 256, 256, &a, &text), ROOTSPAN_OK) << text;
  ASSERT_EQ(plugin_->allocate(ROOTSPAN_MEMORY_HOST_PINNED, 256, 256, &b, &text), ROOTSPAN_OK) << text;
  EXPECT_EQ(a.key.domain, plugin_->domains()[0]);
  EXPECT_EQ(b.key.domain, plugin_->domains()[0]);
  EXPECT_NE(a.key.local, 0u);
  EXPECT_NE(a.key.local, b.key.local);
  EXPECT_EQ(a.host_base, nullptr);
  EXPECT_NE(b.host_base, nullptr);
  t().release(plugin_->instance(), &a);
  t().release(plugin_->instance(), &b);
}

TEST_P(PluginDeviceTest, AsynchronousCopiesCompleteThroughEvents) {
  constexpr std::uint64_t kBytes = 8 << 20;
  for (rootspan_memory_kind memory : {ROOTSPAN_MEMORY_DEVICE, ROOTSPAN_MEMORY_HOST_PINNED}) {
    rootspan_provider_allocation allocation{};
    std::string text;
    ASSERT_EQ(plugin_->allocate(memory, kBytes, 256, &allocation, &text), ROOTSPAN_OK) << text;
    std::vector<std::uint32_t> source(kBytes / 4);
    std::iota(source.begin(), source.end(), 7u);
    std::vector<std::uint32_t> back(kBytes / 4, 0);

    rootspan_provider_event *event = nullptr;
    ASSERT_EQ(plugin_->call(
                  [&](rootspan_provider_message *m) {
                    return t().copy_from_host(plugin_->instance(), &allocation, 0, source.data(), kBytes, &event, m);
                  },
                  &text),
              ROOTSPAN_OK)
        << text;
    ASSERT_NE(event, nullptr);
    ASSERT_EQ(plugin_->call([&](rootspan_provider_message *m) { return t().event_wait(plugin_->instance(), event, m); },
                            &text),
              ROOTSPAN_OK)
        << text;

    event = nullptr;
    ASSERT_EQ(plugin_->call(
                  [&](rootspan_provider_message *m) {
                    return t().copy_to_host(plugin_->instance(), &allocation, 0, back.data(), kBytes, &event, m);
                  },
                  &text),
              ROOTSPAN_OK)
        << text;
    ASSERT_NE(event, nullptr);
    ASSERT_EQ(plugin_->call([&](rootspan_provider_message *m) { return t().event_wait(plugin_->instance(), event, m); },
                            &text),
              ROOTSPAN_OK)
        << text;
    EXPECT_EQ(back, source) << "memory kind " << memory;

    // An empty asynchronous copy still hands out an event to wait on.
    event = nullptr;
    ASSERT_EQ(plugin_->call([&](rootspan_provider_message *m) {
      return t().copy_to_host(plugin_->instance(), &allocation, 0, back.data(), 0, &event, m);
    }),
              ROOTSPAN_OK);
    ASSERT_NE(event, nullptr);
    EXPECT_EQ(
        plugin_->call([&](rootspan_provider_message *m) { return t().event_wait(plugin_->instance(), event, m); }),
        ROOTSPAN_OK);
    t().release(plugin_->instance(), &allocation);
  }
}

TEST_P(PluginDeviceTest, ReleaseWaitsForOutstandingCopies) {
  constexpr std::uint64_t kBytes = 64 << 20;
  rootspan_provider_allocation source{};
  rootspan_provider_allocation back{};
  rootspan_provider_allocation device{};
  std::string text;
  ASSERT_EQ(plugin_->allocate(ROOTSPAN_MEMORY_HOST_PINNED, kBytes, 4096, &source, &text), ROOTSPAN_OK) << text;
  ASSERT_EQ(plugin_->allocate(ROOTSPAN_MEMORY_HOST_PINNED, kBytes, 4096, &back, &text), ROOTSPAN_OK) << text;
  ASSERT_EQ(plugin_->allocate(ROOTSPAN_MEMORY_DEVICE, kBytes, 256, &device, &text), ROOTSPAN_OK) << text;
  std::memset(source.host_base, 0x5a, kBytes);
  std::memset(back.host_base, 0, kBytes);
  rootspan_provider_event *up = nullptr;
  rootspan_provider_event *down = nullptr;
  ASSERT_EQ(plugin_->call(
                [&](rootspan_provider_message *m) {
                  return t().copy_from_host(plugin_->instance(), &device, 0, source.host_base, kBytes, &up, m);
                },
                &text),
            ROOTSPAN_OK)
      << text;
  ASSERT_EQ(plugin_->call(
                [&](rootspan_provider_message *m) {
                  return t().copy_to_host(plugin_->instance(), &device, 0, back.host_base, kBytes, &down, m);
                },
                &text),
            ROOTSPAN_OK)
      << text;
  // Released with both copies in flight: release waits for them, then frees.
  // So once it returns, and before any event is waited on, the round trip
  // has landed in full.
  t().release(plugin_->instance(), &device);
  const auto *landed = static_cast<const unsigned char *>(back.host_base);
  EXPECT_EQ(landed[0], 0x5a);
  EXPECT_EQ(landed[kBytes - 1], 0x5a);
  EXPECT_EQ(std::memcmp(back.host_base, source.host_base, kBytes), 0);
  // The events stay valid to wait on after the release.
  for (rootspan_provider_event *event : {up, down}) {
    EXPECT_EQ(plugin_->call([&](rootspan_provider_message *m) { return t().event_wait(plugin_->instance(), event, m); },
                            &text),
              ROOTSPAN_OK)
        << text;
  }
  t().release(plugin_->instance(), &back);
  t().release(plugin_->instance(), &source);
}

TEST_P(PluginDeviceTest, CopiesOutsideTheAllocationAreRefused) {
  rootspan_provider_allocation allocation{};
  std::string text;
  ASSERT_EQ(plugin_->allocate(ROOTSPAN_MEMORY_DEVICE, 1024, 256, &allocation, &text), ROOTSPAN_OK) << text;
  std::vector<char> host(2048);
  EXPECT_EQ(plugin_->call(
                [&](rootspan_provider_message *m) {
                  return t().copy_from_host(plugin_->instance(), &allocation, 512, host.data(), 1024, nullptr, m);
                },
                &text),
            ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(text.find("leaves the allocation"), std::string::npos) << text;
  t().release(plugin_->instance(), &allocation);
}

INSTANTIATE_TEST_SUITE_P(Providers, PluginAbiTest, ::testing::Values("cuda", "rocm"), kind_name);
INSTANTIATE_TEST_SUITE_P(Providers, PluginDeviceTest, ::testing::Values("cuda", "rocm"), kind_name);

}  // namespace
}  // namespace rootspan::testing
