// Helpers of the GPU suite: where the built plugins are, a temporary folder
// with a manifest naming one of them, a context made from it, and the plugin
// opened directly (dlopen) for checks below the core.
//
// Plugin paths: $ROOTSPAN_CUDA_PLUGIN / $ROOTSPAN_ROCM_PLUGIN when set (a build
// carried to another machine, see run-gpu-checks.sh), else the path meson built
// it at (GPU_TEST_CUDA_PLUGIN / GPU_TEST_ROCM_PLUGIN, "" when not built).
#pragma once

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rootspan/provider.h"
#include "rootspan/rootspan.h"
#include "tests/support/c_api_owners.hpp"
#include "tests/support/temp_dir.hpp"

#ifndef GPU_TEST_CUDA_PLUGIN
#define GPU_TEST_CUDA_PLUGIN ""
#endif
#ifndef GPU_TEST_ROCM_PLUGIN
#define GPU_TEST_ROCM_PLUGIN ""
#endif

namespace rootspan::testing {

// The two device providers, as the suites are parametrized over them.
inline const char *runtime_of(const std::string &kind) { return kind == "cuda" ? "CUDA" : "HIP"; }

// The plugin's path, or "" when this build has none of that kind.
inline std::string plugin_path(const std::string &kind) {
  const char *variable = kind == "cuda" ? "ROOTSPAN_CUDA_PLUGIN" : "ROOTSPAN_ROCM_PLUGIN";
  if (const char *set = std::getenv(variable); set != nullptr && *set != '\0') return set;
  return kind == "cuda" ? GPU_TEST_CUDA_PLUGIN : GPU_TEST_ROCM_PLUGIN;
}

// Skips the test when the plugin was not built; fails when it should be there
// and is not.
#define GPU_TEST_REQUIRE_PLUGIN(kind)                                                                               \
  do {                                                                                                              \
    if (::rootspan::testing::plugin_path(kind).empty()) GTEST_SKIP() << "the " << (kind) << " plugin is not built"; \
    ASSERT_TRUE(std::filesystem::is_regular_file(::rootspan::testing::plugin_path(kind)))                           \
        << "missing plugin " << ::rootspan::testing::plugin_path(kind);                                             \
  } while (0)

// Writes manifest.json into dir naming the plugin of `kind` by absolute path.
inline std::filesystem::path write_manifest(const TempDir &dir, const std::string &kind,
                                            const std::string &options_json = "{}") {
  const std::filesystem::path library = std::filesystem::absolute(plugin_path(kind));
  const std::filesystem::path manifest = dir.path() / "manifest.json";
  std::ofstream(manifest) << "{\n"
                          << "  \"file_format_version\": \"1.0.0\",\n"
                          << "  \"providers\": [{\n"
                          << "    \"name\": \"" << kind << "\", \"kind\": \"" << kind << "\",\n"
                          << "    \"library\": \"" << library.string() << "\",\n"
                          << "    \"abi\": {\"major\": 1, \"minor\": 1},\n"
                          << "    \"enabled\": true, \"priority\": 100,\n"
                          << "    \"options\": " << options_json << "\n"
                          << "  }]\n"
                          << "}\n";
  return manifest;
}

inline std::string message_of(const rootspan_error *error) {
  return error == nullptr ? std::string("(no error object)") : rootspan_error_message(error);
}

// A context with the static providers and one manifest naming the plugin.
class ManifestContext {
 public:
  explicit ManifestContext(const std::string &kind, const std::string &options_json = "{}") : kind_(kind) {
    manifest_ = write_manifest(dir_, kind, options_json);
    const std::string path = manifest_.string();
    const char *paths[] = {path.c_str()};
    rootspan_context_options options{};
    options.struct_size = sizeof options;
    options.no_static_providers = 0;
    options.manifests = paths;
    options.manifest_count = 1;
    rootspan_error *error = nullptr;
    status_ = rootspan_context_create(&options, &context_, &error);
    error_.reset(error);
  }
  ~ManifestContext() {
    if (context_ != nullptr) rootspan_context_destroy(context_, nullptr);
  }
  ManifestContext(const ManifestContext &) = delete;
  ManifestContext &operator=(const ManifestContext &) = delete;

  rootspan_status status() const { return status_; }
  std::string error() const { return message_of(error_.get()); }
  rootspan_context *get() const { return context_; }

  // Destroys the context now; returns how many roots were still live.
  std::uint64_t destroy() {
    std::uint64_t live = 0;
    if (context_ != nullptr) {
      EXPECT_EQ(rootspan_context_destroy(context_, &live), ROOTSPAN_OK);
    }
    context_ = nullptr;
    return live;
  }
  const std::filesystem::path &manifest() const { return manifest_; }

  // The report of the provider named `kind`; fails the test when absent.
  bool report(rootspan_provider_report *out) const {
    std::size_t count = 0;
    rootspan_provider_report_count(context_, &count);
    for (std::size_t i = 0; i < count; ++i) {
      rootspan_provider_report r{};
      r.struct_size = sizeof r;
      if (rootspan_provider_report_get(context_, i, &r) == ROOTSPAN_OK && r.name != nullptr && kind_ == r.name) {
        *out = r;
        return true;
      }
    }
    return false;
  }

