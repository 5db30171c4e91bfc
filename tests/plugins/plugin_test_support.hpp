// What the plugin suites share: where the test providers are, manifests in a
// temporary folder, contexts and errors as owning pointers, reports by name,
// error checks, and the round trip that shows the simulated device provider
// still works. Only the public C API (librootspan.so) is used.
#pragma once

#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "rootspan/rootspan.h"
#include "tests/support/c_api_owners.hpp"
#include "tests/support/temp_dir.hpp"

namespace rootspan::testing {

namespace fs = std::filesystem;

// librootspan-tp-<name>.so, built in this suite's build folder.
inline std::string provider_library(std::string_view name) {
  return std::string(PLUGIN_TEST_DIR) + "/librootspan-tp-" + std::string(name) + ".so";
}

// The neighbour every test loads beside a misbehaving provider.
inline constexpr const char *kSimdev = "simdev";

// One manifest entry (docs/loader-policies.md).
struct Entry {
  std::string name;
  std::string kind = "test";
  std::string library;  // "": provider_library(name)
  std::uint32_t abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR;
  std::uint32_t abi_minor = ROOTSPAN_PROVIDER_ABI_MINOR;
  bool enabled = true;
};

// A test provider's entry: named as its library, kind "test".
inline Entry entry_for(std::string_view provider) {
  return {std::string(provider), "test", provider_library(provider)};
}

inline Entry simdev_entry() { return {kSimdev, "simulated", provider_library("simdev")}; }

inline nlohmann::json manifest_document(const std::vector<Entry> &entries) {
  nlohmann::json providers = nlohmann::json::array();
  for (const Entry &e : entries) {
    providers.push_back({{"name", e.name},
                         {"kind", e.kind},
                         {"library", e.library.empty() ? provider_library(e.name) : e.library},
                         {"abi", {{"major", e.abi_major}, {"minor", e.abi_minor}}},
                         {"enabled", e.enabled}});
  }
  return {{"file_format_version", "1.0.0"}, {"providers", providers}};
}

inline std::string write_manifest(const TempDir &dir, std::string_view file, const std::vector<Entry> &entries) {
  return dir.write(file, manifest_document(entries).dump(2)).string();
}

struct ContextDestroy {
  void operator()(rootspan_context *c) const { rootspan_context_destroy(c, nullptr); }
};
using ContextPtr = std::unique_ptr<rootspan_context, ContextDestroy>;

struct Created {
  rootspan_status status = ROOTSPAN_OK;
  ContextPtr context;
  ErrorPtr error;
};

inline Created create_context(const std::vector<std::string> &manifests, bool static_providers = false) {
  std::vector<const char *> paths;
  for (const std::string &m : manifests) paths.push_back(m.c_str());
  rootspan_context_options options{};
  options.struct_size = sizeof options;
  options.no_static_providers = static_providers ? 0 : 1;
  options.manifests = paths.data();
  options.manifest_count = paths.size();
  rootspan_context *context = nullptr;
  rootspan_error *error = nullptr;
  Created created;
  created.status = rootspan_context_create(&options, &context, &error);
  created.context.reset(context);
  created.error.reset(error);
  return created;
}

inline std::vector<rootspan_provider_report> reports_of(const rootspan_context *context) {
  std::size_t count = 0;
  rootspan_provider_report_count(context, &count);
  std::vector<rootspan_provider_report> reports;
  for (std::size_t i = 0; i < count; ++i) {
    rootspan_provider_report r{};
    r.struct_size = sizeof r;
    if (rootspan_provider_report_get(context, i, &r) == ROOTSPAN_OK) reports.push_back(r);
  }
  return reports;
}

// The report of the provider of that name (and library, when given).
inline std::optional<rootspan_provider_report> report_of(const rootspan_context *context, std::string_view name,
                                                         std::string_view library = {}) {
  for (const rootspan_provider_report &r : reports_of(context)) {
    if (r.name != nullptr && name == r.name && (library.empty() || (r.library != nullptr && library == r.library))) {
      return r;
    }
  }
  return std::nullopt;
}

inline std::string text(const char *s) { return s == nullptr ? "(null)" : s; }

inline std::string describe(const rootspan_provider_report &r) {
  return "report " + text(r.name) + " state " + std::to_string(r.state) + " policy " + text(r.policy) + " reason " +
         text(r.reason);
}

// A skip or failure names its policy in the report (and, with cites_policy,
// in its reason too), and gives every expected piece of the reason.
inline ::testing::AssertionResult ReportSays(const rootspan_provider_report &r, rootspan_provider_state state,
                                             std::string_view policy, const std::vector<std::string> &pieces,
                                             bool cites_policy = true) {
  if (r.state != state) return ::testing::AssertionFailure() << "state != " << state << ": " << describe(r);
  if (r.policy == nullptr || policy != r.policy) {
    return ::testing::AssertionFailure() << "policy != " << policy << ": " << describe(r);
  }
  const std::string reason = text(r.reason);
  if (cites_policy && reason.find(std::string(policy) + ": ") == std::string::npos) {
    return ::testing::AssertionFailure() << "reason does not cite " << policy << ": " << describe(r);
  }
  for (const std::string &piece : pieces) {
    if (reason.find(piece) == std::string::npos) {
      return ::testing::AssertionFailure() << "reason lacks \"" << piece << "\": " << describe(r);
    }
  }
  return ::testing::AssertionSuccess();
}

// An error's code, policy ("" for none; nullopt: not checked), operation and a
// piece of its cause.
inline ::testing::AssertionResult ErrorSays(const rootspan_error *e, rootspan_status code,
                                            std::optional<std::string_view> policy, std::string_view operation,
                                            std::string_view cause) {
  if (e == nullptr) return ::testing::AssertionFailure() << "no error";
  const std::string message = rootspan_error_message(e);
  if (rootspan_error_code(e) != code) {
    return ::testing::AssertionFailure() << "code " << rootspan_status_name(rootspan_error_code(e))
                                         << " != " << rootspan_status_name(code) << ": " << message;
  }
  if (policy && *policy != rootspan_error_policy(e)) {
    return ::testing::AssertionFailure() << "policy \"" << rootspan_error_policy(e) << "\" != \"" << *policy
                                         << "\": " << message;
  }
  if (operation != rootspan_error_operation(e)) {
    return ::testing::AssertionFailure() << "operation " << rootspan_error_operation(e) << " != " << operation << ": "
                                         << message;
  }
  if (std::string(rootspan_error_cause(e)).find(cause) == std::string::npos) {
    return ::testing::AssertionFailure() << "cause lacks \"" << cause << "\": " << message;
  }
  return ::testing::AssertionSuccess() << message;
}

inline ::testing::AssertionResult ErrorValues(const rootspan_error *e, std::uint64_t expected, std::uint64_t actual) {
  std::uint64_t want = 0;
  std::uint64_t got = 0;
  if (rootspan_error_values(e, &want, &got) == 0) return ::testing::AssertionFailure() << "no values";
  if (want != expected || got != actual) {
    return ::testing::AssertionFailure() << "values (" << want << ", " << got << ") != (" << expected << ", " << actual
                                         << ")";
  }
  return ::testing::AssertionSuccess();
}

// A library this process already has loaded (by any name), held while alive.
class LoadedLibrary {
 public:
  explicit LoadedLibrary(const std::string &path, int flags = RTLD_NOW | RTLD_NOLOAD)
      : handle_(::dlopen(path.c_str(), flags)) {}
  ~LoadedLibrary() {
    if (handle_ != nullptr) ::dlclose(handle_);
  }
  LoadedLibrary(const LoadedLibrary &) = delete;
  LoadedLibrary &operator=(const LoadedLibrary &) = delete;
  void *handle() const { return handle_; }
  void *symbol(const char *name) const { return handle_ == nullptr ? nullptr : ::dlsym(handle_, name); }

