// Collects every result of the run and, at its end, sets each figure beside
// the baseline measured in the same run: a ratio table on stdout, and, when
// asked, latest.json and latest.md in a results folder.
#pragma once

#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace rootspan::bench {

struct Figure {
  std::string name;  // without the aggregate suffix
  double real_ns = 0;
  std::map<std::string, double> counters;
};

struct Ratio {
  std::string what;     // what the ratio means
  std::string measure;  // figure names
  std::string baseline;
  double value = 0;
};

// The console reporter, also keeping each result: the median of repeated
// benchmarks, the single run of the others.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  // Colours only on a terminal; counters as table columns.
  RecordingReporter();
  void ReportRuns(const std::vector<Run> &runs) override;
  const std::vector<Figure> &figures() const { return figures_; }

 private:
  std::vector<Figure> figures_;
};

std::vector<Ratio> compute_ratios(const std::vector<Figure> &figures);
void print_ratios(const std::vector<Ratio> &ratios);
// Writes latest.json and latest.md into `folder` (created if missing).
void write_results(const std::filesystem::path &folder, const std::vector<Figure> &figures,
                   const std::vector<Ratio> &ratios, const std::string &settings);

}  // namespace rootspan::bench
