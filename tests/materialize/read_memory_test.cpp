// --strategy read copies every byte a file claims into memory, whatever
// blocks it really holds: a sparse file whose apparent size is more than the
// memory available is refused before anything is allocated, naming the
// file, the bytes and MemAvailable; the same file under mmap needs no copy.
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

namespace mtest {
namespace {

using rootspan::Context;
using rootspan::weights::Checkpoint;
using rootspan::weights::LoadOptions;
using rootspan::weights::Strategy;

TEST(ReadStrategyMemory, ASparseFileLargerThanAvailableMemoryIsRefused) {
  const auto available = rootspan::weights::available_memory();
  ASSERT_TRUE(available) << "neither /proc/meminfo nor sysinfo could be read";
  // One U8 tensor twice the memory available; only the header has blocks.
  const std::uint64_t bytes = *available * 2 + 4096;
  const std::string header = R"({"huge":{"dtype":"U8","shape":[)" + std::to_string(bytes) + R"(],"data_offsets":[0,)" +
                             std::to_string(bytes) + "]}}";
  std::vector<std::byte> prefix;
  for (int i = 0; i < 8; ++i) prefix.push_back(static_cast<std::byte>((header.size() >> (8 * i)) & 0xFF));
  for (char c : header) prefix.push_back(static_cast<std::byte>(c));
  TempDir dir;
  const fs::path path = dir.write("sparse.safetensors", prefix);
  if (::truncate(path.c_str(), static_cast<off_t>(prefix.size() + bytes)) != 0) {
    GTEST_SKIP() << "this file system cannot hold a sparse file of " << prefix.size() + bytes << " bytes";
  }

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

TEST(ReadStrategyMemory, ACopyThatFitsIsNotRefused) {
  EXPECT_TRUE(rootspan::weights::check_copy_fits("f", 10, 100, 100, "load_component"));
  auto refused = rootspan::weights::check_copy_fits("f", 10, 101, 100, "load_component");
  ASSERT_FALSE(refused);
  ASSERT_TRUE(refused.error()->values);
  EXPECT_EQ(refused.error()->values->first, 100u);
  EXPECT_EQ(refused.error()->values->second, 101u);
}

}  // namespace
}  // namespace mtest
