// The device provider's logic (plugins/gpu/gpu_provider.hpp) over a fake
// runtime (fake_runtime.hpp), on every machine: through the core as an
// embedded provider, and through its table for what only the provider ABI
// has (asynchronous copies and events). The same template is the CUDA and
// the ROCm provider; only the runtime calls differ.
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "fake_runtime.hpp"
#include "gpu_support.hpp"
#include "plugins/gpu/gpu_provider.hpp"

namespace rootspan::testing {
namespace {

using FakeProvider = rootspan_gpu::GpuProvider<fake_gpu::Runtime>;

const rootspan_provider_table *fake_entry(std::uint32_t, std::uint32_t) { return &FakeProvider::table; }

class FakeProviderTest : public ::testing::Test {
 protected:
  void SetUp() override { fake_gpu::reset(2); }
  void TearDown() override {
    if (context_ != nullptr) rootspan_context_destroy(context_, nullptr);
    context_ = nullptr;
    // Nothing the provider was given is left behind, and it never freed
    // memory or destroyed a stream under a pending copy.
    EXPECT_TRUE(fake_gpu::state().allocations.empty());
    EXPECT_TRUE(fake_gpu::state().registered.empty());
    EXPECT_EQ(fake_gpu::state().streams_created, fake_gpu::state().streams_destroyed);
    EXPECT_EQ(fake_gpu::state().events_live, 0);
    EXPECT_EQ(fake_gpu::state().pending_at_free, 0);
    EXPECT_EQ(fake_gpu::state().pending_at_destroy, 0);
    EXPECT_EQ(fake_gpu::state().invalid_frees, 0);
  }

  // A context with the static host provider and the fake as an embedded one.
  void open(const char *options = "{}") {
    ASSERT_EQ(rootspan_context_create(nullptr, &context_, nullptr), ROOTSPAN_OK);
    rootspan_error *raw = nullptr;
    ASSERT_EQ(rootspan_context_add_provider(context_, fake_entry, options, &raw), ROOTSPAN_OK) << message_of(raw);
  }

  std::uint32_t device_count() const {
    std::size_t count = 0;
    rootspan_provider_report_count(context_, &count);
    for (std::size_t i = 0; i < count; ++i) {
      rootspan_provider_report r{};
      r.struct_size = sizeof r;
      rootspan_provider_report_get(context_, i, &r);
      if (std::strcmp(r.name, "fake") == 0) return r.device_count;
    }
    return 0;
  }

  rootspan_status allocate(rootspan_memory_kind kind, std::uint64_t length, std::uint64_t alignment,
                           rootspan_root **root, std::string *why = nullptr, std::uint32_t device = 0) {
    rootspan_allocate_options options{};
    options.struct_size = sizeof options;
    options.provider = "fake";
    options.device = device;
    options.memory_kind = kind;
    options.byte_length = length;
    options.alignment = alignment;
    rootspan_error *raw = nullptr;
    const rootspan_status status = rootspan_root_allocate(context_, &options, root, &raw);
    if (why != nullptr) *why = message_of(raw);
    rootspan_error_free(raw);
    return status;
  }

  static rootspan_root_info info_of(const rootspan_root *root) {
    rootspan_root_info info{};
    info.struct_size = sizeof info;
    rootspan_root_get_info(root, &info);
    return info;
  }

  static rootspan_claim *claim(rootspan_root *root, rootspan_claim_mode mode) {
    rootspan_claim *c = nullptr;
    EXPECT_EQ(rootspan_claim_acquire(root, 0, info_of(root).byte_length, mode, &c, nullptr), ROOTSPAN_OK);
    return c;
  }

  static rootspan_status access(rootspan_claim *c, const rootspan_root *root, std::uint64_t size, std::uint64_t offset,
                                rootspan_device_access *out) {
    const rootspan_root_info info = info_of(root);
    const std::uint64_t shape[] = {info.byte_length / size - offset};
    const std::int64_t strides[] = {1};
    rootspan_device_access_request request{};
    request.struct_size = sizeof request;
    request.key = info.key;
    request.byte_length = info.byte_length;
    request.element_size = size;
    request.element_offset = offset;
    request.rank = 1;
    request.shape = shape;
    request.strides = strides;
    *out = {};
    out->struct_size = sizeof *out;
    return rootspan_device_access_prepare(c, &request, out, nullptr);
  }

