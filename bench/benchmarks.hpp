// The benchmark groups; each registers its benchmarks (and writes the files
// they read into `folder`) for the run's sizes.
#pragma once

#include <filesystem>

#include "bench_files.hpp"

namespace rootspan::bench {

void register_hot_path_benchmarks(const BenchConfig &config);
void register_root_benchmarks(const BenchConfig &config, const std::filesystem::path &folder);
void register_header_benchmarks(const BenchConfig &config, const std::filesystem::path &folder);
void register_load_benchmarks(const BenchConfig &config, const std::filesystem::path &folder);

}  // namespace rootspan::bench
