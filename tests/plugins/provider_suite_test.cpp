// One provider suite, two providers: the host provider compiled into
// librootspan (static) and the same source built as librootspan-host.so and
// loaded through a manifest (dynamic). Both must pass it (docs/c-api.md).
#include <unistd.h>

#include <cstring>

#include "plugin_test_support.hpp"

namespace rootspan::testing {
namespace {

struct HostSource {
  const char *label;
  bool from_manifest;
};

void PrintTo(const HostSource &s, std::ostream *os) { *os << s.label; }

class HostProvider : public ::testing::TestWithParam<HostSource> {
 protected:
  void SetUp() override {
    if (GetParam().from_manifest) {
      manifest_ = write_manifest(dir_, "host.json", {{"host", "host", PLUGIN_TEST_HOST_PLUGIN}});
      created_ = create_context({manifest_});
    } else {
      created_ = create_context({}, /*static_providers=*/true);
    }
    ASSERT_EQ(created_.status, ROOTSPAN_OK) << rootspan_error_message(created_.error.get());
    context_ = created_.context.get();
  }

  rootspan_root *allocate(std::uint64_t length, std::uint64_t alignment = 64,
                          rootspan_dtype dtype = ROOTSPAN_DTYPE_NONE) {
    const auto options = allocate_options("host", length, ROOTSPAN_MEMORY_HOST, alignment, dtype);
    rootspan_root *root = nullptr;
    rootspan_error *raw = nullptr;
    const rootspan_status status = rootspan_root_allocate(context_, &options, &root, &raw);
    ErrorPtr error(raw);
    EXPECT_EQ(status, ROOTSPAN_OK) << rootspan_error_message(error.get());
    return root;
  }

  static rootspan_root_info info_of(const rootspan_root *root) {
    rootspan_root_info info{};
    info.struct_size = sizeof info;
    EXPECT_EQ(rootspan_root_get_info(root, &info), ROOTSPAN_OK);
    return info;
  }

  static rootspan_claim *claim(rootspan_root *root, std::uint64_t offset, std::uint64_t length,
                               rootspan_claim_mode mode) {
    rootspan_claim *c = nullptr;
    rootspan_error *raw = nullptr;
    const rootspan_status status = rootspan_claim_acquire(root, offset, length, mode, &c, &raw);
    ErrorPtr error(raw);
    EXPECT_EQ(status, ROOTSPAN_OK) << rootspan_error_message(error.get());
    return c;
  }

