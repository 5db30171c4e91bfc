// The device plugins through the core, as a deployment meets them: a manifest
// names the plugin, the context loads it next to the static host provider,
// negotiates, and reports its devices. Without a device (CI, this machine) the
// provider still loads, reports zero devices with the runtime's reason, and
// an allocation fails with an error that says why.
#include <cstring>
#include <string>
#include <vector>

#include "gpu_support.hpp"

namespace rootspan::testing {
namespace {

class ManifestTest : public GpuProviderTest {
 protected:
  void SetUp() override { GPU_TEST_REQUIRE_PLUGIN(kind()); }
};

TEST_P(ManifestTest, LoadsNegotiatesAndReports) {
  ManifestContext context(kind(), "{\"devices\": [0]}");
  ASSERT_EQ(context.status(), ROOTSPAN_OK) << context.error();

  std::size_t manifests = 0;
  ASSERT_EQ(rootspan_manifest_count(context.get(), &manifests), ROOTSPAN_OK);
  ASSERT_EQ(manifests, 1u);

  rootspan_provider_report report{};
  ASSERT_TRUE(context.report(&report)) << "no report for " << kind();
  // Started either way; without a device its state says so, apart from "loaded".
  EXPECT_EQ(report.state, report.device_count == 0 ? ROOTSPAN_PROVIDER_NO_DEVICE : ROOTSPAN_PROVIDER_LOADED)
      << (report.reason ? report.reason : "");
  EXPECT_EQ(report.origin, ROOTSPAN_ORIGIN_MANIFEST);
  EXPECT_STREQ(report.kind, kind().c_str());
  EXPECT_EQ(report.abi_major, 1u);
  EXPECT_GE(report.abi_minor, 1u);
  EXPECT_EQ(report.priority, 100);
  ASSERT_NE(report.library, nullptr);
  EXPECT_NE(std::string(report.library).find("librootspan-" + kind() + ".so"), std::string::npos);

  if (report.device_count == 0) {
    // Zero devices is a valid answer, and the runtime says why.
    ASSERT_NE(report.reason, nullptr);
    EXPECT_STRNE(report.reason, "");
    std::printf("[ %s ] no device: %s\n", kind().c_str(), report.reason);
  } else {
    for (std::uint32_t ordinal = 0; ordinal < report.device_count; ++ordinal) {
      rootspan_device_info info{};
      info.struct_size = sizeof info;
      rootspan_error *raw = nullptr;
      ASSERT_EQ(rootspan_provider_device_info(context.get(), kind().c_str(), ordinal, &info, &raw), ROOTSPAN_OK)
          << message_of(raw);
      EXPECT_EQ(info.ordinal, ordinal);
      EXPECT_STRNE(info.name, "");
      EXPECT_STRNE(info.pci_bus_id, "");
      EXPECT_GT(info.total_memory_bytes, 0u);
      EXPECT_LE(info.free_memory_bytes, info.total_memory_bytes);
      std::printf("[ %s ] device %u: %s, PCI %s, %llu bytes, %llu free\n", kind().c_str(), ordinal, info.name,
                  info.pci_bus_id, static_cast<unsigned long long>(info.total_memory_bytes),
                  static_cast<unsigned long long>(info.free_memory_bytes));
    }
  }
}

TEST_P(ManifestTest, StaticHostProviderStillThere) {
  ManifestContext context(kind());
  ASSERT_EQ(context.status(), ROOTSPAN_OK) << context.error();
  std::size_t count = 0;
  rootspan_provider_report_count(context.get(), &count);
  bool host = false;
  for (std::size_t i = 0; i < count; ++i) {
    rootspan_provider_report r{};
    r.struct_size = sizeof r;
    rootspan_provider_report_get(context.get(), i, &r);
    if (r.name != nullptr && std::strcmp(r.name, "host") == 0) host = r.state == ROOTSPAN_PROVIDER_LOADED;
  }
  EXPECT_TRUE(host);
}

TEST_P(ManifestTest, BadOptionsFailTheProviderOnly) {
  ManifestContext context(kind(), "{\"gpus\": [0]}");
  ASSERT_EQ(context.status(), ROOTSPAN_OK) << context.error();  // the host provider is still there (L7)
  rootspan_provider_report report{};
  ASSERT_TRUE(context.report(&report));
  EXPECT_EQ(report.state, ROOTSPAN_PROVIDER_FAILED);
  ASSERT_NE(report.reason, nullptr);
  EXPECT_NE(std::string(report.reason).find("unknown option \"gpus\""), std::string::npos) << report.reason;
}

TEST_P(ManifestTest, WithoutADeviceAllocationFailsClearly) {
  ManifestContext context(kind());
  ASSERT_EQ(context.status(), ROOTSPAN_OK) << context.error();
  rootspan_provider_report report{};
  ASSERT_TRUE(context.report(&report));
  if (report.device_count != 0) GTEST_SKIP() << "this machine has a " << runtime_of(kind()) << " device";
  ASSERT_EQ(report.state, ROOTSPAN_PROVIDER_NO_DEVICE);
  const std::string reason = report.reason;

  for (rootspan_memory_kind memory : {ROOTSPAN_MEMORY_DEVICE, ROOTSPAN_MEMORY_HOST_PINNED}) {
    rootspan_allocate_options options{};
    options.struct_size = sizeof options;
    options.provider = kind().c_str();
    options.device = 0;
    options.memory_kind = memory;
    options.byte_length = 1 << 20;
    rootspan_root *root = nullptr;
    rootspan_error *raw = nullptr;
    EXPECT_EQ(rootspan_root_allocate(context.get(), &options, &root, &raw), ROOTSPAN_ERR_NOT_FOUND);
    ErrorPtr error(raw);
    ASSERT_NE(error, nullptr);
    EXPECT_EQ(root, nullptr);
    const std::string message = rootspan_error_message(error.get());
    EXPECT_NE(message.find(std::string("no ") + runtime_of(kind()) + " device"), std::string::npos) << message;
    EXPECT_NE(message.find(reason), std::string::npos) << message;
    std::printf("[ %s ] allocation without a device: %s\n", kind().c_str(), message.c_str());
  }

  // Registration of host memory fails the same way, and the caller's deleter
  // runs exactly once (the provider took nothing).
  static int deleted = 0;
  deleted = 0;
  std::vector<char> bytes(4096);
  rootspan_host_import import{};
  import.struct_size = sizeof import;
  import.provider = kind().c_str();
  import.data = bytes.data();
  import.byte_length = bytes.size();
  import.alignment = 1;
  import.deleter = [](void *, void *) { ++deleted;
};
rootspan_root *root = nullptr;
rootspan_error *raw = nullptr;
EXPECT_EQ(rootspan_root_import_host(context.get(), &import, &root, &raw), ROOTSPAN_ERR_NOT_FOUND);
ErrorPtr error(raw);
EXPECT_NE(message_of(error.get()).find(reason), std::string::npos) << message_of(error.get());
EXPECT_EQ(deleted, 1);
}  // namespace

INSTANTIATE_TEST_SUITE_P(Providers, ManifestTest, ::testing::Values("cuda", "rocm"), kind_name);

}  // namespace rootspan::testing
}  // namespace rootspan::testing
