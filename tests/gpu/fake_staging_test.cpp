// Uploads through the staging ring (weights/placement/staging_ring.hpp) into the device
// provider template over the fake runtime. The fake defers every
// asynchronous copy until its stream or an event is synchronized and counts
// the copies in flight, so these tests see that file reads overlap uploads
// (more than one copy in flight), that the ring is pinned memory allocated
// once per load, that a staging buffer is refilled only after its copy ran
// (otherwise the device would hold the overwritten bytes), and that a load
// cut short waits for its copies before it frees anything.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "../materialize/materialize_support.hpp"
#include "fake_load_fixture.hpp"

namespace rootspan::testing {
namespace {

constexpr std::uint64_t kBufferBytes = 16384;
constexpr std::uint32_t kBuffers = 3;

int pinned_live() {
  int n = 0;
  for (const auto &[p, a] : fake_gpu::state().allocations) n += a.pinned ? 1 : 0;
  return n;
}

class FakeStagingTest : public FakeLoadFixture<::testing::Test> {
 protected:
  FakeStagingTest() : FakeLoadFixture(1) {}
  void SetUp() override {
    FakeLoadFixture::SetUp();
    // Two shards of 64 KiB F32 tensors (4 staging chunks each) and odd-sized
    // U8 ones: 26 chunks through 3 buffers, so every buffer is refilled.
    a_ = write_safetensors(dir_, "a.safetensors",
                           {{"w0", "F32", {64, 256}}, {"w1", "F32", {64, 256}}, {"u0", "U8", {10001}}}, 31);
    b_ = write_safetensors(dir_, "b.safetensors",
                           {{"w2", "F32", {64, 256}}, {"w3", "F32", {64, 256}}, {"u1", "U8", {777}}}, 32);
    write_index(dir_, {{"a.safetensors", &a_}, {"b.safetensors", &b_}});
  }

  rootspan_load_options options(std::uint32_t buffers = kBuffers, std::uint64_t bytes = kBufferBytes) const {
    rootspan_load_options o{};
    o.struct_size = ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE;
    o.provider = "fake";
    o.strategy = ROOTSPAN_LOAD_READ;
    o.staging_buffer_count = buffers;
    o.staging_buffer_bytes = bytes;
    return o;
  }

  rootspan_status load(const rootspan_load_options &o, ErrorPtr *error) {
    rootspan_error *raw = nullptr;
    const rootspan_status s = rootspan_weights_load(context_, dir_.path().c_str(), &o, &weights_, &raw);
    error->reset(raw);
    return s;
  }

  // Every component's bytes, read back from device memory, are the file's.
  void expect_loaded_bytes() {
    std::size_t count = 0;
    ASSERT_EQ(rootspan_weights_component_count(weights_, &count), ROOTSPAN_OK);
    ASSERT_EQ(count, 6u);
    for (std::size_t i = 0; i < count; ++i) {
      rootspan_component_info c{};
      c.struct_size = sizeof c;
      ASSERT_EQ(rootspan_weights_component(weights_, i, &c), ROOTSPAN_OK);
      const std::string id = c.id;
      SCOPED_TRACE(id);
      const WrittenFile &file = a_.tensors.count(id) != 0 ? a_ : b_;
      std::vector<std::byte> back(c.byte_length);
      rootspan_claim *claim = nullptr;
      rootspan_error *raw = nullptr;
      ASSERT_EQ(rootspan_claim_acquire(c.root, 0, c.byte_length, ROOTSPAN_CLAIM_SHARED, &claim, &raw), ROOTSPAN_OK)
          << describe(raw);
      ASSERT_EQ(rootspan_copy_to_host(claim, 0, back.data(), back.size(), &raw), ROOTSPAN_OK) << describe(raw);
      ASSERT_EQ(rootspan_claim_release(claim, &raw), ROOTSPAN_OK) << describe(raw);
      EXPECT_TRUE(back == file.tensor(id)) << "the device bytes differ from the file's";
      char hex[65] = {};
      ASSERT_EQ(rootspan_weights_component_sha256(weights_, i, hex, &raw), ROOTSPAN_OK) << describe(raw);
      EXPECT_EQ(std::string(hex), sha256_hex(file.tensor(id)));
    }
  }

