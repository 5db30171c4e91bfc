// The fuzz seed corpora (tests/fuzz/corpus) double as fixtures: every seed
// named valid-* must be read, every invalid-* refused, and none may crash
// the readers. This runs in every build, fuzzing or not.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "weights/formats/safetensors.hpp"
#include "weights/formats/shard_index.hpp"
#include "weights/schema/schema.hpp"

#ifndef ROOTSPAN_SOURCE_ROOT
#error "ROOTSPAN_SOURCE_ROOT must name the source tree (tests/weights/meson.build sets it)"
#endif

namespace rootspan::weights {
namespace {

namespace fs = std::filesystem;

struct Seed {
  std::string name;
  std::string bytes;
  bool valid() const { return name.rfind("valid-", 0) == 0; }
};

std::vector<Seed> seeds(const std::string &corpus) {
  std::vector<Seed> out;
  const fs::path folder = fs::path(ROOTSPAN_SOURCE_ROOT) / "tests" / "fuzz" / "corpus" / corpus;
  for (const auto &entry : fs::directory_iterator(folder)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    out.push_back({entry.path().filename().string(), bytes.str()});
  }
  EXPECT_GE(out.size(), 4u) << folder;
  return out;
}

// A header alone, with the data section its tensors claim (as the fuzz
// target does).
bool header_reads(const std::string &text) {
  std::uint64_t data_size = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    auto header = parse_safetensors_header(text, data_size, "seed");
    if (header) return true;
    const auto &values = header.error()->values;
    if (!values || values->first != data_size || values->second <= data_size) return false;
    data_size = values->second;
  }
  return false;
}

TEST(SeedCorpus, SafetensorsHeaders) {
  for (const Seed &seed : seeds("safetensors_header")) {
    const bool whole_file = seed.name.ends_with(".safetensors");
    const bool read = whole_file ? static_cast<bool>(parse_safetensors(std::as_bytes(std::span(seed.bytes)), seed.name))
                                 : header_reads(seed.bytes);
    EXPECT_EQ(read, seed.valid()) << seed.name;
  }
}

TEST(SeedCorpus, ShardIndexes) {
  for (const Seed &seed : seeds("index")) {
    auto index = parse_shard_index(seed.bytes, seed.name);
    EXPECT_EQ(static_cast<bool>(index), seed.valid()) << seed.name << (index ? "" : ": " + index.error()->message());
  }
}

TEST(SeedCorpus, ComponentSchemas) {
  for (const Seed &seed : seeds("schema")) {
    auto schema = parse_component_schema(seed.bytes, seed.name);
    EXPECT_EQ(static_cast<bool>(schema), seed.valid()) << seed.name << (schema ? "" : ": " + schema.error()->message());
  }
}

}  // namespace
}  // namespace rootspan::weights
