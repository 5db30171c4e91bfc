// Making and releasing roots, and starting a context that discovers a
// manifest and loads the host provider from its plugin library.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>

#include "api_check.hpp"
#include "bench_files.hpp"
#include "benchmarks.hpp"

namespace rootspan::bench {

namespace {

void import_release(benchmark::State &state) {
  rootspan_context *context = nullptr;
  rootspan_error *error = nullptr;
  check("rootspan_context_create", rootspan_context_create(nullptr, &context, &error), error);
  alignas(64) static unsigned char memory[4096];
  rootspan_host_import import{};
  import.struct_size = sizeof import;
  import.data = memory;
  import.byte_length = sizeof memory;
  import.alignment = 64;
  import.dtype = ROOTSPAN_DTYPE_U8;
  for (auto _ : state) {
    rootspan_root *root = nullptr;
    rootspan_status status = rootspan_root_import_host(context, &import, &root, &error);
    if (status == ROOTSPAN_OK) status = rootspan_root_release(root, &error);
    if (status != ROOTSPAN_OK) {
      state.SkipWithError(describe_failure("import/release", status, error).c_str());
      break;
    }
  }
  rootspan_context_destroy(context, nullptr);
}

// XDG_CONFIG_HOME points discovery at a manifest that names the built host
// plugin; the compiled-in providers are left out, so the plugin is the host.
void discover_and_load_plugin(benchmark::State &state, std::filesystem::path config_home) {
  const std::string previous = std::getenv("XDG_CONFIG_HOME") != nullptr ? std::getenv("XDG_CONFIG_HOME") : "";
  ::setenv("XDG_CONFIG_HOME", config_home.c_str(), 1);
  rootspan_context_options options{};
  options.struct_size = sizeof options;
  options.no_static_providers = 1;
  options.discover_manifests = 1;
  for (auto _ : state) {
    rootspan_context *context = nullptr;
    rootspan_error *error = nullptr;
    rootspan_status status = rootspan_context_create(&options, &context, &error);
    if (status != ROOTSPAN_OK) {
      state.SkipWithError(describe_failure("rootspan_context_create", status, error).c_str());
      break;
    }
    rootspan_provider_report report{};
    report.struct_size = sizeof report;
    std::size_t count = 0;
    rootspan_provider_report_count(context, &count);
    if (count != 1 || rootspan_provider_report_get(context, 0, &report) != ROOTSPAN_OK ||
        report.state != ROOTSPAN_PROVIDER_LOADED) {
      state.SkipWithError(("the host plugin did not load: " +
                           std::string(report.reason != nullptr ? report.reason : "no provider report"))
                              .c_str());
      rootspan_context_destroy(context, nullptr);
      break;
    }
    rootspan_context_destroy(context, nullptr);
  }
  if (previous.empty()) {
    ::unsetenv("XDG_CONFIG_HOME");
  } else {
    ::setenv("XDG_CONFIG_HOME", previous.c_str(), 1);
  }
}

}  // namespace

void register_root_benchmarks(const BenchConfig &, const std::filesystem::path &folder) {
  benchmark::RegisterBenchmark("roots/import_release", import_release)->Unit(benchmark::kNanosecond);

  const std::filesystem::path manifests = folder / "config" / "rootspan" / "manifest.d";
  std::filesystem::create_directories(manifests);
  std::ofstream(manifests / "10-host.json")
      << R"({"file_format_version": "1.0.0", "providers": [{"name": "host", "kind": "host", "library": ")"
      << ROOTSPAN_BENCH_HOST_PLUGIN << R"(", "abi": {"major": 1, "minor": 1}}]})";
  benchmark::RegisterBenchmark("roots/discover_manifest_and_load_host_plugin", discover_and_load_plugin,
                               folder / "config")
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace rootspan::bench