 private:
  void *handle_;
};

// The allocations of a loaded test provider not yet released, or -1 when the
// library is not loaded.
inline std::int64_t live_allocations(std::string_view provider) {
  LoadedLibrary library(provider_library(provider));
  auto *count = reinterpret_cast<std::int64_t (*)()>(library.symbol("rootspan_test_live_allocations"));
  return count == nullptr ? -1 : count();
}

inline rootspan_allocate_options allocate_options(const char *provider, std::uint64_t length,
                                                  rootspan_memory_kind kind = ROOTSPAN_MEMORY_HOST,
                                                  std::uint64_t alignment = 64,
                                                  rootspan_dtype dtype = ROOTSPAN_DTYPE_NONE) {
  rootspan_allocate_options o{};
  o.struct_size = sizeof o;
  o.provider = provider;
  o.memory_kind = kind;
  o.byte_length = length;
  o.alignment = alignment;
  o.dtype = dtype;
  return o;
}

// The simulated device provider, loaded beside a misbehaving one, still
// works: allocate device memory, claim it, copy in, reach it through a device
// access (its pointer is host memory in disguise, so the test plays the
// kernel), copy out, see that it has no host mapping, release everything.
inline void ExpectSimdevWorks(rootspan_context *context) {
  SCOPED_TRACE("the simulated device provider beside it");
  auto report = report_of(context, kSimdev);
  ASSERT_TRUE(report.has_value()) << "no simdev report";
  ASSERT_EQ(report->state, ROOTSPAN_PROVIDER_LOADED) << describe(*report);
  EXPECT_EQ(report->device_count, 1u);

  constexpr std::uint64_t kCount = 64;
  const auto options =
      allocate_options(kSimdev, kCount * sizeof(float), ROOTSPAN_MEMORY_DEVICE, 256, ROOTSPAN_DTYPE_F32);
  rootspan_root *root = nullptr;
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_root_allocate(context, &options, &root, &raw), ROOTSPAN_OK) << rootspan_error_message(raw);
  rootspan_root_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(rootspan_root_get_info(root, &info), ROOTSPAN_OK);
  EXPECT_EQ(info.host_accessible, 0);
  EXPECT_STREQ(info.provider, kSimdev);

