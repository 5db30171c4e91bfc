// rootspan_bench: every benchmark of the project and its baselines in one
// run, then the ratios between them.
//   rootspan_bench [--quick] [--size-mib=N] [--results=DIR] [Google Benchmark flags]
// --quick: small files and headers, for a smoke run under a minute.
// --size-mib: the size of the big load files (default 1024).
// --results: also write DIR/latest.json and DIR/latest.md.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "bench_files.hpp"
#include "benchmarks.hpp"
#include "summary.hpp"

namespace {

bool take_value(const char *argument, const char *flag, std::string &value) {
  const std::size_t n = std::strlen(flag);
  if (std::strncmp(argument, flag, n) != 0 || argument[n] != '=') return false;
  value = argument + n + 1;
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  using namespace rootspan::bench;
  BenchConfig config;
  config.header_tensor_counts = {1000, 10000, 100000};
  config.hostile_header_bytes = {64ull << 10, 1ull << 20, 16ull << 20};
  std::string results;
  std::vector<char *> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string value;
    if (std::strcmp(argv[i], "--quick") == 0) {
      config.large_bytes = 64ull << 20;
      config.small_bytes = 16ull << 20;
      config.header_tensor_counts = {1000, 10000};
      config.hostile_header_bytes = {64ull << 10};
      config.load_repetitions = 3;
      config.repetitions = 2;
    } else if (take_value(argv[i], "--size-mib", value)) {
      char *end = nullptr;
      const unsigned long long mib = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || mib == 0 || mib > (1ull << 20)) {
        std::fprintf(stderr, "rootspan_bench: --size-mib wants a whole number of MiB from 1 to 1048576, not \"%s\"\n",
                     value.c_str());
        return 2;
      }
      config.large_bytes = mib << 20;
      if (config.small_bytes > config.large_bytes) config.small_bytes = config.large_bytes;
    } else if (take_value(argv[i], "--results", value)) {
      results = value;
    } else {
      rest.push_back(argv[i]);
    }
  }
  int rest_count = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  benchmark::Initialize(&rest_count, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_count, rest.data())) return 2;

  try {
    BenchFolder folder;
    register_hot_path_benchmarks(config);
    register_root_benchmarks(config, folder.path());
    register_header_benchmarks(config, folder.path());
    register_load_benchmarks(config, folder.path());

    RecordingReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();

    const auto ratios = compute_ratios(reporter.figures());
    print_ratios(ratios);
    if (!results.empty()) {
      const std::string settings = "big files " + size_label(config.large_bytes) + ", small file " +
                                   size_label(config.small_bytes) + ", " + std::to_string(config.load_repetitions) +
                                   " loads of each kind (median; slowest_ms is the slowest), " +
                                   std::to_string(config.repetitions) + " repetitions of the hot path (median)";
      write_results(results, reporter.figures(), ratios, settings);
      std::printf("wrote %s/latest.json and %s/latest.md\n", results.c_str(), results.c_str());
    }
  } catch (const std::exception &error) {
    std::fprintf(stderr, "rootspan_bench: %s\n", error.what());
    return 1;
  }
  return 0;
}