  TempDir dir_;
  std::string manifest_;
  Created created_;
  rootspan_context *context_ = nullptr;
};

// Counts deleter calls for imports of caller memory.
struct DeleterLog {
  int calls = 0;
  void *last = nullptr;
  static void call(void *context, void *data) {
    auto *log = static_cast<DeleterLog *>(context);
    ++log->calls;
    log->last = data;
  }
};

rootspan_host_import host_import(void *data, std::uint64_t length, DeleterLog *log, bool read_only = false,
                                 std::uint64_t alignment = alignof(std::max_align_t)) {
  rootspan_host_import import{};
  import.struct_size = sizeof import;
  import.provider = "host";
  import.data = data;
  import.byte_length = length;
  import.alignment = alignment;
  import.read_only = read_only ? 1 : 0;
  import.deleter = log == nullptr ? nullptr : DeleterLog::call;
  import.deleter_context = log;
  return import;
}

TEST_P(HostProvider, IsReportedWithItsOrigin) {
  const auto reports = reports_of(context_);
  ASSERT_EQ(reports.size(), 1u);
  const rootspan_provider_report &r = reports[0];
  EXPECT_STREQ(r.name, "host");
  EXPECT_STREQ(r.kind, "host");
  EXPECT_EQ(r.state, ROOTSPAN_PROVIDER_LOADED);
  EXPECT_EQ(r.abi_major, static_cast<std::uint32_t>(ROOTSPAN_PROVIDER_ABI_MAJOR));
  EXPECT_EQ(r.abi_minor, static_cast<std::uint32_t>(ROOTSPAN_PROVIDER_ABI_MINOR));
  EXPECT_EQ(r.device_count, 1u);
  EXPECT_EQ(r.policy == nullptr || *r.policy == '\0', true) << r.policy;
  if (GetParam().from_manifest) {
    EXPECT_EQ(r.origin, ROOTSPAN_ORIGIN_MANIFEST);
    EXPECT_EQ(text(r.library), PLUGIN_TEST_HOST_PLUGIN);
    EXPECT_EQ(text(r.manifest), manifest_);
  } else {
    EXPECT_EQ(r.origin, ROOTSPAN_ORIGIN_STATIC);
    EXPECT_EQ(r.library, nullptr);
  }
  rootspan_device_info device{};
  device.struct_size = sizeof device;
  ASSERT_EQ(rootspan_provider_device_info(context_, "host", 0, &device, nullptr), ROOTSPAN_OK);
  EXPECT_STREQ(device.name, "host");
  EXPECT_GT(device.total_memory_bytes, 0u);
  EXPECT_EQ(rootspan_provider_device_info(context_, "host", 1, &device, nullptr), ROOTSPAN_ERR_NOT_FOUND);
}

TEST_P(HostProvider, AllocatesUniqueRootsOfAnyLength) {
  std::vector<rootspan_root *> roots;
  std::vector<std::uint64_t> ids;
  for (std::uint64_t length : {0u, 1u, 7u, 4096u, 1u << 20}) {
    rootspan_root *root = allocate(length);
    ASSERT_NE(root, nullptr);
    const auto info = info_of(root);
    EXPECT_EQ(info.byte_length, length);
    EXPECT_GE(info.alignment, 64u);
    EXPECT_EQ(info.dtype, ROOTSPAN_DTYPE_NONE);
    EXPECT_EQ(info.host_accessible, 1);
    EXPECT_EQ(info.read_only, 0);
    EXPECT_STREQ(info.provider, "host");
    EXPECT_NE(info.key.domain, 0u);
    EXPECT_NE(info.key.local, 0u);
    EXPECT_NE(info.root_id, 0u);
    for (std::uint64_t id : ids) EXPECT_NE(id, info.root_id);
    ids.push_back(info.root_id);
    roots.push_back(root);
  }
  for (rootspan_root *root : roots) EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
}

TEST_P(HostProvider, AlignmentUpToAndBeyondThePageSize) {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  for (std::uint64_t alignment = 1; alignment <= 64 * page; alignment *= 2) {
    SCOPED_TRACE("alignment " + std::to_string(alignment));
    rootspan_root *root = allocate(100, alignment);
    ASSERT_NE(root, nullptr);
    EXPECT_GE(info_of(root).alignment, alignment);
    rootspan_claim *c = claim(root, 0, 100, ROOTSPAN_CLAIM_SHARED);
    rootspan_mapping *mapping = nullptr;
    ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_NONE, 0, 100, &mapping, nullptr), ROOTSPAN_OK);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(rootspan_mapping_data(mapping)) % alignment, 0u);
    EXPECT_EQ(rootspan_mapping_length(mapping), 100u);
    EXPECT_EQ(rootspan_unmap(mapping), ROOTSPAN_OK);
    EXPECT_EQ(rootspan_claim_release(c, nullptr), ROOTSPAN_OK);
    EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
  }
  const auto bad = allocate_options("host", 100, ROOTSPAN_MEMORY_HOST, 48);
  rootspan_root *root = nullptr;
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_root_allocate(context_, &bad, &root, &raw), ROOTSPAN_ERR_INVALID_ALIGNMENT);
  ErrorPtr error(raw);
  EXPECT_TRUE(ErrorSays(error.get(), ROOTSPAN_ERR_INVALID_ALIGNMENT, "", "root_allocate",
                        "alignment 48 is not a non-zero power of two"));
}

