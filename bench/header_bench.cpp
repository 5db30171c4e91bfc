// Opening and validating safetensors headers of many small tensors, and a
// hostile header of nothing but empty objects: the time per tensor (or per
// byte) shows whether the cost grows linearly with the header.
#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <memory>

#include "bench_files.hpp"
#include "benchmarks.hpp"
#include "weights/checkpoints/checkpoint.hpp"

namespace rootspan::bench {

namespace {

void open_header(benchmark::State &state, std::shared_ptr<LazySafetensors> lazy, std::uint64_t tensors) {
  const std::filesystem::path &file = lazy->path();
  for (auto _ : state) {
    auto checkpoint = weights::Checkpoint::open(file);
    if (!checkpoint) {
      state.SkipWithError(("open failed: " + checkpoint.error()->message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(checkpoint.value());
  }
  state.counters["tensors"] = static_cast<double>(tensors);
  state.counters["ns_per_tensor"] = benchmark::Counter(
      static_cast<double>(tensors) * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// A safetensors file whose header is {"0":{},"1":{},...}: refused (an entry
// needs dtype, shape and data_offsets), but only after the strict parser has
// read every member, keys out of sorted order included.
void write_empty_objects_header(const std::filesystem::path &path, std::uint64_t header_bytes) {
  std::string text = "{";
  for (std::uint64_t i = 0; text.size() + 32 < header_bytes; ++i) text += "\"" + std::to_string(i) + "\":{},";
  text += "\"end\":{}}";
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary);
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(text.size() >> (8 * i)));
  out << text;
}

void open_hostile_header(benchmark::State &state, std::filesystem::path file, std::uint64_t bytes) {
  for (auto _ : state) {
    auto checkpoint = weights::Checkpoint::open(file);
    if (checkpoint) {
      state.SkipWithError("a header of empty objects was accepted");
      break;
    }
  }
  state.counters["header_bytes"] = static_cast<double>(bytes);
  state.counters["ns_per_byte"] = benchmark::Counter(
      static_cast<double>(bytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

}  // namespace

void register_header_benchmarks(const BenchConfig &config, const std::filesystem::path &folder) {
  for (std::uint64_t n : config.header_tensor_counts) {
    const auto file = folder / ("header-" + std::to_string(n) + ".safetensors");
    auto lazy = std::make_shared<LazySafetensors>(file, std::vector<std::uint64_t>(n, 1));
    benchmark::RegisterBenchmark(("header/open_validate/" + std::to_string(n)).c_str(), open_header, lazy, n)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.2);
  }
  for (std::uint64_t bytes : config.hostile_header_bytes) {
    const auto file = folder / ("empty-objects-" + std::to_string(bytes) + ".safetensors");
    write_empty_objects_header(file, bytes);
    benchmark::RegisterBenchmark(("header/empty_objects/" + std::to_string(bytes >> 10) + "KiB").c_str(),
                                 open_hostile_header, file, bytes)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.2);
  }
}

}  // namespace rootspan::bench
