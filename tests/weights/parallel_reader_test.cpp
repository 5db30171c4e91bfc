// ParallelReader (weights/files/parallel_reader.hpp): bytes equal the file's
// for direct reads at every alignment, the buffered fallback is taken and
// named, a file truncated while reads are in flight fails cleanly, a
// cancelling completion stops the reads, and the in-flight budget holds
// (counted, never timed), small ranges are read buffered, and adjacent ranges
// are gathered into one request.
// Each test runs on both engines; the pread threads are as many as the
// expected bytes keep busy; and those that cannot all be started (a thread
// limit) read with those that could.
#include "weights/files/parallel_reader.hpp"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "tests/support/temp_dir.hpp"
#include "weights/files/file_system.hpp"

namespace rootspan::weights {
namespace {

using testing::TempDir;

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 generator(seed);
  std::vector<std::byte> bytes(n);
  for (auto &b : bytes) b = static_cast<std::byte>(generator());
  return bytes;
}

InputFile open_input(const std::filesystem::path &path) {
  auto file = InputFile::open(path, "test");
  if (!file) throw std::runtime_error(file.error()->cause);
  return std::move(file).value();
}

// A buffer whose address is `misalignment` bytes past a 4096-byte boundary.
class Destination {
 public:
  Destination(std::size_t bytes, std::size_t misalignment)
      : block_(static_cast<std::byte *>(std::aligned_alloc(4096, (bytes + misalignment + 4095) / 4096 * 4096 + 4096))),
        data_(block_ + misalignment) {}
  ~Destination() { std::free(block_); }
  std::byte *data() const { return data_; }

 private:
  std::byte *block_;
  std::byte *data_;
};

class ParallelReaderTest : public ::testing::TestWithParam<ReadEngine> {
 protected:
  ParallelReadOptions options(ReadMode mode) const {
    ParallelReadOptions o;
    o.mode = mode;
    o.engine = GetParam();
    o.operation = "test_read";
    o.buffered_range_bytes = 0;  // every range read as the mode says,
    o.gather_adjacent = false;   // as a request of its own
    return o;
  }
  std::unique_ptr<ParallelReader> make(ParallelReadOptions o) const {
    auto reader = ParallelReader::create(std::move(o));
    EXPECT_TRUE(reader) << reader.error()->cause;
    if (GetParam() == ReadEngine::kIoUring && reader.value()->stats().engine != ReadEngine::kIoUring) {
      return nullptr;  // no io_uring here: the thread engine's run covers the rest
    }
    return std::move(reader).value();
  }
};

TEST_P(ParallelReaderTest, DirectReadsEqualTheFileAtEveryAlignment) {
  // The folder of the test on a disk file system: $TMPDIR, else the build
  // folder the suite runs in.
  TempDir tmp;
  const std::vector<std::byte> bytes = random_bytes(96 * 1024 + 333, 7);
  std::filesystem::path path = tmp.write("data.bin", bytes);
  if (!direct_alignment_of(open_input(path).fd()).why.empty()) {
    path = std::filesystem::current_path() / "parallel_reader_direct.bin";
    std::FILE *out = std::fopen(path.c_str(), "wb");
    ASSERT_NE(out, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), out);
    std::fclose(out);
  }
  const InputFile file = open_input(path);
  if (const DirectAlignment a = direct_alignment_of(file.fd()); !a.why.empty()) GTEST_SKIP() << a.why;
  auto reader = make(options(ReadMode::kDirect));
  if (!reader) GTEST_SKIP() << "io_uring unavailable";
  EXPECT_TRUE(reader->reads_direct(file));

