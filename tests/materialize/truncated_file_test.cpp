// A checkpoint truncated after a zero-copy load (docs/troubleshooting.md): the library's own
// reads of the mapped bytes (verify, copies) and new mappings give a clear Io
// error and the process keeps serving; the read strategy is unaffected.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "core/mapped_read.hpp"
#include "materialize_support.hpp"

namespace rootspan::testing {
namespace {

class TruncatedFile : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(rootspan_context_create(nullptr, &context_, nullptr), ROOTSPAN_OK); }
  void TearDown() override {
    if (weights_ != nullptr) {
      EXPECT_EQ(rootspan_weights_free(weights_, nullptr), ROOTSPAN_OK);
    }
    std::uint64_t live = 0;
    EXPECT_EQ(rootspan_context_destroy(context_, &live), ROOTSPAN_OK);
    EXPECT_EQ(live, 0u);
  }

  // One F32 tensor of 1 MiB, 64-byte aligned: a zero-copy root under mmap.
  WrittenFile write_checkpoint() {
    return write_safetensors(dir_, "model.safetensors", {{"w", "F32", {512, 512}}}, 7, 64, 0);
  }

  rootspan_status load(const fs::path &path, rootspan_load_strategy strategy) {
    rootspan_load_options o{};
    o.struct_size = ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE;
    o.provider = "host";
    o.strategy = strategy;
    rootspan_error *raw = nullptr;
    const rootspan_status s = rootspan_weights_load(context_, path.c_str(), &o, &weights_, &raw);
    error_.reset(raw);
    return s;
  }

  rootspan_component_info component() const {
    rootspan_component_info info{};
    info.struct_size = ROOTSPAN_COMPONENT_INFO_STRUCT_SIZE;
    EXPECT_EQ(rootspan_weights_component(weights_, 0, &info), ROOTSPAN_OK);
    return info;
  }

  TempDir dir_;
  rootspan_context *context_ = nullptr;
  rootspan_weights *weights_ = nullptr;
  ErrorPtr error_;
};

TEST_F(TruncatedFile, VerifyingAZeroCopyComponentOfATruncatedFileIsAnIoError) {
  const WrittenFile file = write_checkpoint();
  ASSERT_EQ(load(file.path, ROOTSPAN_LOAD_MMAP), ROOTSPAN_OK) << describe(error_.get());
  ASSERT_EQ(component().zero_copy, 1);
  fs::resize_file(file.path, file.bytes.size() / 2);

  char hex[65] = {};
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_weights_component_sha256(weights_, 0, hex, &raw), ROOTSPAN_ERR_IO) << describe(raw);
  ErrorPtr e(raw);
  const std::string message = rootspan_error_message(e.get());
  EXPECT_NE(message.find(file.path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("truncated to " + std::to_string(file.bytes.size() / 2) + " bytes"), std::string::npos)
      << message;
  std::uint64_t expected = 0, actual = 0;
  ASSERT_TRUE(rootspan_error_values(e.get(), &expected, &actual));
  EXPECT_EQ(actual, file.bytes.size() / 2);
  EXPECT_GT(expected, actual);
}

TEST_F(TruncatedFile, AMappingRequestedAfterTheFileShrankIsRefusedWithTheSameError) {
  const WrittenFile file = write_checkpoint();
  ASSERT_EQ(load(file.path, ROOTSPAN_LOAD_MMAP), ROOTSPAN_OK) << describe(error_.get());
  const rootspan_component_info info = component();
  rootspan_claim *claim = nullptr;
  ASSERT_EQ(rootspan_claim_acquire(info.root, 0, info.byte_length, ROOTSPAN_CLAIM_SHARED, &claim, nullptr),
            ROOTSPAN_OK);
  // The first half still lies inside the file; the last page does not.
  fs::resize_file(file.path, file.bytes.size() / 2);
  rootspan_mapping *mapping = nullptr;
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_map_read(claim, ROOTSPAN_DTYPE_F32, 0, 4096, &mapping, &raw), ROOTSPAN_OK) << describe(raw);
  EXPECT_EQ(rootspan_unmap(mapping), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_map_read(claim, ROOTSPAN_DTYPE_F32, info.byte_length - 4096, 4096, &mapping, &raw),
            ROOTSPAN_ERR_IO);
  ErrorPtr e(raw);
  EXPECT_NE(std::string(rootspan_error_message(e.get())).find("truncated"), std::string::npos)
      << rootspan_error_message(e.get());
  EXPECT_EQ(mapping, nullptr);
  EXPECT_EQ(rootspan_claim_release(claim, nullptr), ROOTSPAN_OK);
}

