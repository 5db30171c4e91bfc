// --strategy read copies every byte a file claims into memory, whatever
// blocks it really holds: a sparse file whose apparent size is more than the
// memory available is refused before anything is allocated, naming the
// file, the bytes and MemAvailable; the same file under mmap needs no copy,
// unless the schema packs tensors into one component, which mmap copies too.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "core/context.hpp"
#include "materialize_support.hpp"
#include "weights/checkpoints/checkpoint.hpp"
#include "weights/placement/available_memory.hpp"
#include "weights/placement/materialize.hpp"
#include "weights/schema/resolve.hpp"
#include "weights/schema/schema.hpp"

namespace rootspan::testing {
namespace {

using rootspan::Context;
using rootspan::weights::Checkpoint;
using rootspan::weights::LoadOptions;
using rootspan::weights::Strategy;

// A safetensors file `path` in `dir` of `header` whose `data_bytes` of data
// are a hole: only the header has blocks. False when the file system cannot
// hold it.
bool write_sparse(const TempDir &dir, const fs::path &path, const std::string &header, std::uint64_t data_bytes) {
  std::vector<std::byte> prefix;
  for (int i = 0; i < 8; ++i) prefix.push_back(static_cast<std::byte>((header.size() >> (8 * i)) & 0xFF));
  for (char c : header) prefix.push_back(static_cast<std::byte>(c));
  dir.write(path.filename(), prefix);
  return ::truncate(path.c_str(), static_cast<off_t>(prefix.size() + data_bytes)) == 0;
}

TEST(ReadStrategyMemory, ASparseFileLargerThanAvailableMemoryIsRefused) {
  const auto available = rootspan::weights::available_memory();
  ASSERT_TRUE(available) << "neither /proc/meminfo nor sysinfo could be read";
  // One U8 tensor twice the memory available; only the header has blocks.
  const std::uint64_t bytes = *available * 2 + 4096;
  const std::string header = R"({"huge":{"dtype":"U8","shape":[)" + std::to_string(bytes) + R"(],"data_offsets":[0,)" +
                             std::to_string(bytes) + "]}}";
  TempDir dir;
  const fs::path path = dir.path() / "sparse.safetensors";
  if (!write_sparse(dir, path, header, bytes)) GTEST_SKIP() << "this file system cannot hold a sparse file that large";

  auto checkpoint = Checkpoint::open(path);
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  auto created = Context::create(rootspan::ContextOptions{});
  ASSERT_TRUE(created) << created.error()->message();
  auto context = std::move(created).value();
  auto resolved =
      rootspan::weights::resolve_schema(checkpoint.value(), rootspan::weights::default_schema(checkpoint.value()));
  ASSERT_TRUE(resolved) << resolved.error()->message();
  LoadOptions options;
  options.strategy = Strategy::kRead;
  auto loaded = rootspan::weights::load_components(*context, checkpoint.value(), std::move(resolved).value(), options);
  ASSERT_FALSE(loaded) << "a copy larger than the memory available was started";
  const std::string message = loaded.error()->message();
  EXPECT_EQ(loaded.error()->code, ROOTSPAN_ERR_OUT_OF_MEMORY) << message;
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("--strategy read would copy " + std::to_string(bytes) + " bytes"), std::string::npos)
      << message;
  EXPECT_NE(message.find("are available (MemAvailable)"), std::string::npos) << message;
  EXPECT_EQ(context->live_roots(), 0u);
  EXPECT_EQ(context->destroy(), 0u);
}

TEST(ReadStrategyMemory, APackedCopyUnderMmapIsWeighedToo) {
  const auto available = rootspan::weights::available_memory();
  ASSERT_TRUE(available) << "neither /proc/meminfo nor sysinfo could be read";
  // Two sparse U8 tensors, each the memory available, packed into one
  // component: mmap cannot map it in place, so the load would copy both.
  const std::uint64_t bytes = *available + 4096;
  const std::string n = std::to_string(bytes), end = std::to_string(2 * bytes);
  const std::string header = R"({"a":{"dtype":"U8","shape":[)" + n + R"(],"data_offsets":[0,)" + n +
                             R"(]},"b":{"dtype":"U8","shape":[)" + n + R"(],"data_offsets":[)" + n + "," + end + "]}}";
  TempDir dir;
  const fs::path path = dir.path() / "sparse.safetensors";
  if (!write_sparse(dir, path, header, 2 * bytes))
    GTEST_SKIP() << "this file system cannot hold a sparse file that large";
  auto checkpoint = Checkpoint::open(path);
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  auto schema = rootspan::weights::parse_component_schema(
      R"({"schema_version":"1.0.0","components":[{"id":"ab","role":"packed_values","sources":["a","b"],)"
      R"("dimensions":[2,)" +
          n + R"(],"encoding":{"dense":{"element_type":"U8"}}}]})",
      "packed.json");
  ASSERT_TRUE(schema) << schema.error()->message();
  auto resolved = rootspan::weights::resolve_schema(checkpoint.value(), schema.value());
  ASSERT_TRUE(resolved) << resolved.error()->message();
  auto created = Context::create(rootspan::ContextOptions{});
  ASSERT_TRUE(created) << created.error()->message();
  auto context = std::move(created).value();
  LoadOptions options;
  options.strategy = Strategy::kMmap;
  auto loaded = rootspan::weights::load_components(*context, checkpoint.value(), std::move(resolved).value(), options);
  ASSERT_FALSE(loaded) << "a packed copy larger than the memory available was started";
  const std::string message = loaded.error()->message();
  EXPECT_EQ(loaded.error()->code, ROOTSPAN_ERR_OUT_OF_MEMORY) << message;
  EXPECT_NE(message.find("--strategy mmap would copy " + std::to_string(2 * bytes) + " bytes"), std::string::npos)
      << message;
  EXPECT_NE(message.find("cannot be mapped in place"), std::string::npos) << message;
  EXPECT_EQ(context->live_roots(), 0u);
  EXPECT_EQ(context->destroy(), 0u);
}

TEST(ReadStrategyMemory, ACopyThatFitsIsNotRefused) {
  EXPECT_TRUE(rootspan::weights::check_copy_fits("f", 10, 100, 100, "read", "load_component"));
  auto refused = rootspan::weights::check_copy_fits("f", 10, 101, 100, "read", "load_component");
  ASSERT_FALSE(refused);
  ASSERT_TRUE(refused.error()->values);
  EXPECT_EQ(refused.error()->values->first, 100u);
  EXPECT_EQ(refused.error()->values->second, 101u);
}

}  // namespace
}  // namespace rootspan::testing