  const std::uint64_t offsets[] = {0, 1, 511, 512, 4095, 4096, 4097, 8192 + 100};
  const std::uint64_t lengths[] = {1, 100, 511, 512, 4096, 5000, 12289, 3 * 4096, 64 * 1024};
  const std::size_t misalignments[] = {0, 1, 8, 512, 4095};
  struct Case {
    std::unique_ptr<Destination> destination;
    std::uint64_t offset, length;
  };
  std::vector<Case> cases;
  for (std::uint64_t offset : offsets) {
    for (std::uint64_t length : lengths) {
      for (std::size_t misalignment : misalignments) {
        if (offset + length > bytes.size()) continue;
        cases.push_back({std::make_unique<Destination>(length, misalignment), offset, length});
        ASSERT_TRUE(reader->submit({&file, offset, cases.back().destination->data(), length, "case"}));
      }
    }
  }
  // The file's last bytes: the final block ends past the end of the file.
  cases.push_back({std::make_unique<Destination>(777, 0), bytes.size() - 777, 777});
  ASSERT_TRUE(reader->submit({&file, bytes.size() - 777, cases.back().destination->data(), 777, "tail"}));
  auto drained = reader->drain();
  ASSERT_TRUE(drained) << drained.error()->cause;
  std::uint64_t total = 0;
  for (const Case &c : cases) {
    total += c.length;
    ASSERT_EQ(std::memcmp(c.destination->data(), bytes.data() + c.offset, c.length), 0)
        << "offset " << c.offset << " length " << c.length;
  }
  const ParallelReadStats &stats = reader->stats();
  EXPECT_TRUE(stats.fallbacks.empty()) << stats.fallbacks.begin()->second;
  EXPECT_EQ(stats.bytes, total);
  EXPECT_EQ(stats.direct_bytes, total);
  EXPECT_GT(stats.bounced_bytes, 0u);     // the unaligned heads and tails
  EXPECT_LT(stats.bounced_bytes, total);  // and not the aligned middles
  if (path.parent_path() == std::filesystem::current_path()) std::filesystem::remove(path);
}

TEST_P(ParallelReaderTest, ADestinationPlacedAsTheFileOffsetIsTakesEveryWholeBlockInPlace) {
  // In the build folder, as above: /tmp may be tmpfs, which is read buffered.
  const std::vector<std::byte> bytes = random_bytes(3 << 20, 9);
  const std::filesystem::path path = std::filesystem::current_path() / "parallel_reader_placed.bin";
  {
    std::FILE *out = std::fopen(path.c_str(), "wb");
    ASSERT_NE(out, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), out);
    std::fclose(out);
  }
  const InputFile file = open_input(path);
  std::filesystem::remove(path);  // the open file stays readable
  if (const DirectAlignment a = direct_alignment_of(file.fd()); !a.why.empty()) GTEST_SKIP() << a.why;
  auto reader = make(options(ReadMode::kDirect));
  if (!reader) GTEST_SKIP() << "io_uring unavailable";
  if (!reader->reads_direct(file)) GTEST_SKIP() << reader->stats().fallbacks.begin()->second;
  // 100 bytes into a page of the file, and 100 bytes into a page of memory.
  const std::uint64_t offset = 4096 + 100, length = (2 << 20) + 1000;
  Destination placed(length, 100);
  ASSERT_TRUE(reader->submit({&file, offset, placed.data(), length, "placed"}));
  ASSERT_TRUE(reader->drain());
  EXPECT_EQ(std::memcmp(placed.data(), bytes.data() + offset, length), 0);
  const ParallelReadStats &stats = reader->stats();
  EXPECT_EQ(stats.direct_bytes, length);
  EXPECT_GT(stats.bounced_bytes, 0u);         // the partial first and last blocks
  EXPECT_LE(stats.bounced_bytes, 2 * 4096u);  // and nothing of the middle
}

TEST_P(ParallelReaderTest, DirectFallsBackToBufferedOnTmpfsAndNamesTheFile) {
  const std::filesystem::path shm = "/dev/shm";
  if (!std::filesystem::is_directory(shm)) GTEST_SKIP() << "no /dev/shm";
  char folder[] = "/dev/shm/rootspan-reader-XXXXXX";
  ASSERT_NE(::mkdtemp(folder), nullptr);
  const std::filesystem::path path = std::filesystem::path(folder) / "data.bin";
  const std::vector<std::byte> bytes = random_bytes(20000, 3);
  {
    std::FILE *out = std::fopen(path.c_str(), "wb");
    ASSERT_NE(out, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), out);
    std::fclose(out);
  }
  const InputFile file = open_input(path);
  if (file_system_of(file.fd()).kind != FileSystemKind::kMemory) {
    std::filesystem::remove_all(folder);
    GTEST_SKIP() << "/dev/shm is not tmpfs here";
  }
  auto reader = make(options(ReadMode::kDirect));
  if (!reader) GTEST_SKIP() << "io_uring unavailable";
  EXPECT_FALSE(reader->reads_direct(file));  // known before any read: tmpfs is read buffered
  std::vector<std::byte> into(bytes.size() - 4097);
  ASSERT_TRUE(reader->submit({&file, 4097, into.data(), into.size(), "x"}));
  ASSERT_TRUE(reader->drain());
  EXPECT_EQ(std::memcmp(into.data(), bytes.data() + 4097, into.size()), 0);
  const ParallelReadStats &stats = reader->stats();
  EXPECT_EQ(stats.direct_bytes, 0u);
  ASSERT_EQ(stats.fallbacks.count(path.string()), 1u);
  EXPECT_NE(stats.fallbacks.at(path.string()).find("tmpfs"), std::string::npos) << stats.fallbacks.at(path.string());
  std::filesystem::remove_all(folder);
}

