// claim -> map -> unmap -> release on a host root, the path every access to
// provider memory takes: its time, the heap allocations it makes (none, by
// design), and how it scales over threads that each use their own root.
#include <benchmark/benchmark.h>

#include <array>
#include <mutex>

#include "allocation_counter.hpp"
#include "api_check.hpp"
#include "bench_files.hpp"
#include "benchmarks.hpp"

namespace rootspan::bench {

namespace {

constexpr std::uint64_t kRootBytes = 4096;
constexpr int kMaxThreads = 2;

// One context and one host root per thread, made before timing starts.
struct HotPathRoots {
  rootspan_context *context = nullptr;
  std::array<rootspan_root *, kMaxThreads> roots{};

  HotPathRoots() {
    rootspan_error *error = nullptr;
    check("rootspan_context_create", rootspan_context_create(nullptr, &context, &error), error);
    for (auto &root : roots) {
      rootspan_allocate_options options{};
      options.struct_size = sizeof options;
      options.provider = "host";
      options.memory_kind = ROOTSPAN_MEMORY_HOST;
      options.byte_length = kRootBytes;
      options.dtype = ROOTSPAN_DTYPE_U8;
      check("rootspan_root_allocate", rootspan_root_allocate(context, &options, &root, &error), error);
    }
  }
  ~HotPathRoots() { rootspan_context_destroy(context, nullptr); }
};

HotPathRoots &hot_path_roots() {
  static HotPathRoots roots;
  return roots;
}

// One cycle; false (with the benchmark told why) when a call fails.
bool cycle(benchmark::State &state, rootspan_root *root) {
  rootspan_claim *claim = nullptr;
  rootspan_mapping *mapping = nullptr;
  rootspan_error *error = nullptr;
  rootspan_status status = rootspan_claim_acquire(root, 0, kRootBytes, ROOTSPAN_CLAIM_EXCLUSIVE, &claim, &error);
  if (status != ROOTSPAN_OK) {
    state.SkipWithError(describe_failure("rootspan_claim_acquire", status, error).c_str());
    return false;
  }
  status = rootspan_map_write(claim, ROOTSPAN_DTYPE_U8, 0, kRootBytes, &mapping, &error);
  if (status != ROOTSPAN_OK) {
    state.SkipWithError(describe_failure("rootspan_map_write", status, error).c_str());
    rootspan_claim_release(claim, nullptr);
    return false;
  }
  benchmark::DoNotOptimize(rootspan_mapping_data(mapping));
  rootspan_unmap(mapping);
  status = rootspan_claim_release(claim, &error);
  if (status != ROOTSPAN_OK) {
    state.SkipWithError(describe_failure("rootspan_claim_release", status, error).c_str());
    return false;
  }
  return true;
}

void hot_path(benchmark::State &state) {
  rootspan_root *root = hot_path_roots().roots[0];
  cycle(state, root);  // warm up outside the count
  const std::uint64_t before = heap_allocations();
  for (auto _ : state) {
    if (!cycle(state, root)) break;
  }
  state.counters["allocs_per_iter"] =
      static_cast<double>(heap_allocations() - before) / static_cast<double>(state.iterations());
}

// Each thread cycles on its own root; items_per_second sums over threads.
void hot_path_threads(benchmark::State &state) {
  rootspan_root *root = hot_path_roots().roots[static_cast<std::size_t>(state.thread_index())];
  for (auto _ : state) {
    if (!cycle(state, root)) break;
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

void register_hot_path_benchmarks(const BenchConfig &config) {
  hot_path_roots();
  benchmark::RegisterBenchmark("hot_path/claim_map_unmap_release", hot_path)
      ->Repetitions(config.repetitions)
      ->ReportAggregatesOnly(true)
      ->Unit(benchmark::kNanosecond);
  benchmark::RegisterBenchmark("hot_path/own_root_per_thread", hot_path_threads)
      ->Threads(1)
      ->Threads(kMaxThreads)
      ->UseRealTime()
      ->Repetitions(config.repetitions)
      ->ReportAggregatesOnly(true)
      ->Unit(benchmark::kNanosecond);
}

}  // namespace rootspan::bench
