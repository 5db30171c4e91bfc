// The device paths through the embedding API, on a machine with a device
// (skipped elsewhere): device roots (no host mapping, copies, device access),
// pinned roots (mappable and device-accessible), registration of caller host
// memory (including a read-only file mapping, as a retained checkpoint region
// is), and release.
#include <fcntl.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "gpu_support.hpp"

namespace rootspan::testing {
namespace {

class DeviceTest : public GpuProviderTest {
 protected:
  void SetUp() override {
    GPU_TEST_REQUIRE_PLUGIN(kind());
    context_ = std::make_unique<ManifestContext>(kind());
    ASSERT_EQ(context_->status(), ROOTSPAN_OK) << context_->error();
    rootspan_provider_report report{};
    ASSERT_TRUE(context_->report(&report));
    ASSERT_EQ(report.state, report.device_count == 0 ? ROOTSPAN_PROVIDER_NO_DEVICE : ROOTSPAN_PROVIDER_LOADED)
        << (report.reason ? report.reason : "");
    if (report.device_count == 0) GTEST_SKIP() << "no " << runtime_of(kind()) << " device: " << report.reason;
  }

  // Allocates a root; fails the test on error.
  rootspan_root *allocate(rootspan_memory_kind memory, std::uint64_t length, std::uint64_t alignment = 0,
                          std::uint32_t device = 0) {
    rootspan_allocate_options options{};
    options.struct_size = sizeof options;
    options.provider = kind().c_str();
    options.device = device;
    options.memory_kind = memory;
    options.byte_length = length;
    options.alignment = alignment;
    rootspan_root *root = nullptr;
    rootspan_error *raw = nullptr;
    const rootspan_status status = rootspan_root_allocate(context_->get(), &options, &root, &raw);
    ErrorPtr error(raw);
    EXPECT_EQ(status, ROOTSPAN_OK) << message_of(error.get());
    return root;
  }

  static rootspan_root_info info_of(const rootspan_root *root) {
    rootspan_root_info info{};
    info.struct_size = sizeof info;
    EXPECT_EQ(rootspan_root_get_info(root, &info), ROOTSPAN_OK);
    return info;
  }

  static rootspan_claim *claim(rootspan_root *root, rootspan_claim_mode mode) {
    rootspan_claim *c = nullptr;
    rootspan_error *raw = nullptr;
    EXPECT_EQ(rootspan_claim_acquire(root, 0, info_of(root).byte_length, mode, &c, &raw), ROOTSPAN_OK)
        << message_of(raw);
    rootspan_error_free(raw);
    return c;
  }

  // A one-dimensional device access of `count` elements of `size` bytes.
  static rootspan_status access(rootspan_claim *c, const rootspan_root *root, std::uint64_t size, std::uint64_t offset,
                                std::uint64_t count, rootspan_device_access *out, std::string *why = nullptr) {
    const rootspan_root_info info = info_of(root);
    const std::uint64_t shape[] = {count};
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
    rootspan_error *raw = nullptr;
    const rootspan_status status = rootspan_device_access_prepare(c, &request, out, &raw);
    if (why != nullptr) *why = message_of(raw);
    rootspan_error_free(raw);
    return status;
  }

  static void release(rootspan_claim *c, rootspan_root *root) {
    EXPECT_EQ(rootspan_claim_release(c, nullptr), ROOTSPAN_OK);
    EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
  }

  std::unique_ptr<ManifestContext> context_;
};

TEST_P(DeviceTest, DeviceRootCopiesButDoesNotMap) {
  constexpr std::uint64_t kBytes = 1 << 20;
  rootspan_root *root = allocate(ROOTSPAN_MEMORY_DEVICE, kBytes);
  ASSERT_NE(root, nullptr);
  const rootspan_root_info info = info_of(root);
  EXPECT_EQ(info.host_accessible, 0);
  EXPECT_STREQ(info.provider, kind().c_str());
  EXPECT_GE(info.alignment, 64u);
  rootspan_claim *c = claim(root, ROOTSPAN_CLAIM_EXCLUSIVE);
  ASSERT_NE(c, nullptr);

  rootspan_mapping *mapping = nullptr;
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_NONE, 0, kBytes, &mapping, &raw), ROOTSPAN_ERR_UNSUPPORTED);
  ErrorPtr error(raw);
  EXPECT_NE(message_of(error.get()).find(kind()), std::string::npos) << message_of(error.get());