TEST_P(ParallelReaderTest, AFileTruncatedWhileReadsAreInFlightFailsCleanly) {
  for (ReadMode mode : {ReadMode::kBuffered, ReadMode::kDirect}) {
    TempDir tmp;
    const std::filesystem::path path = tmp.write("big.bin", random_bytes(32 << 20, 5));
    const InputFile file = open_input(path);
    ParallelReadOptions o = options(mode);
    o.request_bytes = 1 << 20;
    o.queue_depth = 4;
    int completions = 0;
    o.on_complete = [&](std::uint64_t) -> Result<void> {
      // The first read is in: the file loses all but its first MiB.
      if (completions++ == 0) {
        EXPECT_EQ(::truncate(path.c_str(), 1 << 20), 0);
      }
      return BOOST_OUTCOME_V2_NAMESPACE::success();
    };
    auto reader = make(std::move(o));
    if (!reader) GTEST_SKIP() << "io_uring unavailable";
    std::vector<std::byte> into(32 << 20);
    auto submitted = reader->submit({&file, 0, into.data(), into.size(), "component \"w\""});
    auto drained = reader->drain();
    const Result<void> &failed = submitted ? drained : submitted;
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error()->code, ROOTSPAN_ERR_IO);
    EXPECT_NE(failed.error()->cause.find("file ended early"), std::string::npos) << failed.error()->cause;
    EXPECT_NE(failed.error()->cause.find("component \"w\""), std::string::npos) << failed.error()->cause;
    EXPECT_LT(reader->stats().requests, 32u);  // reads after the failure were never started
  }
}

TEST_P(ParallelReaderTest, ACancellingCompletionStopsTheReads) {
  TempDir tmp;
  const std::filesystem::path path = tmp.write("big.bin", random_bytes(16 << 20, 9));
  const InputFile file = open_input(path);
  ParallelReadOptions o = options(ReadMode::kBuffered);
  o.request_bytes = 256 << 10;  // 64 requests
  o.queue_depth = 4;
  int completions = 0;
  o.on_complete = [&](std::uint64_t) -> Result<void> {
    if (++completions == 2) return make_error(ROOTSPAN_ERR_CANCELLED, "test_read", "cancelled by the test");
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  };
  auto reader = make(std::move(o));
  if (!reader) GTEST_SKIP() << "io_uring unavailable";
  std::vector<std::byte> into(16 << 20);
  auto submitted = reader->submit({&file, 0, into.data(), into.size(), ""});
  ASSERT_FALSE(submitted);
  EXPECT_EQ(submitted.error()->code, ROOTSPAN_ERR_CANCELLED);
  auto drained = reader->drain();
  ASSERT_FALSE(drained);
  EXPECT_EQ(drained.error()->code, ROOTSPAN_ERR_CANCELLED);
  // Two completed, then at most the four in flight: nothing new started.
  EXPECT_LE(reader->stats().requests, 2u + 4u);
  EXPECT_EQ(completions, 2);  // no completion reported after the cancel
}

