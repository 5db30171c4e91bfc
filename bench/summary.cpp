#include "summary.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

namespace rootspan::bench {

namespace {

bool starts_with(const std::string &text, const std::string &prefix) { return text.rfind(prefix, 0) == 0; }
bool ends_with(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

const Figure *find(const std::vector<Figure> &figures, const std::string &name) {
  for (const Figure &f : figures) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::optional<double> counter(const Figure &figure, const std::string &name) {
  auto found = figure.counters.find(name);
  if (found == figure.counters.end()) return std::nullopt;
  return found->second;
}

std::string format_ns(double ns) {
  char buffer[64];
  if (ns >= 1e9) {
    std::snprintf(buffer, sizeof buffer, "%.3f s", ns / 1e9);
  } else if (ns >= 1e6) {
    std::snprintf(buffer, sizeof buffer, "%.2f ms", ns / 1e6);
  } else if (ns >= 1e3) {
    std::snprintf(buffer, sizeof buffer, "%.2f us", ns / 1e3);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.1f ns", ns);
  }
  return buffer;
}

std::string format_number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, value >= 100 || value == 0 ? "%.0f" : "%.3g", value);
  return buffer;
}

}  // namespace

RecordingReporter::RecordingReporter() : ConsoleReporter(::isatty(1) != 0 ? OO_ColorTabular : OO_Tabular) {}

void RecordingReporter::ReportRuns(const std::vector<Run> &runs) {
  for (const Run &run : runs) {
    if (run.error_occurred) continue;
    const bool aggregate = run.run_type == Run::RT_Aggregate;
    // The registered name and the thread count; not the iteration, time and
    // repetition settings, so that baselines are found by name.
    std::string name = run.run_name.function_name;
    if (!run.run_name.args.empty()) name += "/" + run.run_name.args;
    if (!run.run_name.threads.empty()) name += "/" + run.run_name.threads;
    const double real_ns = run.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(run.time_unit) * 1e9;
    if (aggregate && run.aggregate_name == "max") {  // the slowest repetition, kept beside the median
      if (!figures_.empty() && figures_.back().name == name) figures_.back().counters["slowest_ms"] = real_ns / 1e6;
      continue;
    }
    if (aggregate && run.aggregate_name != "median") continue;
    if (!aggregate && run.repetitions > 1) continue;  // repetitions: only their median is kept
    Figure figure;
    figure.name = std::move(name);
    figure.real_ns = real_ns;
    for (const auto &[name, value] : run.counters) figure.counters[name] = value.value;
    figures_.push_back(std::move(figure));
  }
  ConsoleReporter::ReportRuns(runs);
}

std::vector<Ratio> compute_ratios(const std::vector<Figure> &figures) {
  std::vector<Ratio> ratios;
  const auto time_ratio = [&](const std::string &what, const std::string &measure, const std::string &baseline,
                              bool speed) {
    const Figure *m = find(figures, measure);
    const Figure *b = find(figures, baseline);
    if (m == nullptr || b == nullptr || m->real_ns <= 0 || b->real_ns <= 0) return;
    ratios.push_back({what, measure, baseline, speed ? b->real_ns / m->real_ns : m->real_ns / b->real_ns});
  };

  // Headers: the time per tensor of each size against the smallest size's.
  const Figure *smallest = nullptr;
  for (const Figure &f : figures) {
    if (!starts_with(f.name, "header/open_validate/")) continue;
    if (smallest == nullptr) {
      smallest = &f;
      continue;
    }
    auto per = counter(f, "ns_per_tensor");
    auto base = counter(*smallest, "ns_per_tensor");
    if (per && base && *base > 0) {
      ratios.push_back(
          {"time per tensor against the smallest header (1.0 = linear)", f.name, smallest->name, *per / *base});
    }
  }

  // The hot path over threads: summed throughput of N threads over 1.
  const Figure *one_thread = nullptr;
  for (const Figure &f : figures) {
    if (!starts_with(f.name, "hot_path/own_root_per_thread")) continue;
    if (ends_with(f.name, "threads:1")) {
      one_thread = &f;
    } else if (one_thread != nullptr) {
      auto n = counter(f, "items_per_second");
      auto one = counter(*one_thread, "items_per_second");
      if (n && one && *one > 0) {
        ratios.push_back(
            {"throughput against 1 thread (threads on their own roots)", f.name, one_thread->name, *n / *one});
      }
    }
  }

  // Loads against their baselines: zero-copy as a cost (load time over mmap
  // time), copies as a speed (baseline time over load time).
  for (const Figure &f : figures) {
    if (starts_with(f.name, "zero_copy/load/")) {
      const std::string rest = f.name.substr(std::string("zero_copy/load/").size());
      const std::string base = "baseline/mmap/" + rest.substr(0, rest.find('/'));
      time_ratio("time against plain mmap (lower is better)", f.name, base, false);
    }
    if (starts_with(f.name, "copy/read_load/")) {
      std::string rest = f.name.substr(std::string("copy/read_load/").size());
      const std::string size = rest.substr(0, rest.find('/'));  // "1GiB/1_tensor/first" -> "1GiB"
      time_ratio("speed against pread into a fresh buffer", f.name, "baseline/pread_fresh/" + size, true);
      time_ratio("speed against pread into faulted memory (target >= 0.85)", f.name, "baseline/pread_faulted/" + size,
                 true);
      time_ratio("speed against memcpy between faulted buffers", f.name, "baseline/memcpy/" + size, true);
    }
  }
  return ratios;
}

void print_ratios(const std::vector<Ratio> &ratios) {
  std::printf("\nRatios (measured in this run):\n");
  for (const Ratio &r : ratios) {
    std::printf("  %-58s %7.3f  %s vs %s\n", r.what.c_str(), r.value, r.measure.c_str(), r.baseline.c_str());
  }
}

void write_results(const std::filesystem::path &folder, const std::vector<Figure> &figures,
                   const std::vector<Ratio> &ratios, const std::string &settings) {
  std::filesystem::create_directories(folder);
  nlohmann::ordered_json doc;
  doc["settings"] = settings;
  doc["figures"] = nlohmann::ordered_json::array();
  for (const Figure &f : figures) {
    doc["figures"].push_back({{"name", f.name}, {"real_time_ns", f.real_ns}, {"counters", f.counters}});
  }
  doc["ratios"] = nlohmann::ordered_json::array();
  for (const Ratio &r : ratios) {
    doc["ratios"].push_back({{"what", r.what}, {"measure", r.measure}, {"baseline", r.baseline}, {"ratio", r.value}});
  }
  std::ofstream(folder / "latest.json") << doc.dump(2) << '\n';

  std::ofstream md(folder / "latest.md");
  md << "# rootspan benchmarks\n\nSettings: " << settings << "\n\n";
  md << "| benchmark | time (real) | counters |\n|---|---|---|\n";
  for (const Figure &f : figures) {
    md << "| `" << f.name << "` | " << format_ns(f.real_ns) << " | ";
    bool first = true;
    for (const auto &[name, value] : f.counters) {
      md << (first ? "" : ", ") << name << " " << format_number(value);
      first = false;
    }
    md << " |\n";
  }
  md << "\n| ratio | value | measure | baseline |\n|---|---|---|---|\n";
  for (const Ratio &r : ratios) {
    char value[32];
    std::snprintf(value, sizeof value, "%.3f", r.value);
    md << "| " << r.what << " | " << value << " | `" << r.measure << "` | `" << r.baseline << "` |\n";
  }
}

}  // namespace rootspan::bench