TEST_F(TruncatedFile, MappingEveryComponentAtOnceAfterTheFileShrankFailsTheCallAndMapsNothing) {
  const WrittenFile file = write_checkpoint();
  ASSERT_EQ(load(file.path, ROOTSPAN_LOAD_MMAP), ROOTSPAN_OK) << describe(error_.get());
  rootspan_component_mapping mapping{};
  mapping.struct_size = ROOTSPAN_COMPONENT_MAPPING_STRUCT_SIZE;
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_weights_map_components(weights_, 0, 1, &mapping, &raw), ROOTSPAN_OK) << describe(raw);
  EXPECT_EQ(rootspan_unmap(mapping.mapping), ROOTSPAN_OK);
  EXPECT_EQ(rootspan_claim_release(mapping.claim, nullptr), ROOTSPAN_OK);

  // One measurement of the file a call, taken in this call: the shrink is seen.
  fs::resize_file(file.path, file.bytes.size() / 2);
  rootspan_component_mapping after{};
  after.struct_size = ROOTSPAN_COMPONENT_MAPPING_STRUCT_SIZE;
  ASSERT_EQ(rootspan_weights_map_components(weights_, 0, 1, &after, &raw), ROOTSPAN_ERR_IO);
  ErrorPtr e(raw);
  const std::string message = rootspan_error_message(e.get());
  EXPECT_NE(message.find("component \"w\" (index 0)"), std::string::npos) << message;
  EXPECT_NE(message.find("truncated to " + std::to_string(file.bytes.size() / 2) + " bytes"), std::string::npos)
      << message;
  EXPECT_EQ(after.claim, nullptr) << "nothing written on failure";
  // Nothing was left claimed: the component can be released.
  EXPECT_EQ(rootspan_weights_release_component(weights_, 0, &raw), ROOTSPAN_OK) << describe(raw);
}

TEST_F(TruncatedFile, TheReadStrategyKeepsItsCopyWhenTheFileIsTruncated) {
  const WrittenFile file = write_checkpoint();
  ASSERT_EQ(load(file.path, ROOTSPAN_LOAD_READ), ROOTSPAN_OK) << describe(error_.get());
  fs::resize_file(file.path, 0);
  char hex[65] = {};
  rootspan_error *raw = nullptr;
  ASSERT_EQ(rootspan_weights_component_sha256(weights_, 0, hex, &raw), ROOTSPAN_OK) << describe(raw);
  EXPECT_EQ(std::string(hex), sha256_hex(file.tensor("w")));
}

// The recovery point itself: a copy out of a mapping whose file shrank under
// it (after any size check could have run) fails instead of killing the
// process, on this thread and on others.
TEST(MappedRead, ACopyThatFaultsOnATruncatedMappingFailsAndTheProcessGoesOn) {
  TempDir dir;
  const std::vector<std::byte> bytes(1 << 16, std::byte{0x5A});
  const fs::path path = dir.write("data.bin", bytes);
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void *mapped = ::mmap(nullptr, bytes.size(), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  ASSERT_NE(mapped, MAP_FAILED);
  std::vector<std::byte> out(bytes.size());
  EXPECT_TRUE(rootspan::copy_surviving_sigbus(out.data(), mapped, out.size()));
  EXPECT_EQ(out, bytes);
  fs::resize_file(path, 4096);
  EXPECT_TRUE(rootspan::copy_surviving_sigbus(out.data(), mapped, 4096)) << "the first page is still in the file";
  for (int round = 0; round < 3; ++round) {
    EXPECT_FALSE(rootspan::copy_surviving_sigbus(out.data(), mapped, out.size()));
  }
  bool other_thread = true;
  std::thread([&] { other_thread = rootspan::copy_surviving_sigbus(out.data(), mapped, out.size()); }).join();
  EXPECT_FALSE(other_thread);
  ::munmap(mapped, bytes.size());
}

}  // namespace
}  // namespace rootspan::testing
