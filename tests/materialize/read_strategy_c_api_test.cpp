// The read strategies through the C API (docs/cold-start.md): direct reads
// give the file's bytes at every alignment, on the host and through the
// staging ring; `auto` says what it chose and why; the buffered fallback is
// taken and reported on tmpfs; a file truncated while its reads are in flight
// and a cancel from the progress callback fail cleanly with no root left;
// populate reads the zero-copy roots in, and auto populates a checkpoint
// evicted from the page cache; on an overlay (mounted when the
// test may), auto reads and direct falls back.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "c_api_load_fixture.hpp"
#include "weights/placement/available_memory.hpp"

namespace rootspan::testing {
namespace {

// A folder on tmpfs (/dev/shm), removed with the object; empty when there is none.
class ShmDir {
 public:
  ShmDir() {
    char name[] = "/dev/shm/rootspan-strategy-XXXXXX";
    if (::mkdtemp(name) != nullptr) path_ = name;
  }
  ~ShmDir() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  const fs::path &path() const { return path_; }

 private:
  fs::path path_;
};

struct Truncating {
  fs::path path;
  int calls = 0;
};

int truncate_at_first_progress(void *context, const rootspan_load_progress *) {
  auto *t = static_cast<Truncating *>(context);
  if (t->calls++ == 0) {
    EXPECT_EQ(::truncate(t->path.c_str(), 4096), 0);
  }
  return 0;
}

int cancel_at_second_progress(void *context, const rootspan_load_progress *) {
  return ++*static_cast<int *>(context) >= 2 ? 1 : 0;
}

class ReadStrategyTest : public UploadCApiLoadTest {
 protected:
  static rootspan_load_options options(rootspan_load_strategy strategy, const char *provider = "host") {
    rootspan_load_options o = CApiLoadTest::options(provider);
    o.strategy = strategy;
    return o;
  }
  nlohmann::json report() const {
    char *json = nullptr;
    EXPECT_EQ(rootspan_weights_read_report(weights_, &json, nullptr), ROOTSPAN_OK);
    nlohmann::json doc = nlohmann::json::parse(json);
    rootspan_string_free(json);
    return doc;
  }

  // Every loaded component's bytes, read back through its provider, equal the file's.
  void expect_bytes_of(const WrittenFile &file) {
    std::size_t count = 0;
    ASSERT_EQ(rootspan_weights_component_count(weights_, &count), ROOTSPAN_OK);
    ASSERT_EQ(count, file.tensors.size());
    for (std::size_t i = 0; i < count; ++i) {
      rootspan_component_info info{};
      info.struct_size = sizeof info;
      ASSERT_EQ(rootspan_weights_component(weights_, i, &info), ROOTSPAN_OK);
      std::vector<std::byte> bytes(info.byte_length);
      rootspan_claim *claim = nullptr;
      ASSERT_EQ(rootspan_claim_acquire(info.root, 0, bytes.size(), ROOTSPAN_CLAIM_SHARED, &claim, nullptr),
                ROOTSPAN_OK);
      EXPECT_EQ(rootspan_copy_to_host(claim, 0, bytes.data(), bytes.size(), nullptr), ROOTSPAN_OK);
      EXPECT_EQ(rootspan_claim_release(claim, nullptr), ROOTSPAN_OK);
      EXPECT_EQ(bytes, file.tensor(info.id)) << info.id;
    }
  }

  // Tensors at file offsets 0, 1, 511, 4095 and 4097 within a block (the
  // data section starts at `remainder` mod 4096), with lengths that end
  // mid-block, some long enough for an aligned middle.
  WrittenFile misaligned_file(const TempDir &dir, std::uint64_t remainder) const {
    return write_safetensors(dir, "model.safetensors",
                             {{"a", "U8", {1}},
                              {"b", "U8", {510}},
                              {"c", "U8", {3584}},
                              {"d", "U8", {4098}},
                              {"e", "U8", {70000}},
                              {"f", "U8", {1 << 20}},
                              {"g", "U8", {333}}},
                             71, 4096, remainder);
  }