TEST_P(ParallelReaderTest, SmallRangesAreReadBufferedEvenByADirectReader) {
  TempDir tmp;
  const std::vector<std::byte> bytes = random_bytes(3 << 20, 11);
  const InputFile file = open_input(tmp.write("data.bin", bytes));
  for (ReadMode mode : {ReadMode::kBuffered, ReadMode::kDirect}) {
    ParallelReadOptions o = options(mode);
    o.buffered_range_bytes = 64 << 10;
    auto reader = make(o);
    if (!reader) GTEST_SKIP() << "io_uring unavailable";
    const bool direct = reader->reads_direct(file);
    // 100 small ranges, the last of them exactly the limit: none is direct.
    std::vector<std::byte> small(100 * (64 << 10));
    for (std::uint64_t i = 0; i < 100; ++i) {
      const std::uint64_t length = i == 99 ? 64 << 10 : 100 + i;
      ASSERT_TRUE(reader->submit({&file, i * 1000 + 3, small.data() + i * (64 << 10), length, "small"}));
    }
    // One byte over the limit is read direct where the file allows.
    std::vector<std::byte> large((64 << 10) + 1);
    ASSERT_TRUE(reader->submit({&file, 4096, large.data(), large.size(), "large"}));
    ASSERT_TRUE(reader->drain());
    for (std::uint64_t i = 0; i < 100; ++i) {
      const std::uint64_t length = i == 99 ? 64 << 10 : 100 + i;
      ASSERT_EQ(std::memcmp(small.data() + i * (64 << 10), bytes.data() + i * 1000 + 3, length), 0) << i;
    }
    EXPECT_EQ(std::memcmp(large.data(), bytes.data() + 4096, large.size()), 0);
    EXPECT_EQ(reader->stats().direct_bytes, direct ? large.size() : 0u);
  }
}

TEST_P(ParallelReaderTest, AdjacentRangesAreGatheredIntoOneRequest) {
  TempDir tmp;
  const std::vector<std::byte> bytes = random_bytes(1 << 20, 13);
  const InputFile file = open_input(tmp.write("data.bin", bytes));
  ParallelReadOptions o = options(ReadMode::kBuffered);
  o.gather_adjacent = true;
  o.request_bytes = 256 << 10;
  auto reader = make(o);
  if (!reader) GTEST_SKIP() << "io_uring unavailable";
  // 40 ranges of 10,000 bytes, back to back from offset 7, each into its own
  // buffer; then one that does not follow (a gap of one byte).
  std::vector<std::vector<std::byte>> into(41, std::vector<std::byte>(10000));
  for (std::size_t i = 0; i < 40; ++i) {
    ASSERT_TRUE(reader->submit({&file, 7 + i * 10000, into[i].data(), 10000, "piece"}));
  }
  ASSERT_TRUE(reader->submit({&file, 7 + 40 * 10000 + 1, into[40].data(), 10000, "apart"}));
  ASSERT_TRUE(reader->drain());
  for (std::size_t i = 0; i < 41; ++i) {
    const std::size_t offset = 7 + i * 10000 + (i == 40 ? 1 : 0);
    ASSERT_EQ(std::memcmp(into[i].data(), bytes.data() + offset, 10000), 0) << i;
  }
  // 40 x 10,000 bytes fill one 256 KiB request with 26 of them, then 14 more;
  // the range apart is its own.
  EXPECT_EQ(reader->stats().requests, 3u);
  EXPECT_EQ(reader->stats().bytes, 41u * 10000);
}

TEST_P(ParallelReaderTest, AGatheredReadOfATruncatedFileFailsNamingItsFirstRange) {
  TempDir tmp;
  const std::vector<std::byte> bytes = random_bytes(100000, 17);
  const std::filesystem::path path = tmp.write("data.bin", bytes);
  const InputFile file = open_input(path);
  ParallelReadOptions o = options(ReadMode::kBuffered);
  o.gather_adjacent = true;
  auto reader = make(o);
  if (!reader) GTEST_SKIP() << "io_uring unavailable";
  std::vector<std::vector<std::byte>> into(3, std::vector<std::byte>(40000));
  ASSERT_EQ(::truncate(path.c_str(), 90000), 0);
  bool failed = false;
  for (std::size_t i = 0; i < 3 && !failed; ++i) {
    failed =
        !reader->submit({&file, i * 30000, into[i].data(), i == 2 ? 40000u : 30000u, "tensor " + std::to_string(i)});
  }
  auto drained = reader->drain();
  ASSERT_FALSE(drained);
  EXPECT_EQ(drained.error()->code, ROOTSPAN_ERR_IO);
  EXPECT_NE(drained.error()->cause.find("tensor 0 and the 2 ranges after it"), std::string::npos)
      << drained.error()->cause;
  EXPECT_NE(drained.error()->cause.find("file ended early"), std::string::npos) << drained.error()->cause;
}