  std::vector<std::uint32_t> source(kBytes / 4);
  std::iota(source.begin(), source.end(), 1u);
  ASSERT_EQ(rootspan_copy_from_host(c, 0, source.data(), kBytes, nullptr), ROOTSPAN_OK);
  std::vector<std::uint32_t> back(kBytes / 4, 0);
  ASSERT_EQ(rootspan_copy_to_host(c, 0, back.data(), kBytes, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(back, source);
  // A sub-range lands where it should.
  std::vector<std::uint32_t> part(16, 0);
  ASSERT_EQ(rootspan_copy_to_host(c, 4096, part.data(), part.size() * 4, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(part.front(), 1025u);
  release(c, root);
}

TEST_P(DeviceTest, DeviceAccessGivesPointerOrdinalAndStream) {
  constexpr std::uint64_t kBytes = 1 << 16;
  rootspan_root *root = allocate(ROOTSPAN_MEMORY_DEVICE, kBytes, 4096);
  ASSERT_NE(root, nullptr);
  EXPECT_GE(info_of(root).alignment, 4096u);
  rootspan_claim *c = claim(root, ROOTSPAN_CLAIM_SHARED);
  rootspan_device_access first{};
  rootspan_device_access later{};
  std::string why;
  ASSERT_EQ(access(c, root, 4, 0, kBytes / 4, &first, &why), ROOTSPAN_OK) << why;
  ASSERT_EQ(access(c, root, 4, 16, kBytes / 4 - 16, &later, &why), ROOTSPAN_OK) << why;
  ASSERT_NE(first.device_ptr, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first.device_ptr) % 4096, 0u);
  EXPECT_EQ(static_cast<char *>(later.device_ptr) - static_cast<char *>(first.device_ptr), 64);
  EXPECT_EQ(first.device_ordinal, 0u);
  EXPECT_NE(first.stream, nullptr);
  EXPECT_EQ(first.stream, later.stream);  // one stream per device
  EXPECT_EQ(rootspan_device_access_release(c, &later), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_device_access_release(c, &first), ROOTSPAN_OK);
  release(c, root);
}

TEST_P(DeviceTest, LargeAlignmentsAreMet) {
  for (std::uint64_t alignment : {std::uint64_t{512}, std::uint64_t{1} << 16, std::uint64_t{1} << 21}) {
    for (rootspan_memory_kind memory : {ROOTSPAN_MEMORY_DEVICE, ROOTSPAN_MEMORY_HOST_PINNED}) {
      rootspan_root *root = allocate(memory, 1000, alignment);
      ASSERT_NE(root, nullptr);
      EXPECT_GE(info_of(root).alignment, alignment);
      rootspan_claim *c = claim(root, ROOTSPAN_CLAIM_SHARED);
      rootspan_device_access a{};
      std::string why;
      ASSERT_EQ(access(c, root, 1, 0, 1000, &a, &why), ROOTSPAN_OK) << why;
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.device_ptr) % alignment, 0u) << "kind " << memory;
      EXPECT_EQ(rootspan_device_access_release(c, &a), ROOTSPAN_OK);
      release(c, root);
    }
  }
}

TEST_P(DeviceTest, PinnedRootMapsCopiesAndHasADeviceView) {
  constexpr std::uint64_t kBytes = 1 << 20;
  rootspan_root *root = allocate(ROOTSPAN_MEMORY_HOST_PINNED, kBytes, 4096);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(info_of(root).host_accessible, 1);
  rootspan_claim *c = claim(root, ROOTSPAN_CLAIM_EXCLUSIVE);

  rootspan_mapping *mapping = nullptr;
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_map_write(c, ROOTSPAN_DTYPE_U32, 0, kBytes, &mapping, &raw), ROOTSPAN_OK) << message_of(raw);
  auto *words = static_cast<std::uint32_t *>(rootspan_mapping_data(mapping));
  for (std::uint64_t i = 0; i < kBytes / 4; ++i) words[i] = static_cast<std::uint32_t>(i * 3);
  EXPECT_EQ(rootspan_unmap(mapping), ROOTSPAN_OK);

