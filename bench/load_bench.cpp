// Loads of big checkpoints through the C API against what the memory system
// allows, in the same run: zero-copy loads against a plain mmap, copy loads
// (the `read` strategy) against pread into fresh and already-faulted memory
// and memcpy. Each reports the peak growth of the resident set.
#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "api_check.hpp"
#include "bench_files.hpp"
#include "benchmarks.hpp"
#include "rootspan/weights.h"

namespace rootspan::bench {

namespace {

constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kReadChunk = 64ull << 20;  // what the loader reads per call, too

struct Fd {
  int fd;
  explicit Fd(const std::filesystem::path &path) : fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Starts the resident-set peak over; the counter it fills in is the peak's
// growth above where the process stood before the benchmark's loop.
class PeakResident {
 public:
  PeakResident() : ok_(reset_peak_resident()), start_(resident_bytes()) {}
  void report(benchmark::State &state) const {
    const std::uint64_t peak = peak_resident_bytes();
    state.counters["peak_rss_MiB"] = ok_ && peak >= start_ ? static_cast<double>(peak - start_) / (1 << 20) : -1;
  }

 private:
  bool ok_;
  std::uint64_t start_;
};

void set_bytes(benchmark::State &state, std::uint64_t bytes) {
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
}

// Reads one byte of every page so that every page is faulted in.
std::uint64_t touch_pages(const unsigned char *data, std::uint64_t length) {
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < length; i += kPage) sum += data[i];
  return sum;
}

bool read_file_into(int fd, unsigned char *destination, std::uint64_t offset, std::uint64_t length) {
  for (std::uint64_t done = 0; done < length;) {
    const std::uint64_t n = std::min(kReadChunk, length - done);
    const ssize_t got = ::pread(fd, destination + done, n, static_cast<off_t>(offset + done));
    if (got <= 0) return false;
    done += static_cast<std::uint64_t>(got);
  }
  return true;
}

// Reads one byte of every page of a component through a claim and a mapping.
bool touch_component(benchmark::State &state, const rootspan_component_info &info) {
  rootspan_claim *claim = nullptr;
  rootspan_mapping *mapping = nullptr;
  rootspan_error *error = nullptr;
  rootspan_status status =
      rootspan_claim_acquire(info.root, 0, info.byte_length, ROOTSPAN_CLAIM_SHARED, &claim, &error);
  if (status != ROOTSPAN_OK) {
    state.SkipWithError(describe_failure("rootspan_claim_acquire", status, error).c_str());
    return false;
  }
  status = rootspan_map_read(claim, ROOTSPAN_DTYPE_U8, 0, info.byte_length, &mapping, &error);
  if (status != ROOTSPAN_OK) {
    state.SkipWithError(describe_failure("rootspan_map_read", status, error).c_str());
    rootspan_claim_release(claim, nullptr);
    return false;
  }
  benchmark::DoNotOptimize(
      touch_pages(static_cast<const unsigned char *>(rootspan_mapping_data(mapping)), info.byte_length));
  rootspan_unmap(mapping);
  rootspan_claim_release(claim, nullptr);
  return true;
}

// One load through rootspan_weights_load and its release; with `touch`, one
// byte of every page of every component is read through a claim and a
// mapping. Counts the zero-copy components.
bool load_once(benchmark::State &state, rootspan_context *context, const std::filesystem::path &file,
               const rootspan_load_options &options, bool touch, std::uint64_t &zero_copy) {
  rootspan_weights *weights = nullptr;
  rootspan_error *error = nullptr;
  rootspan_status status = rootspan_weights_load(context, file.c_str(), &options, &weights, &error);
  if (status != ROOTSPAN_OK) {
    state.SkipWithError(describe_failure("rootspan_weights_load", status, error).c_str());
    return false;
  }
  std::size_t count = 0;
  rootspan_weights_component_count(weights, &count);
  bool ok = true;
  for (std::size_t i = 0; i < count && ok; ++i) {
    rootspan_component_info info{};
    info.struct_size = sizeof info;
    rootspan_weights_component(weights, i, &info);
    zero_copy += info.zero_copy != 0 ? 1 : 0;
    if (touch && info.byte_length != 0) ok = touch_component(state, info);
  }
  status = rootspan_weights_free(weights, &error);
  if (status != ROOTSPAN_OK) {
    state.SkipWithError(describe_failure("rootspan_weights_free", status, error).c_str());
    return false;
  }
  return ok;
}

rootspan_context *new_context() {
  rootspan_context *context = nullptr;
  rootspan_error *error = nullptr;
  check("rootspan_context_create", rootspan_context_create(nullptr, &context, &error), error);
  return context;
}

// Where a load's memory comes from: a new context each time (the first load
// of a process: fresh memory), or one context that loaded once before timing
// (a reload: the host provider reuses the memory it kept).
enum class Memory { kFresh, kReused };

void weights_load(benchmark::State &state, std::shared_ptr<LazySafetensors> lazy, rootspan_load_strategy strategy,
                  bool touch, Memory memory) {
  const std::filesystem::path &file = lazy->path();
  const std::uint64_t bytes = std::filesystem::file_size(file);
  rootspan_load_options options{};
  options.struct_size = sizeof options;
  options.provider = "host";
  options.strategy = strategy;
  std::uint64_t zero_copy = 0;
  rootspan_context *context = memory == Memory::kReused ? new_context() : nullptr;
  if (context != nullptr && !load_once(state, context, file, options, touch, zero_copy)) {
    rootspan_context_destroy(context, nullptr);
    return;
  }
  zero_copy = 0;
  PeakResident peak;
  for (auto _ : state) {
    rootspan_context *each = context != nullptr ? context : new_context();
    const bool ok = load_once(state, each, file, options, touch, zero_copy);
    if (each != context) rootspan_context_destroy(each, nullptr);
    if (!ok) break;
  }
  peak.report(state);
  state.counters["zero_copy_components"] =
      state.iterations() == 0 ? 0 : static_cast<double>(zero_copy) / static_cast<double>(state.iterations());
  set_bytes(state, bytes);
  if (context != nullptr) rootspan_context_destroy(context, nullptr);
}

// The floor of a zero-copy load: open, mmap, (touch), munmap, close.
void plain_mmap(benchmark::State &state, std::shared_ptr<LazySafetensors> lazy, bool touch) {
  const std::filesystem::path &file = lazy->path();
  const std::uint64_t bytes = std::filesystem::file_size(file);
  PeakResident peak;
  for (auto _ : state) {
    Fd in(file);
    void *data = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, in.fd, 0);
    if (data == MAP_FAILED) {
      state.SkipWithError("mmap failed");
      break;
    }
    if (touch) benchmark::DoNotOptimize(touch_pages(static_cast<const unsigned char *>(data), bytes));
    ::munmap(data, bytes);
  }
  peak.report(state);
  set_bytes(state, bytes);
}

// pread of the whole file into a buffer that is fresh each time (malloc'd,
// never touched: every page faults during the read).
void pread_fresh(benchmark::State &state, std::shared_ptr<LazySafetensors> lazy) {
  const std::filesystem::path &file = lazy->path();
  const std::uint64_t bytes = std::filesystem::file_size(file);
  PeakResident peak;
  for (auto _ : state) {
    Fd in(file);
    std::unique_ptr<unsigned char, decltype(&std::free)> buffer(static_cast<unsigned char *>(std::malloc(bytes)),
                                                                &std::free);
    if (!buffer || !read_file_into(in.fd, buffer.get(), 0, bytes)) {
      state.SkipWithError("pread into a fresh buffer failed");
      break;
    }
    benchmark::DoNotOptimize(buffer.get());
  }
  peak.report(state);
  set_bytes(state, bytes);
}

// pread of the whole file into one buffer faulted in before timing starts.
void pread_faulted(benchmark::State &state, std::shared_ptr<LazySafetensors> lazy) {
  const std::filesystem::path &file = lazy->path();
  const std::uint64_t bytes = std::filesystem::file_size(file);
  PeakResident peak;
  std::unique_ptr<unsigned char, decltype(&std::free)> buffer(static_cast<unsigned char *>(std::malloc(bytes)),
                                                              &std::free);
  std::memset(buffer.get(), 1, bytes);
  for (auto _ : state) {
    Fd in(file);
    if (!read_file_into(in.fd, buffer.get(), 0, bytes)) {
      state.SkipWithError("pread into a faulted buffer failed");
      break;
    }
    benchmark::ClobberMemory();
  }
  peak.report(state);
  set_bytes(state, bytes);
}

// memcpy between two buffers faulted in before timing starts.
void memcpy_faulted(benchmark::State &state, std::uint64_t bytes) {
  PeakResident peak;
  std::unique_ptr<unsigned char, decltype(&std::free)> from(static_cast<unsigned char *>(std::malloc(bytes)),
                                                            &std::free);
  std::unique_ptr<unsigned char, decltype(&std::free)> to(static_cast<unsigned char *>(std::malloc(bytes)), &std::free);
  std::memset(from.get(), 1, bytes);
  std::memset(to.get(), 2, bytes);
  for (auto _ : state) {
    std::memcpy(to.get(), from.get(), bytes);
    benchmark::ClobberMemory();
  }
  peak.report(state);
  set_bytes(state, bytes);
}

}  // namespace