  TempDir dir_;
};

TEST_F(ReadStrategyTest, DirectReadsGiveTheFilesBytesAtEveryAlignment) {
  for (std::uint64_t remainder : {0u, 1u, 511u, 4095u}) {
    TempDir dir;
    const WrittenFile file = misaligned_file(dir, remainder);
    for (const char *provider : {"host", kUploadProviderName}) {
      ASSERT_EQ(load(file.path, options(ROOTSPAN_LOAD_DIRECT, provider)), ROOTSPAN_OK) << message();
      expect_bytes_of(file);
      const nlohmann::json r = report();
      EXPECT_EQ(r["requested"], "direct");
      EXPECT_EQ(r["strategy"], "direct");
      ASSERT_TRUE(r["reads"].is_object()) << r.dump();
      const std::uint64_t total = file.bytes.size() - file.data_offset;
      EXPECT_EQ(r["reads"]["bytes"], total);
      // The pread threads: as many as the load's bytes keep busy at a mebibyte each (here 2).
      const std::uint64_t threads = r["reads"]["engine"] == "io_uring" ? 0 : (total + (1u << 20) - 1) >> 20;
      EXPECT_EQ(r["reads"]["threads"], threads) << r.dump();
      if (r["reads"]["fallbacks"].empty()) {
        // Tensors of 64 KiB or less are read buffered: here e and f go direct.
        EXPECT_EQ(r["reads"]["direct_bytes"], 70000u + (1u << 20)) << r.dump();
      } else {  // $TMPDIR takes no direct reads here: the file is named with why
        EXPECT_EQ(r["reads"]["fallbacks"][0]["file"], file.path.string()) << r.dump();
        EXPECT_FALSE(r["reads"]["fallbacks"][0]["reason"].get<std::string>().empty());
      }
    }
  }
}

TEST_F(ReadStrategyTest, AutoSaysWhatItChoseAndWhy) {
  const WrittenFile file = misaligned_file(dir_, 0);
  ASSERT_EQ(load(file.path, options(ROOTSPAN_LOAD_AUTO)), ROOTSPAN_OK) << message();
  expect_bytes_of(file);
  nlohmann::json r = report();
  EXPECT_EQ(r["requested"], "auto");
  EXPECT_NE(r["strategy"], "auto");
  const std::string reason = r["reason"];
  EXPECT_EQ(reason.rfind("auto: \"model.safetensors\" is on ", 0), 0u) << reason;
  // A local disk or tmpfs (where the tests run) is mapped.
  if (reason.find("a local file system") != std::string::npos ||
      reason.find("a file system in memory") != std::string::npos) {
    EXPECT_EQ(r["strategy"], "mmap") << reason;
  }
  // A provider without host access always copies.
  ASSERT_EQ(load(file.path, options(ROOTSPAN_LOAD_AUTO, kUploadProviderName)), ROOTSPAN_OK) << message();
  expect_bytes_of(file);
  r = report();
  EXPECT_NE(r["strategy"], "mmap") << r.dump();
  EXPECT_TRUE(r["reads"].is_object());
  // An explicit strategy is taken as asked.
  ASSERT_EQ(load(file.path, options(ROOTSPAN_LOAD_READ)), ROOTSPAN_OK) << message();
  EXPECT_EQ(report()["reason"], "asked for read");
}

TEST_F(ReadStrategyTest, OnTmpfsAutoMapsAndDirectFallsBackSayingWhy) {
  ShmDir shm;
  if (shm.path().empty()) GTEST_SKIP() << "no /dev/shm";
  const WrittenFile file = misaligned_file(dir_, 1);
  const fs::path copy = shm.path() / "model.safetensors";
  fs::copy_file(file.path, copy);
  ASSERT_EQ(load(copy, options(ROOTSPAN_LOAD_AUTO)), ROOTSPAN_OK) << message();
  nlohmann::json r = report();
  if (r["reason"].get<std::string>().find("tmpfs") == std::string::npos) GTEST_SKIP() << "/dev/shm is not tmpfs";
  EXPECT_EQ(r["strategy"], "mmap");
  EXPECT_TRUE(r["reads"].is_null()) << r.dump();  // every component zero-copy: nothing read

  ASSERT_EQ(load(copy, options(ROOTSPAN_LOAD_DIRECT)), ROOTSPAN_OK) << message();
  expect_bytes_of(file);
  r = report();
  EXPECT_EQ(r["strategy"], "direct");
  EXPECT_EQ(r["reads"]["direct_bytes"], 0u);
  ASSERT_EQ(r["reads"]["fallbacks"].size(), 1u) << r.dump();
  EXPECT_EQ(r["reads"]["fallbacks"][0]["file"], copy.string());
  EXPECT_NE(r["reads"]["fallbacks"][0]["reason"].get<std::string>().find("tmpfs holds its files in memory"),
            std::string::npos)
      << r.dump();
}

// 96 MiB: more than the 64 MiB in flight, so reads are still to start when
// the first completes and the file loses all but its first page.
// Container images: an overlay mounted here when the test may mount (root);
// skipped otherwise.
TEST_F(ReadStrategyTest, OnOverlayAutoReadsAndDirectFallsBackSayingWhy) {
  const WrittenFile file = misaligned_file(dir_, 511);
  for (const char *sub : {"lower", "upper", "work", "merged"}) fs::create_directories(dir_.path() / sub);
  fs::copy_file(file.path, dir_.path() / "lower" / "model.safetensors");
  const std::string data = "lowerdir=" + (dir_.path() / "lower").string() +
                           ",upperdir=" + (dir_.path() / "upper").string() +
                           ",workdir=" + (dir_.path() / "work").string();
  const fs::path merged = dir_.path() / "merged";
  if (::mount("overlay", merged.c_str(), "overlay", 0, data.c_str()) != 0) {
    GTEST_SKIP() << "cannot mount an overlay here: " << std::strerror(errno);
  }
  // Detached whatever happens below, before the folder is removed.
  struct Unmount {
    fs::path path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{merged};
  const fs::path path = merged / "model.safetensors";
  ASSERT_EQ(load(path, options(ROOTSPAN_LOAD_AUTO)), ROOTSPAN_OK) << message();
  expect_bytes_of(file);
  nlohmann::json r = report();
  EXPECT_EQ(r["strategy"], "read") << r.dump();
  EXPECT_NE(r["reason"].get<std::string>().find("is on overlay, an overlay file system"), std::string::npos)
      << r.dump();
  ASSERT_EQ(load(path, options(ROOTSPAN_LOAD_DIRECT)), ROOTSPAN_OK) << message();
  expect_bytes_of(file);
  r = report();
  ASSERT_EQ(r["reads"]["fallbacks"].size(), 1u) << r.dump();
  EXPECT_NE(r["reads"]["fallbacks"][0]["reason"].get<std::string>().find("overlay"), std::string::npos) << r.dump();
  free_weights();
}

TEST_F(ReadStrategyTest, AFileTruncatedWhileItsReadsAreInFlightFailsWithNoRootLeft) {
  int ended_early = 0;  // loads that failed in a read, not in the size check before one
  for (rootspan_load_strategy strategy : {ROOTSPAN_LOAD_READ, ROOTSPAN_LOAD_DIRECT}) {
    for (const char *provider : {"host", kUploadProviderName}) {
      TempDir dir;
      const WrittenFile file = write_safetensors(
          dir, "model.safetensors",
          {{"a", "U8", {24 << 20}}, {"b", "U8", {24 << 20}}, {"c", "U8", {24 << 20}}, {"d", "U8", {24 << 20}}}, 72);
      Truncating truncating{file.path};
      rootspan_load_options o = options(strategy, provider);
      o.progress = truncate_at_first_progress;
      o.progress_context = &truncating;
      ASSERT_EQ(load(file.path, o), ROOTSPAN_ERR_IO) << message() << " strategy " << strategy << " " << provider;
      EXPECT_EQ(weights_, nullptr);
      EXPECT_EQ(live_roots(), 0u);
      EXPECT_NE(message().find("model.safetensors"), std::string::npos) << message();
      EXPECT_TRUE(message().find("file ended early") != std::string::npos ||
                  message().find("file size changed") != std::string::npos)
          << message();
      if (message().find("file ended early") != std::string::npos) {  // a read's own error names what it was for
        bool named = false;
        for (const std::string n : {"a", "b", "c", "d"}) {
          named = named || message().find("component \"" + n + "\": tensor \"" + n + "\"") != std::string::npos;
        }
        EXPECT_TRUE(named) << message();
        ++ended_early;
      }
    }
  }
  EXPECT_GT(ended_early, 0) << "no load failed in a read: the labels went untested";
  EXPECT_EQ(upload_live_blocks(), 0);
}

TEST_F(ReadStrategyTest, CancellingFromTheProgressCallbackStopsTheReads) {
  std::vector<TensorSpec> tensors;
  for (int i = 0; i < 40; ++i) tensors.push_back({"t" + std::to_string(i), "U8", {1 << 20}});
  const WrittenFile file = write_safetensors(dir_, "model.safetensors", tensors, 73);
  for (rootspan_load_strategy strategy : {ROOTSPAN_LOAD_READ, ROOTSPAN_LOAD_DIRECT}) {
    int calls = 0;
    rootspan_load_options o = options(strategy);
    o.progress = cancel_at_second_progress;
    o.progress_context = &calls;
    ASSERT_EQ(load(file.path, o), ROOTSPAN_ERR_CANCELLED) << message();
    EXPECT_EQ(calls, 2);  // no progress reported after the cancel
    EXPECT_EQ(live_roots(), 0u);
  }
}

TEST_F(ReadStrategyTest, PopulateReadsTheZeroCopyRootsIn) {
  const WrittenFile file =
      write_safetensors(dir_, "model.safetensors", {{"a", "F32", {1 << 18}}, {"b", "F32", {1 << 16}}}, 74);
  rootspan_load_options o = options(ROOTSPAN_LOAD_MMAP);
  ASSERT_EQ(load(file.path, o), ROOTSPAN_OK) << message();
  EXPECT_EQ(report()["warmed_bytes"], 0u);
  o.populate = 1;
  ASSERT_EQ(load(file.path, o), ROOTSPAN_OK) << message();
  expect_bytes_of(file);
  const nlohmann::json r = report();
  // Whole pages covering both tensors.
  EXPECT_GE(r["warmed_bytes"].get<std::uint64_t>(), 4u * ((1 << 18) + (1 << 16)));
  EXPECT_LE(r["warmed_bytes"].get<std::uint64_t>(), 4u * ((1 << 18) + (1 << 16)) + 4 * 4096);
}

TEST_F(ReadStrategyTest, AutoPopulatesACheckpointEvictedFromThePageCacheAndThenMapsItWarm) {
  const WrittenFile file =
      write_safetensors(dir_, "model.safetensors", {{"a", "F32", {1 << 20}}, {"b", "F32", {1 << 18}}}, 75);
  const int fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(::fsync(fd), 0);  // clean pages, which an eviction drops
  EXPECT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  ::close(fd);
  ASSERT_EQ(load(file.path, options(ROOTSPAN_LOAD_AUTO)), ROOTSPAN_OK) << message();
  nlohmann::json r = report();
  const std::string reason = r["reason"];
  if (reason.find("a local file system") == std::string::npos) GTEST_SKIP() << "not on a local disk: " << reason;
  expect_bytes_of(file);
  EXPECT_EQ(r["strategy"], "mmap") << reason;
  EXPECT_NE(reason.find("mapped (zero-copy), and populated: "), std::string::npos) << reason;
  EXPECT_GE(r["warmed_bytes"].get<std::uint64_t>(), 4u * ((1 << 20) + (1 << 18)));
  // Read in by that load, the file is warm: the next load maps it and reads nothing ahead.
  ASSERT_EQ(load(file.path, options(ROOTSPAN_LOAD_AUTO)), ROOTSPAN_OK) << message();
  r = report();
  EXPECT_EQ(r["strategy"], "mmap");
  EXPECT_EQ(r["warmed_bytes"], 0u) << r.dump();
  EXPECT_EQ(r["reason"].get<std::string>().find("populated"), std::string::npos) << r.dump();
}

TEST_F(ReadStrategyTest, PopulateOfASparseFileLargerThanMemoryIsRefusedBeforeReading) {
  // A tensor of twice the memory available, all of it a hole: populating it
  // would make every page resident. Refused before a page is read.
  const std::uint64_t available = rootspan::weights::available_memory().value_or(std::uint64_t{32} << 30);
  const std::uint64_t bytes = (2 * available + 4095) / 4096 * 4096;
  const std::string header = R"({"big": {"dtype": "U8", "shape": [)" + std::to_string(bytes) +
                             R"(], "data_offsets": [0, )" + std::to_string(bytes) + "]}}";
  std::string padded = header;
  while ((8 + padded.size()) % 4096 != 0) padded += ' ';
  std::vector<std::byte> prefix;
  for (int i = 0; i < 8; ++i) prefix.push_back(static_cast<std::byte>((padded.size() >> (8 * i)) & 0xFF));
  for (char c : padded) prefix.push_back(static_cast<std::byte>(c));
  const fs::path path = dir_.write("sparse.safetensors", prefix);
  if (::truncate(path.c_str(), static_cast<off_t>(prefix.size() + bytes)) != 0) {
    GTEST_SKIP() << "this file system cannot hold a sparse file of " << bytes << " bytes";
  }
  rootspan_load_options o = options(ROOTSPAN_LOAD_MMAP);
  o.populate = 1;
  EXPECT_EQ(load(path, o), ROOTSPAN_ERR_OUT_OF_MEMORY) << message();
  EXPECT_NE(message().find("available"), std::string::npos) << message();
  EXPECT_EQ(live_roots(), 0u);
  // Without populate, the mapping costs nothing.
  o.populate = 0;
  EXPECT_EQ(load(path, o), ROOTSPAN_OK) << message();
}

TEST_F(ReadStrategyTest, AnUnknownStrategyIsRefusedByName) {
  const WrittenFile file = misaligned_file(dir_, 0);
  ASSERT_EQ(load(file.path, options(4)), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message().find("strategy"), std::string::npos) << message();
  EXPECT_NE(message().find("4"), std::string::npos) << message();
  EXPECT_EQ(rootspan_weights_read_report(nullptr, nullptr, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace rootspan::testing