  std::vector<std::uint32_t> back(kBytes / 4);
  ASSERT_EQ(rootspan_copy_to_host(c, 0, back.data(), kBytes, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(back[12345], 12345u * 3);
  const std::vector<std::uint32_t> fresh(kBytes / 4, 0xabcdef01u);
  ASSERT_EQ(rootspan_copy_from_host(c, 0, fresh.data(), kBytes, nullptr), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_U32, 0, kBytes, &mapping, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(static_cast<const std::uint32_t *>(rootspan_mapping_data(mapping))[777], 0xabcdef01u);
  EXPECT_EQ(rootspan_unmap(mapping), ROOTSPAN_OK);

  rootspan_device_access a{};
  std::string why;
  ASSERT_EQ(access(c, root, 4, 0, kBytes / 4, &a, &why), ROOTSPAN_OK) << why;
  EXPECT_NE(a.device_ptr, nullptr);
  EXPECT_NE(a.stream, nullptr);
  EXPECT_EQ(rootspan_device_access_release(c, &a), ROOTSPAN_OK);
  release(c, root);
}

TEST_P(DeviceTest, RegisteredHostMemoryIsUsedInPlace) {
  constexpr std::uint64_t kBytes = 1 << 20;
  static int deleted = 0;
  deleted = 0;
  void *data = std::aligned_alloc(4096, kBytes);
  ASSERT_NE(data, nullptr);
  std::memset(data, 0x11, kBytes);
  rootspan_host_import import{};
  import.struct_size = sizeof import;
  import.provider = kind().c_str();
  import.data = data;
  import.byte_length = kBytes;
  import.alignment = 4096;
  import.deleter = [](void *, void *p) { ++deleted;
  std::free(p);
};
rootspan_root *root = nullptr;
rootspan_error *raw = nullptr;
ASSERT_EQ(rootspan_root_import_host(context_->get(), &import, &root, &raw), ROOTSPAN_OK) << message_of(raw);
EXPECT_EQ(info_of(root).host_accessible, 1);
rootspan_claim *c = claim(root, ROOTSPAN_CLAIM_EXCLUSIVE);

rootspan_mapping *mapping = nullptr;
ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_NONE, 0, kBytes, &mapping, nullptr), ROOTSPAN_OK);
EXPECT_EQ(rootspan_mapping_data(mapping), data);  // no copy: the caller's own bytes
EXPECT_EQ(rootspan_unmap(mapping), ROOTSPAN_OK);

const std::vector<char> fresh(kBytes, 0x22);
ASSERT_EQ(rootspan_copy_from_host(c, 0, fresh.data(), kBytes, nullptr), ROOTSPAN_OK);
EXPECT_EQ(static_cast<const char *>(data)[kBytes - 1], 0x22);

rootspan_device_access a{};
std::string why;
ASSERT_EQ(access(c, root, 1, 0, kBytes, &a, &why), ROOTSPAN_OK) << why;
EXPECT_NE(a.device_ptr, nullptr);
EXPECT_EQ(rootspan_device_access_release(c, &a), ROOTSPAN_OK);

EXPECT_EQ(deleted, 0);
release(c, root);
EXPECT_EQ(deleted, 1);  // unregistered, then the deleter, exactly once
}  // namespace

TEST_P(DeviceTest, ReadOnlyFileMappingRegisters) {
  if (kind() != "cuda") GTEST_SKIP() << "HIP has no read-only host registration";
  constexpr std::uint64_t kBytes = 1 << 20;
  TempDir dir;
  const std::string path = (dir.path() / "weights.bin").string();
  {
    std::vector<char> bytes(kBytes);
    for (std::uint64_t i = 0; i < kBytes; ++i) bytes[i] = static_cast<char>(i % 251);
    std::ofstream(path, std::ios::binary).write(bytes.data(), kBytes);
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void *region = ::mmap(nullptr, kBytes, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  ASSERT_NE(region, MAP_FAILED);

  rootspan_host_import import{};
  import.struct_size = sizeof import;
  import.provider = kind().c_str();
  import.data = region;
  import.byte_length = kBytes;
  import.alignment = 4096;
  import.read_only = 1;
  import.deleter = [](void *, void *p) { ::munmap(p, 1 << 20);
};
rootspan_root *root = nullptr;
rootspan_error *raw = nullptr;
ASSERT_EQ(rootspan_root_import_host(context_->get(), &import, &root, &raw), ROOTSPAN_OK) << message_of(raw);
rootspan_claim *c = claim(root, ROOTSPAN_CLAIM_SHARED);
std::vector<char> back(kBytes);
ASSERT_EQ(rootspan_copy_to_host(c, 0, back.data(), kBytes, nullptr), ROOTSPAN_OK);
EXPECT_EQ(back[1000], static_cast<char>(1000 % 251));
rootspan_device_access a{};
std::string why;
ASSERT_EQ(access(c, root, 1, 0, kBytes, &a, &why), ROOTSPAN_OK) << why;
EXPECT_NE(a.device_ptr, nullptr);
EXPECT_EQ(rootspan_device_access_release(c, &a), ROOTSPAN_OK);
release(c, root);
}  // namespace rootspan::testing

TEST_P(DeviceTest, ZeroLengthRootsAndWrongOrdinals) {
  for (rootspan_memory_kind memory : {ROOTSPAN_MEMORY_DEVICE, ROOTSPAN_MEMORY_HOST_PINNED}) {
    rootspan_root *root = allocate(memory, 0);
    ASSERT_NE(root, nullptr);
    EXPECT_EQ(info_of(root).byte_length, 0u);
    EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
  }
  rootspan_allocate_options options{};
  options.struct_size = sizeof options;
  options.provider = kind().c_str();
  options.device = 1000;
  options.memory_kind = ROOTSPAN_MEMORY_DEVICE;
  options.byte_length = 64;
  rootspan_root *root = nullptr;
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_root_allocate(context_->get(), &options, &root, &raw), ROOTSPAN_ERR_NOT_FOUND);
  ErrorPtr error(raw);
  EXPECT_NE(message_of(error.get()).find("device 1000"), std::string::npos) << message_of(error.get());
}

TEST_P(DeviceTest, ContextDestroyReleasesLiveRoots) {
  constexpr std::uint64_t kBytes = std::uint64_t{128} << 20;
  // The device's free memory as the runtime reports it, through the fixture's
  // own context (device memory is per device, not per context).
  auto free_memory = [&] {
    rootspan_device_info info{};
    info.struct_size = sizeof info;
    EXPECT_EQ(rootspan_provider_device_info(context_->get(), kind().c_str(), 0, &info, nullptr), ROOTSPAN_OK);
    return info.free_memory_bytes;
  };
  ManifestContext other(kind());
  ASSERT_EQ(other.status(), ROOTSPAN_OK) << other.error();
  rootspan_allocate_options options{};
  options.struct_size = sizeof options;
  options.provider = kind().c_str();
  options.memory_kind = ROOTSPAN_MEMORY_DEVICE;
  options.byte_length = kBytes;
  const std::uint64_t before = free_memory();
  for (int i = 0; i < 3; ++i) {
    rootspan_root *root = nullptr;
    ASSERT_EQ(rootspan_root_allocate(other.get(), &options, &root, nullptr), ROOTSPAN_OK);
  }
  const std::uint64_t held = free_memory();
  ASSERT_LE(held + 3 * kBytes, before + (std::uint64_t{32} << 20)) << "the three roots did not take device memory";
  // Destroyed with three live roots: each is released through the provider
  // before it shuts down, and the device gets its memory back.
  EXPECT_EQ(other.destroy(), 3u);
  EXPECT_GE(free_memory() + (std::uint64_t{32} << 20), held + 3 * kBytes);
}

INSTANTIATE_TEST_SUITE_P(Providers, DeviceTest, ::testing::Values("cuda", "rocm"), kind_name);

}  // namespace
}  // namespace rootspan::testing