void register_load_benchmarks(const BenchConfig &config, const std::filesystem::path &folder) {
  const std::string large = size_label(config.large_bytes);
  const std::string small = size_label(config.small_bytes);
  // 200 tensors of about equal size, together large_bytes.
  std::vector<std::uint64_t> sizes(200, config.large_bytes / 200);
  sizes.back() += config.large_bytes % 200;
  const auto small_file =
      std::make_shared<LazySafetensors>(folder / "zero-copy-small.safetensors", std::vector{config.small_bytes});
  const auto single_file =
      std::make_shared<LazySafetensors>(folder / "one-tensor.safetensors", std::vector{config.large_bytes});
  const auto many_file = std::make_shared<LazySafetensors>(folder / "200-tensors.safetensors", sizes);

  // Each repetition times one load; the median is the figure, and the slowest
  // is kept beside it (slowest_ms). On a virtual machine that hands freed
  // memory back to its host, the first touch of memory after a few idle
  // seconds costs the host's faults too, for every load and baseline alike:
  // the slowest repetition shows that cost, the median the load's own.
  const auto timed = [&](benchmark::internal::Benchmark *b) {
    b->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(1)
        ->Repetitions(config.load_repetitions)
        ->ReportAggregatesOnly(true)
        ->ComputeStatistics("max", [](const std::vector<double> &v) { return *std::max_element(v.begin(), v.end()); });
  };
  for (bool touch : {false, true}) {
    const std::string suffix = touch ? "+touch" : "";
    for (const auto &[label, file] : {std::pair{small, small_file}, std::pair{large, single_file}}) {
      timed(benchmark::RegisterBenchmark(("zero_copy/load/" + label + suffix).c_str(), weights_load, file,
                                         ROOTSPAN_LOAD_MMAP, touch, Memory::kReused));
      timed(benchmark::RegisterBenchmark(("baseline/mmap/" + label + suffix).c_str(), plain_mmap, file, touch));
    }
  }
  for (const auto &[memory, label] : {std::pair{Memory::kFresh, "first"}, std::pair{Memory::kReused, "reload"}}) {
    for (const auto &[file, tensors] : {std::pair{single_file, "1_tensor"}, std::pair{many_file, "200_tensors"}}) {
      timed(benchmark::RegisterBenchmark(("copy/read_load/" + large + "/" + tensors + "/" + label).c_str(),
                                         weights_load, file, ROOTSPAN_LOAD_READ, false, memory));
    }
  }
  timed(benchmark::RegisterBenchmark(("baseline/pread_fresh/" + large).c_str(), pread_fresh, single_file));
  timed(benchmark::RegisterBenchmark(("baseline/pread_faulted/" + large).c_str(), pread_faulted, single_file));
  timed(benchmark::RegisterBenchmark(("baseline/memcpy/" + large).c_str(), memcpy_faulted, config.large_bytes));
}

}  // namespace rootspan::bench