  rootspan_context *context_ = nullptr;
};

TEST_F(FakeProviderTest, ReportsDevicesWithInfo) {
  open();
  EXPECT_EQ(device_count(), 2u);
  rootspan_device_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(rootspan_provider_device_info(context_, "fake", 1, &info, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(info.ordinal, 1u);
  EXPECT_STREQ(info.name, "Fake GPU 1");
  EXPECT_STREQ(info.pci_bus_id, "0000:02:00.0");
  EXPECT_EQ(info.total_memory_bytes, std::uint64_t{1} << 30);
  EXPECT_EQ(info.free_memory_bytes, std::uint64_t{1} << 29);
  EXPECT_EQ(rootspan_provider_device_info(context_, "fake", 2, &info, nullptr), ROOTSPAN_ERR_NOT_FOUND);
}

TEST_F(FakeProviderTest, AllocationOnAMissingDeviceNamesWhatThereIs) {
  open();
  rootspan_root *root = nullptr;
  std::string why;
  EXPECT_EQ(allocate(ROOTSPAN_MEMORY_DEVICE, 64, 64, &root, &why, 2), ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_NE(why.find("on device 2: the fake provider has 2 devices (0-1)"), std::string::npos) << why;
}

TEST_F(FakeProviderTest, OptionsPickAndOrderDevices) {
  open("{\"devices\": [1]}");
  EXPECT_EQ(device_count(), 1u);
  rootspan_root *root = nullptr;
  std::string why;
  ASSERT_EQ(allocate(ROOTSPAN_MEMORY_DEVICE, 64, 64, &root, &why), ROOTSPAN_OK) << why;
  EXPECT_EQ(fake_gpu::state().last_malloc_device, 1);  // provider ordinal 0 is runtime device 1
  EXPECT_EQ(info_of(root).device, 0u);
  EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
}

TEST_F(FakeProviderTest, OptionsNamingAMissingDeviceFailInit) {
  ASSERT_EQ(rootspan_context_create(nullptr, &context_, nullptr), ROOTSPAN_OK);
  rootspan_error *raw = nullptr;
  EXPECT_NE(rootspan_context_add_provider(context_, fake_entry, "{\"devices\": [0, 5]}", &raw), ROOTSPAN_OK);
  ErrorPtr error(raw);
  EXPECT_NE(message_of(raw).find("names device 5, but the FAKE runtime sees 2 devices (0-1)"), std::string::npos)
      << message_of(raw);
}

TEST_F(FakeProviderTest, ZeroDevicesSayWhyAndRefuseAllocations) {
  fake_gpu::reset(0);
  open("{\"devices\": [0, 1]}");
  EXPECT_EQ(device_count(), 0u);
  rootspan_root *root = nullptr;
  std::string why;
  EXPECT_EQ(allocate(ROOTSPAN_MEMORY_DEVICE, 64, 64, &root, &why), ROOTSPAN_ERR_NOT_FOUND);
  EXPECT_NE(why.find("no FAKE device: fakeGetDeviceCount failed: no fake device is installed (fakeErrorNoDevice) "
                     "(fake runtime 1.0)"),
            std::string::npos)
      << why;
}

TEST_F(FakeProviderTest, KeysUseTheDevicesDomain) {
  open();
  rootspan_root *a = nullptr;
  rootspan_root *b = nullptr;
  rootspan_root *c = nullptr;
  ASSERT_EQ(allocate(ROOTSPAN_MEMORY_DEVICE, 64, 64, &a, nullptr, 0), ROOTSPAN_OK);
  ASSERT_EQ(allocate(ROOTSPAN_MEMORY_DEVICE, 64, 64, &b, nullptr, 1), ROOTSPAN_OK);
  ASSERT_EQ(allocate(ROOTSPAN_MEMORY_HOST_PINNED, 64, 64, &c, nullptr, 1), ROOTSPAN_OK);
  EXPECT_NE(info_of(a).key.domain, info_of(b).key.domain);  // one domain per device
  EXPECT_EQ(info_of(b).key.domain, info_of(c).key.domain);
  EXPECT_EQ(info_of(b).device, 1u);
  for (rootspan_root *r : {a, b, c}) EXPECT_EQ(rootspan_root_release(r, nullptr), ROOTSPAN_OK);
}

TEST_F(FakeProviderTest, DeviceRootCopiesButDoesNotMap) {
  open();
  constexpr std::uint64_t kBytes = 1 << 16;
  rootspan_root *root = nullptr;
  std::string why;
  ASSERT_EQ(allocate(ROOTSPAN_MEMORY_DEVICE, kBytes, 64, &root, &why), ROOTSPAN_OK) << why;
  EXPECT_EQ(info_of(root).host_accessible, 0);
  rootspan_claim *c = claim(root, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_mapping *mapping = nullptr;
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_NONE, 0, kBytes, &mapping, &raw), ROOTSPAN_ERR_UNSUPPORTED);
  ErrorPtr error(raw);
  EXPECT_NE(message_of(raw).find("provider 'fake'"), std::string::npos) << message_of(raw);

  std::vector<std::uint32_t> source(kBytes / 4);
  std::iota(source.begin(), source.end(), 1u);
  ASSERT_EQ(rootspan_copy_from_host(c, 0, source.data(), kBytes, nullptr), ROOTSPAN_OK);
  std::vector<std::uint32_t> back(kBytes / 4, 0);
  ASSERT_EQ(rootspan_copy_to_host(c, 0, back.data(), kBytes, nullptr), ROOTSPAN_OK);  // synchronous: complete
  EXPECT_EQ(back, source);
  std::vector<std::uint32_t> part(4, 0);
  ASSERT_EQ(rootspan_copy_to_host(c, 400, part.data(), 16, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(part[0], 101u);
  EXPECT_EQ(rootspan_claim_release(c, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
}

TEST_F(FakeProviderTest, AlignmentsBeyondTheRuntimesArePadded) {
  open();
  for (rootspan_memory_kind kind : {ROOTSPAN_MEMORY_DEVICE, ROOTSPAN_MEMORY_HOST_PINNED}) {
    for (std::uint64_t alignment :
         {std::uint64_t{1}, std::uint64_t{256}, std::uint64_t{512}, std::uint64_t{8192}, std::uint64_t{1} << 20}) {
      rootspan_root *root = nullptr;
      std::string why;
      ASSERT_EQ(allocate(kind, 1000, alignment, &root, &why), ROOTSPAN_OK) << why;
      const rootspan_root_info info = info_of(root);
      EXPECT_GE(info.alignment, alignment);
      rootspan_claim *c = claim(root, ROOTSPAN_CLAIM_SHARED);
      rootspan_device_access a{};
      ASSERT_EQ(access(c, root, 1, 0, &a), ROOTSPAN_OK);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.device_ptr) % info.alignment, 0u)
          << "kind " << kind << " alignment " << alignment;
      EXPECT_EQ(rootspan_device_access_release(c, &a), ROOTSPAN_OK);
      EXPECT_EQ(rootspan_claim_release(c, nullptr), ROOTSPAN_OK);
      EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
    }
  }
}

TEST_F(FakeProviderTest, DeviceAccessPointsAtTheElement) {
  open();
  rootspan_root *root = nullptr;
  ASSERT_EQ(allocate(ROOTSPAN_MEMORY_DEVICE, 4096, 256, &root), ROOTSPAN_OK);
  // A claim that starts inside the root: device_ptr counts from the claim.
  rootspan_claim *c = nullptr;
  ASSERT_EQ(rootspan_claim_acquire(root, 1024, 2048, ROOTSPAN_CLAIM_SHARED, &c, nullptr), ROOTSPAN_OK);
  rootspan_claim *whole = nullptr;
  ASSERT_EQ(rootspan_claim_acquire(root, 0, 4096, ROOTSPAN_CLAIM_SHARED, &whole, nullptr), ROOTSPAN_OK);
  rootspan_device_access base{};
  ASSERT_EQ(access(whole, root, 4, 0, &base), ROOTSPAN_OK);

  const rootspan_root_info info = info_of(root);
  const std::uint64_t shape[] = {8};
  const std::int64_t strides[] = {1};
  rootspan_device_access_request request{};
  request.struct_size = sizeof request;
  request.key = info.key;
  request.byte_length = 2048;
  request.element_size = 4;
  request.element_offset = 10;
  request.rank = 1;
  request.shape = shape;
  request.strides = strides;
  rootspan_device_access a{};
  a.struct_size = sizeof a;
  ASSERT_EQ(rootspan_device_access_prepare(c, &request, &a, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(static_cast<char *>(a.device_ptr) - static_cast<char *>(base.device_ptr), 1024 + 40);
  EXPECT_EQ(a.device_ordinal, 0u);
  EXPECT_NE(a.stream, nullptr);
  EXPECT_EQ(a.stream, base.stream);
  EXPECT_EQ(rootspan_device_access_release(c, &a), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_device_access_release(whole, &base), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_claim_release(c, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_claim_release(whole, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
}

TEST_F(FakeProviderTest, PinnedRootMapsAndCopies) {
  open();
  constexpr std::uint64_t kBytes = 1 << 14;
  rootspan_root *root = nullptr;
  ASSERT_EQ(allocate(ROOTSPAN_MEMORY_HOST_PINNED, kBytes, 4096, &root), ROOTSPAN_OK);
  EXPECT_EQ(info_of(root).host_accessible, 1);
  rootspan_claim *c = claim(root, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_mapping *mapping = nullptr;
  ASSERT_EQ(rootspan_map_write(c, ROOTSPAN_DTYPE_U32, 0, kBytes, &mapping, nullptr), ROOTSPAN_OK);
  auto *words = static_cast<std::uint32_t *>(rootspan_mapping_data(mapping));
  for (std::uint64_t i = 0; i < kBytes / 4; ++i) words[i] = static_cast<std::uint32_t>(i);
  EXPECT_EQ(rootspan_unmap(mapping), ROOTSPAN_OK);
  std::vector<std::uint32_t> back(kBytes / 4);
  ASSERT_EQ(rootspan_copy_to_host(c, 0, back.data(), kBytes, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(back[999], 999u);
  EXPECT_EQ(rootspan_claim_release(c, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
}

TEST_F(FakeProviderTest, OrdinaryHostMemoryIsRefused) {
  open();
  rootspan_root *root = nullptr;
  std::string why;
  EXPECT_EQ(allocate(ROOTSPAN_MEMORY_HOST, 64, 64, &root, &why), ROOTSPAN_ERR_UNSUPPORTED);
  EXPECT_NE(why.find("host provider"), std::string::npos) << why;
}

TEST_F(FakeProviderTest, OutOfDeviceMemoryIsOutOfMemory) {
  open();
  fake_gpu::state().fail_next_malloc = fake_gpu::kMemoryAllocation;
  rootspan_root *root = nullptr;
  std::string why;
  EXPECT_EQ(allocate(ROOTSPAN_MEMORY_DEVICE, 1 << 20, 64, &root, &why), ROOTSPAN_ERR_OUT_OF_MEMORY);
  EXPECT_NE(why.find("fakeMalloc of 1048576 bytes on device 0 failed: out of memory (fakeErrorMemoryAllocation)"),
            std::string::npos)
      << why;
}

TEST_F(FakeProviderTest, ZeroLengthRoots) {
  open();
  for (rootspan_memory_kind kind : {ROOTSPAN_MEMORY_DEVICE, ROOTSPAN_MEMORY_HOST_PINNED}) {
    rootspan_root *root = nullptr;
    ASSERT_EQ(allocate(kind, 0, 64, &root), ROOTSPAN_OK);
    EXPECT_EQ(info_of(root).byte_length, 0u);
    EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
  }
}

int g_deleted = 0;
bool g_registered_at_delete = false;
void count_delete(void *, void *data) {
  ++g_deleted;
  g_registered_at_delete = fake_gpu::state().registered.count(data) != 0;
}

rootspan_host_import import_of(void *data, std::uint64_t bytes, bool read_only = false) {
  rootspan_host_import import{};
  import.struct_size = sizeof import;
  import.provider = "fake";
  import.data = data;
  import.byte_length = bytes;
  import.alignment = 64;
  import.read_only = read_only ? 1 : 0;
  import.deleter = count_delete;
  return import;
}

TEST_F(FakeProviderTest, RegisteredMemoryIsUnregisteredThenDeleted) {
  open();
  g_deleted = 0;
  alignas(64) static char bytes[4096];
  rootspan_host_import import = import_of(bytes, sizeof bytes);
  rootspan_root *root = nullptr;
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_root_import_host(context_, &import, &root, &raw), ROOTSPAN_OK) << message_of(raw);
  EXPECT_EQ(fake_gpu::state().registered.count(bytes), 1u);
  rootspan_claim *c = claim(root, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_mapping *mapping = nullptr;
  ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_NONE, 0, sizeof bytes, &mapping, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_mapping_data(mapping), bytes);
  EXPECT_EQ(rootspan_unmap(mapping), ROOTSPAN_OK);
  const std::vector<char> fresh(sizeof bytes, 9);
  ASSERT_EQ(rootspan_copy_from_host(c, 0, fresh.data(), sizeof bytes, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(bytes[100], 9);
  EXPECT_EQ(rootspan_claim_release(c, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(g_deleted, 0);
  EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(g_deleted, 1);
  EXPECT_FALSE(g_registered_at_delete);  // unregistered before the caller gets it back
}

TEST_F(FakeProviderTest, ReadOnlyMemoryRegistersReadOnly) {
  open();
  g_deleted = 0;
  alignas(64) static char bytes[4096];
  fake_gpu::state().read_only.emplace_back(bytes, sizeof bytes);
  rootspan_host_import import = import_of(bytes, sizeof bytes, true);
  rootspan_root *root = nullptr;
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_root_import_host(context_, &import, &root, &raw), ROOTSPAN_OK) << message_of(raw);
  EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(g_deleted, 1);
}

TEST_F(FakeProviderTest, FailedRegistrationLeavesTheDeleterToTheCore) {
  open();
  g_deleted = 0;
  fake_gpu::state().fail_register = true;
  alignas(64) static char bytes[4096];
  rootspan_host_import import = import_of(bytes, sizeof bytes);
  rootspan_root *root = nullptr;
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_root_import_host(context_, &import, &root, &raw), ROOTSPAN_ERR_PROVIDER_FAILURE);
  ErrorPtr error(raw);
  EXPECT_NE(message_of(raw).find("fakeHostRegister of 4096 bytes"), std::string::npos) << message_of(raw);
  EXPECT_EQ(g_deleted, 1);  // exactly once, by the core
}

TEST_F(FakeProviderTest, ContextDestroyReleasesLiveRootsAndStreams) {
  open();
  for (int i = 0; i < 3; ++i) {
    rootspan_root *root = nullptr;
    ASSERT_EQ(allocate(ROOTSPAN_MEMORY_DEVICE, 4096, 64, &root), ROOTSPAN_OK);
    rootspan_claim *c = claim(root, ROOTSPAN_CLAIM_EXCLUSIVE);
    const std::vector<char> bytes(4096, 1);
    ASSERT_EQ(rootspan_copy_from_host(c, 0, bytes.data(), bytes.size(), nullptr), ROOTSPAN_OK);  // makes the stream
    ASSERT_EQ(rootspan_claim_release(c, nullptr), ROOTSPAN_OK);
  }
  std::uint64_t live = 0;
  ASSERT_EQ(rootspan_context_destroy(context_, &live), ROOTSPAN_OK);
  context_ = nullptr;
  EXPECT_EQ(live, 3u);
  EXPECT_EQ(fake_gpu::state().streams_created, 1);  // one stream per device, made on first use
  // TearDown checks that every allocation and stream is gone.
}

// ---- the provider ABI directly: asynchronous copies and events ---------------

class FakeTableTest : public FakeProviderTest {
 protected:
  void SetUp() override {
    FakeProviderTest::SetUp();
    plugin_ = std::make_unique<DirectPlugin>(&FakeProvider::table);
    std::string text;
    ASSERT_EQ(plugin_->init("{}", &text), ROOTSPAN_OK) << text;
  }
  void TearDown() override {
    plugin_.reset();  // shutdown
    FakeProviderTest::TearDown();
  }
  const rootspan_provider_table &t() const { return FakeProvider::table; }
  rootspan_status copy(bool to_device, rootspan_provider_allocation &a, std::uint64_t offset, void *host,
                       std::uint64_t length, rootspan_provider_event **event, std::string *text = nullptr) {
    return plugin_->call(
        [&](rootspan_provider_message *m) {
          return to_device ? t().copy_from_host(plugin_->instance(), &a, offset, host, length, event, m)
                           : t().copy_to_host(plugin_->instance(), &a, offset, host, length, event, m);
        },
        text);
  }
  rootspan_status wait(rootspan_provider_event *event) {
    return plugin_->call([&](rootspan_provider_message *m) { return t().event_wait(plugin_->instance(), event, m); });
  }
  std::unique_ptr<DirectPlugin> plugin_;
};

TEST_F(FakeTableTest, AsynchronousCopiesCompleteAtTheEvent) {
  rootspan_provider_allocation a{};
  std::string text;
  ASSERT_EQ(plugin_->allocate(ROOTSPAN_MEMORY_DEVICE, 4096, 256, &a, &text), ROOTSPAN_OK) << text;
  std::vector<char> source(4096, 7);
  std::vector<char> back(4096, 0);
  rootspan_provider_event *up = nullptr;
  rootspan_provider_event *down = nullptr;
  ASSERT_EQ(copy(true, a, 0, source.data(), 4096, &up), ROOTSPAN_OK);
  ASSERT_EQ(copy(false, a, 0, back.data(), 4096, &down), ROOTSPAN_OK);
  ASSERT_NE(up, nullptr);
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(back[0], 0);  // still pending: the fake defers until synchronized
  ASSERT_EQ(wait(up), ROOTSPAN_OK);
  ASSERT_EQ(wait(down), ROOTSPAN_OK);
  EXPECT_EQ(back, source);  // stream order: the upload, then the download
  t().release(plugin_->instance(), &a);
}

TEST_F(FakeTableTest, ReleaseWaitsForPendingCopies) {
  rootspan_provider_allocation a{};
  std::string text;
  ASSERT_EQ(plugin_->allocate(ROOTSPAN_MEMORY_DEVICE, 4096, 256, &a, &text), ROOTSPAN_OK) << text;
  std::vector<char> source(4096, 3);
  rootspan_provider_event *event = nullptr;
  ASSERT_EQ(copy(true, a, 0, source.data(), 4096, &event), ROOTSPAN_OK);
  t().release(plugin_->instance(), &a);  // the fake counts a free under a pending copy (TearDown)
  EXPECT_EQ(wait(event), ROOTSPAN_OK);
}

TEST_F(FakeTableTest, MappingWaitsForPendingCopies) {
  rootspan_provider_allocation a{};
  std::string text;
  ASSERT_EQ(plugin_->allocate(ROOTSPAN_MEMORY_HOST_PINNED, 4096, 4096, &a, &text), ROOTSPAN_OK) << text;
  std::vector<char> source(4096, 5);
  rootspan_provider_event *event = nullptr;
  ASSERT_EQ(copy(true, a, 0, source.data(), 4096, &event), ROOTSPAN_OK);
  rootspan_provider_mapping mapping{};
  mapping.struct_size = sizeof mapping;
  ASSERT_EQ(plugin_->call([&](rootspan_provider_message *m) {
    return t().map_read(plugin_->instance(), &a, 0, 4096, &mapping, m);
  }),
            ROOTSPAN_OK);
  EXPECT_EQ(static_cast<const char *>(mapping.data)[4095], 5);  // the host sees the finished copy
  t().unmap(plugin_->instance(), &a, &mapping);
  EXPECT_EQ(wait(event), ROOTSPAN_OK);
  t().release(plugin_->instance(), &a);
}

TEST_F(FakeTableTest, DeviceMemoryHasNoHostView) {
  rootspan_provider_allocation a{};
  std::string text;
  ASSERT_EQ(plugin_->allocate(ROOTSPAN_MEMORY_DEVICE, 4096, 256, &a, &text), ROOTSPAN_OK) << text;
  EXPECT_EQ(a.host_base, nullptr);
  rootspan_provider_mapping mapping{};
  mapping.struct_size = sizeof mapping;
  for (auto hook : {t().map_read, t().map_write}) {
    EXPECT_EQ(
        plugin_->call([&](rootspan_provider_message *m) { return hook(plugin_->instance(), &a, 0, 4096, &mapping, m); },
                      &text),
        ROOTSPAN_ERR_UNSUPPORTED);
    EXPECT_NE(text.find("FAKE device memory has no host access"), std::string::npos) << text;
  }
  t().release(plugin_->instance(), &a);
}

TEST_F(FakeTableTest, EmptyAsynchronousCopyStillGivesAnEvent) {
  rootspan_provider_allocation a{};
  std::string text;
  ASSERT_EQ(plugin_->allocate(ROOTSPAN_MEMORY_DEVICE, 64, 64, &a, &text), ROOTSPAN_OK) << text;
  rootspan_provider_event *event = nullptr;
  ASSERT_EQ(copy(false, a, 64, nullptr, 0, &event), ROOTSPAN_OK);
  ASSERT_NE(event, nullptr);
  EXPECT_EQ(wait(event), ROOTSPAN_OK);
  EXPECT_EQ(copy(false, a, 0, nullptr, 0, nullptr), ROOTSPAN_OK);  // synchronous and empty: nothing to do
  t().release(plugin_->instance(), &a);
}

TEST_F(FakeTableTest, CopiesOutsideTheAllocationAreRefused) {
  rootspan_provider_allocation a{};
  std::string text;
  ASSERT_EQ(plugin_->allocate(ROOTSPAN_MEMORY_DEVICE, 1024, 64, &a, &text), ROOTSPAN_OK) << text;
  std::vector<char> host(2048);
  EXPECT_EQ(copy(true, a, 512, host.data(), 1024, nullptr, &text), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(text.find("leaves the allocation of 1024 bytes"), std::string::npos) << text;
  EXPECT_EQ(copy(true, a, UINT64_MAX, host.data(), 2, nullptr, &text), ROOTSPAN_ERR_INVALID_ARGUMENT);
  t().release(plugin_->instance(), &a);
}

TEST_F(FakeTableTest, TooManyDevicesForTheGrantedDomains) {
  plugin_.reset();
  fake_gpu::reset(ROOTSPAN_DOMAINS_PER_PROVIDER + 4);
  plugin_ = std::make_unique<DirectPlugin>(&FakeProvider::table);
  std::string text;
  ASSERT_EQ(plugin_->init("{}", &text), ROOTSPAN_OK) << text;
  std::uint32_t count = 0;
  ASSERT_EQ(plugin_->device_count(&count, &text), ROOTSPAN_OK);
  EXPECT_EQ(count, static_cast<std::uint32_t>(ROOTSPAN_DOMAINS_PER_PROVIDER));
  ASSERT_EQ(plugin_->log().size(), 1u);
  EXPECT_NE(plugin_->log()[0].find("exposing only the first 16 of 20 devices"), std::string::npos);
}

}  // namespace
}  // namespace rootspan::testing
