// The files the benchmarks read, written once per run into a fresh temporary
// folder that is removed when the run ends, and the run's size settings.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace rootspan::bench {

struct BenchConfig {
  std::uint64_t large_bytes = 1ull << 30;           // the big load files
  std::uint64_t small_bytes = 64ull << 20;          // the smaller zero-copy file
  std::vector<std::uint64_t> header_tensor_counts;  // header benchmarks
  std::vector<std::uint64_t> hostile_header_bytes;  // headers of empty objects
  int load_repetitions = 5;                         // loads of each kind, one timed load each (median)
  int repetitions = 5;                              // repetitions of the hot path (median)
};

// Writes a safetensors file of U8 tensors named "t.<i>", one per entry of
// `sizes`, laid out back to back, and flushes it to disk so writeback does not
// run during the measurements.
void write_safetensors(const std::filesystem::path &path, const std::vector<std::uint64_t> &sizes);

// A safetensors file written the first time a benchmark asks for it (before
// its timed loop), so that a filtered run writes only the files it reads.
class LazySafetensors {
 public:
  LazySafetensors(std::filesystem::path path, std::vector<std::uint64_t> sizes)
      : path_(std::move(path)), sizes_(std::move(sizes)) {}
  const std::filesystem::path &path();

 private:
  std::filesystem::path path_;
  std::vector<std::uint64_t> sizes_;
  bool written_ = false;
};

class BenchFolder {
 public:
  BenchFolder();  // mkdtemp under $TMPDIR (or /tmp)
  ~BenchFolder();
  BenchFolder(const BenchFolder &) = delete;
  BenchFolder &operator=(const BenchFolder &) = delete;
  const std::filesystem::path &path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// "1 GiB", "64 MiB": the size as benchmark names show it.
std::string size_label(std::uint64_t bytes);

// This process's resident set, in bytes, from /proc/self/status: now
// ("VmRSS") and at its peak since the last reset ("VmHWM").
std::uint64_t resident_bytes();
std::uint64_t peak_resident_bytes();
// Starts a new peak (writes 5 to /proc/self/clear_refs); false when refused.
bool reset_peak_resident();

}  // namespace rootspan::bench