  rootspan_claim *claim = nullptr;
  ASSERT_EQ(rootspan_claim_acquire(root, 0, options.byte_length, ROOTSPAN_CLAIM_EXCLUSIVE, &claim, nullptr),
            ROOTSPAN_OK);
  std::vector<float> in(kCount);
  for (std::uint64_t i = 0; i < kCount; ++i) in[i] = static_cast<float>(i);
  ASSERT_EQ(rootspan_copy_from_host(claim, 0, in.data(), options.byte_length, nullptr), ROOTSPAN_OK);

  // Every other element, from element 2: a "kernel" doubles them.
  const std::uint64_t shape[1] = {16};
  const std::int64_t strides[1] = {2};
  rootspan_device_access_request request{};
  request.struct_size = sizeof request;
  request.key = info.key;
  request.byte_length = options.byte_length;
  request.element_size = sizeof(float);
  request.element_offset = 2;
  request.rank = 1;
  request.shape = shape;
  request.strides = strides;
  rootspan_device_access access{};
  access.struct_size = sizeof access;
  ASSERT_EQ(rootspan_device_access_prepare(claim, &request, &access, &raw), ROOTSPAN_OK) << rootspan_error_message(raw);
  EXPECT_EQ(access.device_ordinal, 0u);
  EXPECT_NE(access.stream, nullptr);
  auto *device = static_cast<float *>(access.device_ptr);
  ASSERT_NE(device, nullptr);
  EXPECT_EQ(device[0], 2.0f);
  for (std::uint64_t i = 0; i < shape[0]; ++i) device[i * strides[0]] *= 2;
  EXPECT_EQ(rootspan_claim_release(claim, nullptr), ROOTSPAN_ERR_BUSY);  // the access holds it
  ASSERT_EQ(rootspan_device_access_release(claim, &access), ROOTSPAN_OK);

  std::vector<float> out(kCount);
  ASSERT_EQ(rootspan_copy_to_host(claim, 0, out.data(), options.byte_length, nullptr), ROOTSPAN_OK);
  for (std::uint64_t i = 0; i < kCount; ++i) {
    const bool doubled = i >= 2 && i < 2 + 2 * shape[0] && i % 2 == 0;
    EXPECT_EQ(out[i], doubled ? 2.0f * static_cast<float>(i) : static_cast<float>(i)) << "element " << i;
  }

  rootspan_mapping *mapping = nullptr;
  EXPECT_EQ(rootspan_map_read(claim, ROOTSPAN_DTYPE_F32, 0, 16, &mapping, &raw), ROOTSPAN_ERR_UNSUPPORTED);
  ErrorPtr unsupported(raw);
  EXPECT_TRUE(ErrorSays(unsupported.get(), ROOTSPAN_ERR_UNSUPPORTED, "", "map_read", "provider 'simdev'"));
  EXPECT_EQ(mapping, nullptr);

  ASSERT_EQ(rootspan_claim_release(claim, nullptr), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(live_allocations("simdev"), 0);
}

}  // namespace rootspan::testing