  std::uint32_t device_count() const {
    rootspan_provider_report r{};
    return report(&r) ? r.device_count : 0;  // zero unless started with devices
  }

 private:
  std::string kind_;
  TempDir dir_;
  std::filesystem::path manifest_;
  rootspan_context *context_ = nullptr;
  rootspan_status status_ = ROOTSPAN_OK;
  ErrorPtr error_;
};

// The plugin opened with dlopen (or a provider table linked in), and one
// started instance: the provider ABI exercised without the core (asynchronous
// copies and events are not part of the embedding API).
class DirectPlugin {
 public:
  explicit DirectPlugin(const std::string &kind) {
    handle_ = ::dlopen(plugin_path(kind).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      load_error_ = ::dlerror();
      return;
    }
    auto entry = reinterpret_cast<rootspan_provider_entry_fn>(::dlsym(handle_, ROOTSPAN_PROVIDER_ENTRY_SYMBOL));
    if (entry == nullptr) {
      load_error_ = "no " ROOTSPAN_PROVIDER_ENTRY_SYMBOL;
      return;
    }
    table_ = entry(ROOTSPAN_PROVIDER_ABI_MAJOR, ROOTSPAN_PROVIDER_ABI_MINOR);
    for (std::size_t i = 0; i < ROOTSPAN_DOMAINS_PER_PROVIDER; ++i) domains_[i] = 1000 + i;
  }
  // A provider linked into the test program.
  explicit DirectPlugin(const rootspan_provider_table *table) : table_(table) {
    for (std::size_t i = 0; i < ROOTSPAN_DOMAINS_PER_PROVIDER; ++i) domains_[i] = 1000 + i;
  }
  ~DirectPlugin() {
    if (instance_ != nullptr || started_) table_->shutdown(instance_);
    if (handle_ != nullptr) ::dlclose(handle_);
  }
  DirectPlugin(const DirectPlugin &) = delete;
  DirectPlugin &operator=(const DirectPlugin &) = delete;

  void *handle() const { return handle_; }
  const std::string &load_error() const { return load_error_; }
  const rootspan_provider_table *table() const { return table_; }
  rootspan_provider_instance *instance() const { return instance_; }
  const std::uint64_t *domains() const { return domains_; }
  const std::vector<std::string> &log() const { return log_; }

  // Starts the instance; returns the status, the message in *text.
  rootspan_status init(const std::string &options_json, std::string *text) {
    rootspan_core_services services{};
    services.struct_size = sizeof services;
    services.core_abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR;
    services.core_abi_minor = ROOTSPAN_PROVIDER_ABI_MINOR;
    services.granted_domains = domains_;
    services.granted_domain_count = ROOTSPAN_DOMAINS_PER_PROVIDER;
    services.log = [](void *context, rootspan_log_level, const char *line) {
      static_cast<DirectPlugin *>(context)->log_.emplace_back(line);
    };
    services.log_context = this;
    rootspan_provider_instance *instance = nullptr;
    char buffer[512] = "";
    rootspan_provider_message message{buffer, sizeof buffer};
    const rootspan_status status = table_->init(&services, options_json.c_str(), &instance, &message);
    *text = buffer;
    if (status == ROOTSPAN_OK) {
      instance_ = instance;
      started_ = true;
    }
    return status;
  }

  // A call with a fresh message buffer: fn(message) -> status.
  template <class Fn>
  rootspan_status call(Fn &&fn, std::string *text = nullptr) {
    char buffer[512] = "";
    rootspan_provider_message message{buffer, sizeof buffer};
    const rootspan_status status = fn(&message);
    if (text != nullptr) *text = buffer;
    return status;
  }

  rootspan_status device_count(std::uint32_t *count, std::string *text) {
    return call([&](rootspan_provider_message *m) { return table_->device_count(instance_, count, m); }, text);
  }

  rootspan_status allocate(rootspan_memory_kind kind, std::uint64_t length, std::uint64_t alignment,
                           rootspan_provider_allocation *allocation, std::string *text, std::uint32_t device = 0) {
    rootspan_allocation_request request{sizeof request, device, kind, length, alignment};
    *allocation = {};
    allocation->struct_size = sizeof *allocation;
    return call([&](rootspan_provider_message *m) { return table_->allocate(instance_, &request, allocation, m); },
                text);
  }

 private:
  void *handle_ = nullptr;
  std::string load_error_;
  const rootspan_provider_table *table_ = nullptr;
  rootspan_provider_instance *instance_ = nullptr;
  bool started_ = false;
  std::uint64_t domains_[ROOTSPAN_DOMAINS_PER_PROVIDER] = {};
  std::vector<std::string> log_;
};

// A parametrized fixture: GetParam() is "cuda" or "rocm".
class GpuProviderTest : public ::testing::TestWithParam<std::string> {
 protected:
  const std::string &kind() const { return GetParam(); }
};

inline std::string kind_name(const ::testing::TestParamInfo<std::string> &info) { return info.param; }

}  // namespace rootspan::testing