TEST_P(HostProvider, TypedRootsKeepTheirElementType) {
  rootspan_root *root = allocate(16 * sizeof(float), 64, ROOTSPAN_DTYPE_F32);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(info_of(root).dtype, ROOTSPAN_DTYPE_F32);
  rootspan_claim *c = claim(root, 0, 64, ROOTSPAN_CLAIM_SHARED);
  rootspan_mapping *mapping = nullptr;
  ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_F32, 0, 64, &mapping, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_unmap(mapping), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_C32, 0, 64, &mapping, nullptr), ROOTSPAN_OK);  // its complex partner
  EXPECT_EQ(rootspan_unmap(mapping), ROOTSPAN_OK);
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_I32, 0, 64, &mapping, &raw), ROOTSPAN_ERR_DTYPE_MISMATCH);
  ErrorPtr error(raw);
  EXPECT_TRUE(ErrorSays(error.get(), ROOTSPAN_ERR_DTYPE_MISMATCH, "", "map_read", "cannot be viewed as I32"));
  EXPECT_EQ(rootspan_claim_release(c, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);

  // Not a whole number of elements: refused at import.
  const auto ragged = allocate_options("host", 10, ROOTSPAN_MEMORY_HOST, 64, ROOTSPAN_DTYPE_F32);
  EXPECT_EQ(rootspan_root_allocate(context_, &ragged, &root, nullptr), ROOTSPAN_ERR_DTYPE_MISMATCH);

  // An untyped root takes any type whose size divides the span.
  root = allocate(64);
  c = claim(root, 0, 64, ROOTSPAN_CLAIM_SHARED);
  ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_I64, 0, 64, &mapping, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_unmap(mapping), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_I64, 0, 12, &mapping, nullptr), ROOTSPAN_ERR_DTYPE_MISMATCH);
  EXPECT_EQ(rootspan_claim_release(c, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
}

TEST_P(HostProvider, MapWriteThenMapRead) {
  rootspan_root *root = allocate(32 * sizeof(std::int32_t), 64, ROOTSPAN_DTYPE_I32);
  ASSERT_NE(root, nullptr);
  rootspan_claim *exclusive = claim(root, 0, 128, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_mapping *mapping = nullptr;
  ASSERT_EQ(rootspan_map_write(exclusive, ROOTSPAN_DTYPE_I32, 0, 128, &mapping, nullptr), ROOTSPAN_OK);
  auto *out = static_cast<std::int32_t *>(rootspan_mapping_data(mapping));
  for (int i = 0; i < 32; ++i) out[i] = i * i;
  EXPECT_EQ(rootspan_claim_release(exclusive, nullptr), ROOTSPAN_ERR_BUSY);  // the mapping first
  EXPECT_EQ(rootspan_unmap(mapping), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_claim_release(exclusive, nullptr), ROOTSPAN_OK);

  rootspan_claim *shared = claim(root, 64, 64, ROOTSPAN_CLAIM_SHARED);
  EXPECT_EQ(rootspan_map_write(shared, ROOTSPAN_DTYPE_I32, 0, 64, &mapping, nullptr), ROOTSPAN_ERR_READ_ONLY);
  ASSERT_EQ(rootspan_map_read(shared, ROOTSPAN_DTYPE_I32, 0, 64, &mapping, nullptr), ROOTSPAN_OK);
  const auto *in = static_cast<const std::int32_t *>(rootspan_mapping_data(mapping));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(in[i], (i + 16) * (i + 16));
  EXPECT_EQ(rootspan_unmap(mapping), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_claim_release(shared, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
}

TEST_P(HostProvider, ClaimsConflictAndSplit) {
  rootspan_root *root = allocate(256);
  ASSERT_NE(root, nullptr);
  rootspan_claim *a = claim(root, 0, 128, ROOTSPAN_CLAIM_SHARED);
  rootspan_claim *b = claim(root, 64, 128, ROOTSPAN_CLAIM_SHARED);  // shared claims coexist
  rootspan_claim *x = nullptr;
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_claim_acquire(root, 96, 64, ROOTSPAN_CLAIM_EXCLUSIVE, &x, &raw), ROOTSPAN_ERR_CONFLICT);
  ErrorPtr conflict(raw);
  EXPECT_TRUE(ErrorSays(conflict.get(), ROOTSPAN_ERR_CONFLICT, "", "claim_acquire", "conflict with shared claim"));
  EXPECT_EQ(rootspan_root_release(root, &raw), ROOTSPAN_ERR_BUSY);  // claims are live; the root stays valid
  ErrorPtr busy(raw);
  EXPECT_EQ(rootspan_claim_release(a, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_claim_release(b, nullptr), ROOTSPAN_OK);

  rootspan_claim *parent = claim(root, 0, 256, ROOTSPAN_CLAIM_EXCLUSIVE);
  const rootspan_range ranges[2] = {{0, 100}, {128, 128}};
  rootspan_claim *children[2] = {};
  ASSERT_EQ(rootspan_claim_split(parent, ranges, 2, children, nullptr), ROOTSPAN_OK);
  rootspan_span span{};
  span.struct_size = sizeof span;
  rootspan_claim_mode mode = ROOTSPAN_CLAIM_SHARED;
  ASSERT_EQ(rootspan_claim_get_span(children[1], &span, &mode), ROOTSPAN_OK);
  EXPECT_EQ(span.length, 128u);
  EXPECT_EQ(span.alignment, 64u);  // min(root alignment, lowest set bit of 128)
  EXPECT_EQ(mode, ROOTSPAN_CLAIM_EXCLUSIVE);
  const rootspan_range overlapping[2] = {{0, 50}, {25, 50}};
  rootspan_claim *more[2] = {};
  EXPECT_EQ(rootspan_claim_split(children[0], overlapping, 2, more, nullptr), ROOTSPAN_ERR_CONFLICT);
  EXPECT_EQ(rootspan_claim_release(parent, nullptr), ROOTSPAN_ERR_BUSY);  // children first
  for (rootspan_claim *child : children) EXPECT_EQ(rootspan_claim_release(child, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_claim_release(parent, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
}

TEST_P(HostProvider, CopiesRoundTrip) {
  rootspan_root *root = allocate(1024);
  ASSERT_NE(root, nullptr);
  std::vector<unsigned char> in(512);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 7);
  rootspan_claim *exclusive = claim(root, 256, 512, ROOTSPAN_CLAIM_EXCLUSIVE);
  ASSERT_EQ(rootspan_copy_from_host(exclusive, 0, in.data(), in.size(), nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_copy_from_host(exclusive, 256, in.data(), in.size(), nullptr), ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT);
  EXPECT_EQ(rootspan_claim_release(exclusive, nullptr), ROOTSPAN_OK);

  rootspan_claim *shared = claim(root, 256, 512, ROOTSPAN_CLAIM_SHARED);
  EXPECT_EQ(rootspan_copy_from_host(shared, 0, in.data(), 16, nullptr), ROOTSPAN_ERR_READ_ONLY);
  std::vector<unsigned char> out(512);
  ASSERT_EQ(rootspan_copy_to_host(shared, 0, out.data(), out.size(), nullptr), ROOTSPAN_OK);
  EXPECT_EQ(out, in);
  EXPECT_EQ(rootspan_claim_release(shared, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
}

TEST_P(HostProvider, ImportCallsTheDeleterExactlyOnce) {
  alignas(64) static unsigned char buffer[256];
  std::memset(buffer, 0x5a, sizeof buffer);
  DeleterLog log;
  const auto import = host_import(buffer, sizeof buffer, &log, false, 64);
  rootspan_root *root = nullptr;
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_root_import_host(context_, &import, &root, &raw), ROOTSPAN_OK) << rootspan_error_message(raw);
  EXPECT_EQ(info_of(root).alignment, 64u);
  rootspan_claim *c = claim(root, 0, 256, ROOTSPAN_CLAIM_EXCLUSIVE);
  rootspan_mapping *mapping = nullptr;
  ASSERT_EQ(rootspan_map_write(c, ROOTSPAN_DTYPE_NONE, 0, 256, &mapping, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_mapping_data(mapping), buffer);  // zero-copy
  EXPECT_EQ(rootspan_unmap(mapping), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_claim_release(c, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(log.calls, 0);
  EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(log.calls, 1);
  EXPECT_EQ(log.last, buffer);

  // A failed import calls it too, once, before it returns.
  DeleterLog refused;
  const auto bad = host_import(buffer, sizeof buffer, &refused, false, 3);
  EXPECT_EQ(rootspan_root_import_host(context_, &bad, &root, nullptr), ROOTSPAN_ERR_INVALID_ALIGNMENT);
  EXPECT_EQ(refused.calls, 1);

  // A root left to the context is released when the context goes.
  DeleterLog left;
  const auto kept = host_import(buffer, sizeof buffer, &left);
  ASSERT_EQ(rootspan_root_import_host(context_, &kept, &root, nullptr), ROOTSPAN_OK);
  std::uint64_t live = 0;
  EXPECT_EQ(rootspan_context_destroy(created_.context.release(), &live), ROOTSPAN_OK);
  EXPECT_EQ(live, 1u);
  EXPECT_EQ(left.calls, 1);
}

TEST_P(HostProvider, ReadOnlyRoots) {
  static const char kText[] = "read-only bytes";
  DeleterLog log;
  const auto import = host_import(const_cast<char *>(kText), sizeof kText, &log, true, 1);
  rootspan_root *root = nullptr;
  ASSERT_EQ(rootspan_root_import_host(context_, &import, &root, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(info_of(root).read_only, 1);
  rootspan_claim *c = nullptr;
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_claim_acquire(root, 0, sizeof kText, ROOTSPAN_CLAIM_EXCLUSIVE, &c, &raw), ROOTSPAN_ERR_READ_ONLY);
  ErrorPtr error(raw);
  EXPECT_TRUE(ErrorSays(error.get(), ROOTSPAN_ERR_READ_ONLY, "", "claim_acquire", "read-only"));
  c = claim(root, 0, sizeof kText, ROOTSPAN_CLAIM_SHARED);
  rootspan_mapping *mapping = nullptr;
  EXPECT_EQ(rootspan_map_write(c, ROOTSPAN_DTYPE_NONE, 0, sizeof kText, &mapping, nullptr), ROOTSPAN_ERR_READ_ONLY);
  ASSERT_EQ(rootspan_map_read(c, ROOTSPAN_DTYPE_NONE, 0, sizeof kText, &mapping, nullptr), ROOTSPAN_OK);
  EXPECT_STREQ(static_cast<const char *>(rootspan_mapping_data(mapping)), kText);
  EXPECT_EQ(rootspan_unmap(mapping), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_claim_release(c, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(log.calls, 1);
}

TEST_P(HostProvider, DeviceAccessIsUnsupported) {
  rootspan_root *root = allocate(64);
  ASSERT_NE(root, nullptr);
  const auto info = info_of(root);
  rootspan_claim *c = claim(root, 0, 64, ROOTSPAN_CLAIM_SHARED);
  const std::uint64_t shape[1] = {16};
  const std::int64_t strides[1] = {1};
  rootspan_device_access_request request{};
  request.struct_size = sizeof request;
  request.key = info.key;
  request.byte_length = 64;
  request.element_size = 4;
  request.rank = 1;
  request.shape = shape;
  request.strides = strides;
  rootspan_device_access access{};
  access.struct_size = sizeof access;
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_device_access_prepare(c, &request, &access, &raw), ROOTSPAN_ERR_UNSUPPORTED);
  ErrorPtr error(raw);
  EXPECT_TRUE(ErrorSays(error.get(), ROOTSPAN_ERR_UNSUPPORTED, "", "device_access_prepare",
                        "provider 'host' has no device access"));
  EXPECT_EQ(rootspan_claim_release(c, nullptr), ROOTSPAN_OK);  // nothing holds it
  EXPECT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
}

INSTANTIATE_TEST_SUITE_P(Plugins, HostProvider,
                         ::testing::Values(HostSource{"Static", false}, HostSource{"Dynamic", true}),
                         [](const auto &info) { return std::string(info.param.label); });

}  // namespace
}  // namespace rootspan::testing