  rootspan::testing::TempDir dir_;
  WrittenFile a_;
  WrittenFile b_;
};

TEST_F(FakeStagingTest, ReadsOverlapCopiesThroughAPinnedRingAllocatedOncePerLoad) {
  ErrorPtr error;
  ASSERT_EQ(load(options(), &error), ROOTSPAN_OK) << describe(error.get());
  const fake_gpu::State &s = fake_gpu::state();
  // 4 chunks for each 64 KiB tensor, 1 for each U8 one.
  EXPECT_EQ(s.copies_issued, 4 * 4 + 2);
  // Overlap: later reads ran while earlier copies were still in flight; and
  // never more bytes in flight than the ring holds, so a buffer is refilled
  // only after its copies ran (the bytes below would be wrong otherwise, the
  // fake copying late).
  EXPECT_GE(s.max_copies_in_flight, 2);
  EXPECT_GT(s.max_bytes_in_flight, kBufferBytes);
  EXPECT_LE(s.max_bytes_in_flight, kBuffers * kBufferBytes);
  std::printf("[ staging  ] %d copies, at most %d (%llu bytes) in flight through %u x %llu-byte buffers\n",
              s.copies_issued, s.max_copies_in_flight, static_cast<unsigned long long>(s.max_bytes_in_flight), kBuffers,
              static_cast<unsigned long long>(kBufferBytes));
  // The ring: kBuffers pinned allocations for the whole load, none per tensor,
  // and all released before the load returned.
  EXPECT_EQ(s.pinned_allocations, static_cast<int>(kBuffers));
  EXPECT_EQ(pinned_live(), 0);
  // Success means every copy completed.
  EXPECT_EQ(s.copies_in_flight, 0);
  EXPECT_FALSE(fake_gpu::any_pending());
  expect_loaded_bytes();

  // A second load allocates its own ring, once again.
  rootspan_weights *first = std::exchange(weights_, nullptr);
  ASSERT_EQ(load(options(), &error), ROOTSPAN_OK) << describe(error.get());
  EXPECT_EQ(fake_gpu::state().pinned_allocations, 2 * static_cast<int>(kBuffers));
  EXPECT_EQ(rootspan_weights_free(first, nullptr), ROOTSPAN_OK);
}

TEST_F(FakeStagingTest, TheDefaultRingPacksSmallTensorsIntoFourBuffers) {
  ErrorPtr error;
  ASSERT_EQ(load(options(0, 0), &error), ROOTSPAN_OK) << describe(error.get());
  const fake_gpu::State &s = fake_gpu::state();
  EXPECT_EQ(s.pinned_allocations, 4);
  // Every tensor fits one 16 MiB buffer, so each is one copy, and all six are
  // in flight together until the load waits for them.
  EXPECT_EQ(s.copies_issued, 6);
  EXPECT_EQ(s.max_copies_in_flight, 6);
  EXPECT_EQ(s.copies_in_flight, 0);
  expect_loaded_bytes();
}

struct CutShort {
  int calls = 0;
  int stop_at = 0;
  bool fail_allocation = false;  // instead of cancelling, make the next device allocation fail
  int in_flight_when_stopped = 0;
};

int cut_short(void *context, const rootspan_load_progress *) {
  auto *cut = static_cast<CutShort *>(context);
  if (++cut->calls != cut->stop_at) return 0;
  cut->in_flight_when_stopped = fake_gpu::state().copies_in_flight;
  if (cut->fail_allocation) {
    fake_gpu::state().fail_next_malloc = fake_gpu::kMemoryAllocation;
    return 0;
  }
  return 1;
}

TEST_F(FakeStagingTest, ACancelledLoadWaitsForItsCopiesAndLeavesNothing) {
  CutShort cut;
  cut.stop_at = 6;  // inside the second tensor, copies in flight
  rootspan_load_options o = options();
  o.progress = cut_short;
  o.progress_context = &cut;
  ErrorPtr error;
  ASSERT_EQ(load(o, &error), ROOTSPAN_ERR_CANCELLED) << describe(error.get());
  EXPECT_NE(std::string(rootspan_error_message(error.get())).find("cancelled"), std::string::npos)
      << describe(error.get());
  EXPECT_GE(cut.in_flight_when_stopped, 2);
  EXPECT_EQ(fake_gpu::state().copies_in_flight, 0);
  EXPECT_FALSE(fake_gpu::any_pending());
  // No device root and no staging buffer is left, and none was freed while a
  // copy was still pending (TearDown checks pending_at_free).
  EXPECT_TRUE(fake_gpu::state().allocations.empty());
  EXPECT_EQ(fake_gpu::state().pinned_allocations, static_cast<int>(kBuffers));
}

TEST_F(FakeStagingTest, AFailedAllocationMidLoadWaitsForItsCopiesAndLeavesNothing) {
  CutShort cut;
  cut.stop_at = 5;  // the last chunk of the second tensor: the next allocation fails
  cut.fail_allocation = true;
  rootspan_load_options o = options();
  o.progress = cut_short;
  o.progress_context = &cut;
  ErrorPtr error;
  ASSERT_EQ(load(o, &error), ROOTSPAN_ERR_OUT_OF_MEMORY) << describe(error.get());
  EXPECT_NE(std::string(rootspan_error_message(error.get())).find("out of memory"), std::string::npos)
      << describe(error.get());
  EXPECT_GE(cut.in_flight_when_stopped, 2);
  EXPECT_EQ(fake_gpu::state().copies_in_flight, 0);
  EXPECT_FALSE(fake_gpu::any_pending());
  EXPECT_TRUE(fake_gpu::state().allocations.empty());
}

TEST_F(FakeStagingTest, AFailedWaitForACopyFailsTheLoadNamingTheRuntimeCall) {
  // The 4th event wait comes at a buffer refill, mid-load: the load must fail
  // with the runtime's error, still wait for the copies it issued, and leave
  // nothing behind.
  fake_gpu::state().fail_event_synchronize_at = 4;
  ErrorPtr error;
  ASSERT_EQ(load(options(), &error), ROOTSPAN_ERR_PROVIDER_FAILURE) << describe(error.get());
  const std::string message = rootspan_error_message(error.get());
  EXPECT_NE(message.find("fakeEventSynchronize failed"), std::string::npos) << message;
  EXPECT_NE(message.find("provider 'fake'"), std::string::npos) << message;
  EXPECT_GE(fake_gpu::state().event_synchronize_calls, 4);
  EXPECT_EQ(fake_gpu::state().copies_in_flight, 0);
  EXPECT_EQ(fake_gpu::state().events_live, 0);
  EXPECT_TRUE(fake_gpu::state().allocations.empty());
}

TEST_F(FakeStagingTest, AStagingRingOutsideItsBoundsIsRefusedNamingTheField) {
  ErrorPtr error;
  ASSERT_EQ(load(options(65, kBufferBytes), &error), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(rootspan_error_message(error.get())).find("options.staging_buffer_count is 65; at most 64"),
            std::string::npos)
      << describe(error.get());
  ASSERT_EQ(load(options(2, (1ull << 30) + 1), &error), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(rootspan_error_message(error.get())).find("options.staging_buffer_bytes is 1073741825"),
            std::string::npos)
      << describe(error.get());
  EXPECT_EQ(fake_gpu::state().pinned_allocations, 0);
}

}  // namespace
}  // namespace rootspan::testing