TEST_P(ParallelReaderTest, TheInFlightBudgetIsRespected) {
  TempDir tmp;
  const std::vector<std::byte> bytes = random_bytes(32 << 20, 11);
  const std::filesystem::path path = tmp.write("big.bin", bytes);
  const InputFile file = open_input(path);
  for (ReadMode mode : {ReadMode::kBuffered, ReadMode::kDirect}) {
    ParallelReadOptions o = options(mode);
    o.request_bytes = 1 << 20;
    o.queue_depth = 16;
    o.max_bytes_in_flight = 3 << 20;
    auto reader = make(std::move(o));
    if (!reader) GTEST_SKIP() << "io_uring unavailable";
    std::vector<std::byte> into(bytes.size());
    ASSERT_TRUE(reader->submit({&file, 0, into.data(), into.size(), ""}));
    ASSERT_TRUE(reader->drain());
    EXPECT_EQ(into, bytes);
    const ParallelReadStats &stats = reader->stats();
    EXPECT_EQ(stats.requests, 32u);
    EXPECT_EQ(stats.peak_bytes_in_flight, 3u << 20);  // three whole requests, never a fourth
    EXPECT_EQ(stats.peak_requests_in_flight, 3u);
  }
  // The queue depth bounds requests when bytes do not.
  ParallelReadOptions o = options(ReadMode::kBuffered);
  o.request_bytes = 64 << 10;
  o.queue_depth = 5;
  auto reader = make(std::move(o));
  std::vector<std::byte> into(bytes.size());
  ASSERT_TRUE(reader->submit({&file, 0, into.data(), into.size(), ""}));
  ASSERT_TRUE(reader->drain());
  EXPECT_EQ(reader->stats().peak_requests_in_flight, 5u);
  EXPECT_EQ(into, bytes);
}

// The threads every process of the user `uid` runs now, counted in /proc.
std::size_t threads_of(uid_t uid) {
  std::size_t threads = 0;
  std::error_code error;
  for (std::filesystem::directory_iterator entry("/proc", error), end; !error && entry != end; entry.increment(error)) {
    const std::string name = entry->path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;  // not a process ("self", "sys")
    std::ifstream status(entry->path() / "status");                           // a process gone since is read as nothing
    bool its = false;
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Uid:", 0) == 0) {
        uid_t real = 0;
        std::istringstream(line.substr(4)) >> real;
        its = real == uid;
      } else if (its && line.rfind("Threads:", 0) == 0) {
        threads += std::stoul(line.substr(8));
      }
    }
  }
  return threads;
}

// A user and group no account uses, so that its thread count is this test's.
constexpr uid_t kUnusedUser = 64977;

// What a child run under a thread limit says (its exit status).
enum ChildOutcome : int { kDone = 0, kSetupFailed = 90, kLimitDidNotBite = 91, kOtherFailure = 1 };

// Runs `body` in a child process as kUnusedUser (no supplementary groups),
// with the thread limit (RLIMIT_NPROC: every thread of the user counts) set
// `beyond` the threads the user runs once the child is it: 0 lets it start
// none, 2 lets it start two.
// Returns the child's exit status, or minus the signal that ended it (a pool
// destroyed with threads running raises SIGABRT through std::terminate);
// nullopt where this process is not root (root's own limit is not enforced).
std::optional<int> in_child_with_thread_limit(std::size_t beyond, const std::function<int()> &body) {
  if (::geteuid() != 0) return std::nullopt;
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(kUnusedUser) != 0 || ::setuid(kUnusedUser) != 0) {
      ::_exit(kSetupFailed);
    }
    const rlim_t limit = threads_of(kUnusedUser) + beyond;
    const rlimit threads{limit, limit};
    if (::setrlimit(RLIMIT_NPROC, &threads) != 0) ::_exit(kSetupFailed);
    ::_exit(body());
  }
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child) return kSetupFailed;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

// The threads this process runs (/proc/self/status).
std::size_t own_threads() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) return std::stoul(line.substr(8));
  }
  return 0;
}

ParallelReadOptions eight_read_threads() {
  ParallelReadOptions o;
  o.engine = ReadEngine::kThreads;
  o.queue_depth = 8;
  o.request_bytes = 64 << 10;
  o.gather_adjacent = false;
  o.operation = "test_read";
  return o;
}

TEST(ParallelReaderThreads, AsManyThreadsStartAsTheExpectedBytesKeepBusyAtAMebibyteEach) {
  TempDir tmp;
  const std::vector<std::byte> bytes = random_bytes(3 << 20, 23);
  const InputFile file = open_input(tmp.write("data.bin", bytes));
  const auto threads_for = [&](std::uint64_t expected, std::size_t queue_depth) -> std::size_t {
    ParallelReadOptions o = eight_read_threads();
    o.expected_bytes = expected;
    o.queue_depth = queue_depth;
    const std::size_t before = own_threads();
    auto reader = ParallelReader::create(std::move(o));
    EXPECT_TRUE(reader) << reader.error()->cause;
    if (!reader) return 0;
    EXPECT_EQ(own_threads() - before, reader.value()->stats().threads);  // the stats count what runs
    std::vector<std::byte> into(bytes.size());
    EXPECT_TRUE(reader.value()->submit({&file, 0, into.data(), into.size(), "whole"}));
    EXPECT_TRUE(reader.value()->drain());
    EXPECT_EQ(into, bytes);  // however few, they read every byte
    return reader.value()->stats().threads;
  };
  EXPECT_EQ(threads_for(600'000, 16), 1u);  // a file of 10,000 small tensors
  EXPECT_EQ(threads_for(1 << 20, 16), 1u);  // a whole mebibyte
  EXPECT_EQ(threads_for((3 << 20) + 1, 16), 4u);
  EXPECT_EQ(threads_for(0, 16), 8u);  // unknown: the most
  EXPECT_EQ(threads_for(1ull << 40, 16), 8u);
  EXPECT_EQ(threads_for(1ull << 40, 3), 3u);   // never more than may be in flight
  EXPECT_EQ(threads_for(UINT64_MAX, 16), 8u);  // no overflow to none
}

TEST(ParallelReaderThreads, ReadThreadsThatCannotAllStartReadWithThoseThatDid) {
  TempDir tmp;
  const std::vector<std::byte> bytes = random_bytes(4 << 20, 17);
  const InputFile file = open_input(tmp.write("data.bin", bytes));
  const auto status = in_child_with_thread_limit(2, [&] {  // two of the eight threads can start
    const std::size_t before = own_threads();
    auto reader = ParallelReader::create(eight_read_threads());
    if (!reader) return int{kLimitDidNotBite};  // none started: another process counted as the user's
    const std::size_t started = own_threads() - before;
    if (started != 2) return int{kLimitDidNotBite};
    std::vector<std::byte> into(bytes.size());
    if (!reader.value()->submit({&file, 0, into.data(), into.size(), "whole"}) || !reader.value()->drain()) {
      return int{kOtherFailure};
    }
    return into == bytes ? int{kDone} : int{kOtherFailure};
  });
  if (!status) GTEST_SKIP() << "needs root, to run a child as another user under a thread limit";
  if (*status == kSetupFailed) GTEST_SKIP() << "could not run a child as user " << kUnusedUser << " with a limit";
  if (*status == kLimitDidNotBite) GTEST_SKIP() << "the thread limit did not leave room for some threads only";
  EXPECT_EQ(*status, kDone) << "1: a read failed or its bytes differ; "
                               "-6: std::terminate (a pool destroyed with its first threads running)";
}

TEST(ParallelReaderThreads, NoReadThreadAtAllIsAnErrorThatSaysSo) {
  const auto status = in_child_with_thread_limit(0, [] {
    auto reader = ParallelReader::create(eight_read_threads());
    if (reader) return int{kLimitDidNotBite};
    return reader.error()->cause.find("cannot start the read threads") == std::string::npos ? int{kOtherFailure}
                                                                                            : int{kDone};
  });
  if (!status) GTEST_SKIP() << "needs root, to run a child as another user under a thread limit";
  if (*status == kSetupFailed) GTEST_SKIP() << "could not run a child as user " << kUnusedUser << " with a limit";
  if (*status == kLimitDidNotBite) GTEST_SKIP() << "the thread limit left room for a thread";
  EXPECT_EQ(*status, kDone) << "1: an error that does not say why the reader could not be made";
}

INSTANTIATE_TEST_SUITE_P(Engines, ParallelReaderTest, ::testing::Values(ReadEngine::kIoUring, ReadEngine::kThreads),
                         [](const auto &info) { return info.param == ReadEngine::kIoUring ? "io_uring" : "threads"; });

}  // namespace
}  // namespace rootspan::weights
