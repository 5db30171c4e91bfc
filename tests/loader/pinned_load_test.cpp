// A pinned plugin (sha256) is loaded from a sealed memfd copy of exactly the
// bytes that were hashed: a writer who rewrites the file in place (same
// inode) after the hash cannot change what runs.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <thread>

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include "core/loader/plugin_file_check.hpp"
#include "core/loader/plugin_library.hpp"
#include "test_support.hpp"

namespace rootspan {
namespace {

using testing::HasPolicy;
using testing::Mentions;
using testing::sha256_hex;
using testing::TempDir;
namespace fs = std::filesystem;

const fs::path kGood = LOADER_TEST_GOOD_PLUGIN;
const fs::path kNoEntry = LOADER_TEST_NO_ENTRY_PLUGIN;

// Rewrites the file in place: the same inode, so an open descriptor of it
// sees the new bytes.
void rewrite_in_place(const fs::path &file, const std::string &bytes) {
  int fd = ::open(file.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

TEST(PinnedPluginL4, IsCheckedAndLoadedFromASealedMemfd) {
  TempDir dir;
  fs::path file = dir.copy(kGood, "libpinned.so");
  const std::string digest = sha256_hex(testing::read_file(file));
  auto r = check_plugin_file(file, digest);
  ASSERT_TRUE(r) << r.error()->message();
  const CheckedLibrary &lib = r.value();
  EXPECT_EQ(lib.sha256, digest);
  EXPECT_EQ(lib.real_path, file);
  std::error_code ec;
  const std::string target = fs::read_symlink(lib.descriptor_path(), ec).string();
  EXPECT_EQ(target.rfind("/memfd:rootspan-pinned-library", 0), 0u) << target;
  EXPECT_EQ(::fcntl(lib.fd.get(), F_GET_SEALS), kPinSeals);
  EXPECT_NE(::fcntl(lib.fd.get(), F_GETFD) & FD_CLOEXEC, 0);
  // Sealed: not even this process can change the copy.
  EXPECT_EQ(::pwrite(lib.fd.get(), "x", 1, 0), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(::ftruncate(lib.fd.get(), 0), -1);
  EXPECT_EQ(lib.size, fs::file_size(file));
}

TEST(PinnedPluginL4, RewritingTheFileAfterTheHashDoesNotChangeWhatIsLoaded) {
  TempDir dir;
  fs::path file = dir.copy(kGood, "libpinned.so");
  auto checked = check_plugin_file(file, sha256_hex(testing::read_file(file)));
  ASSERT_TRUE(checked) << checked.error()->message();
  // The writer wins the race outright: the file now holds other code.
  rewrite_in_place(file, testing::read_file(kNoEntry));
  auto loaded = load_plugin_library(std::move(checked).value());
  ASSERT_TRUE(loaded) << loaded.error()->message();
  ASSERT_NE(loaded.value().entry, nullptr) << "the rewritten bytes (a library without the entry) were loaded";
  const rootspan_provider_table *table = loaded.value().entry(ROOTSPAN_PROVIDER_ABI_MAJOR, ROOTSPAN_PROVIDER_ABI_MINOR);
  ASSERT_NE(table, nullptr);
  EXPECT_STREQ(table->name, "test-good");
}

// A writer flipping the file between two libraries as fast as it can, while
// the loader checks and loads it again and again: every load that passes the
// pin runs the pinned code; every other attempt is refused by the pin (L4),
// never by a later policy that would mean other bytes reached the loader.
TEST(PinnedPluginL4, AWriterRacingTheLoaderNeverWins) {
  TempDir dir;
  fs::path file = dir.copy(kGood, "libraced.so");
  const std::string good = testing::read_file(kGood);
  const std::string other = testing::read_file(kNoEntry);
  const std::string digest = sha256_hex(good);

  std::atomic<bool> stop{false};
  std::atomic<bool> writer_done{false};
  std::atomic<int> rewrites{0};
  std::thread writer([&] {
    int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
    for (bool flip = false; !stop.load(); flip = !flip) {
      const std::string &bytes = flip ? other : good;
      if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, bytes.data(), bytes.size(), 0) < 0) break;
      rewrites.fetch_add(1);
    }
    ::close(fd);
    writer_done.store(true);
  });
  // The race starts once the writer runs, and lasts at least 200 attempts and until the writer has
  // rewritten the file a few times meanwhile: on a busy machine a thread can wait for a whole time slice,
  // longer than 200 attempts take (a race that never ran would pass for nothing).
  while (rewrites.load() == 0 && !writer_done.load()) std::this_thread::yield();
  const int rewrites_before = rewrites.load();
  const auto raced = [&] { return rewrites.load() - rewrites_before >= 10 || writer_done.load(); };
  int loaded = 0, refused = 0;
  for (int attempt = 0; attempt < 200 || (!raced() && attempt < 200000); ++attempt) {
    auto checked = check_plugin_file(file, digest);
    if (!checked) {
      EXPECT_TRUE(HasPolicy(checked.error(), "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
      ++refused;
      continue;
    }
    auto r = load_plugin_library(std::move(checked).value());
    ASSERT_TRUE(r) << "bytes other than the hashed ones reached the loader: " << r.error()->message();
    const rootspan_provider_table *table = r.value().entry(ROOTSPAN_PROVIDER_ABI_MAJOR, ROOTSPAN_PROVIDER_ABI_MINOR);
    ASSERT_NE(table, nullptr);
    EXPECT_STREQ(table->name, "test-good");
    ++loaded;
  }
  const int rewrites_during = rewrites.load() - rewrites_before;
  stop.store(true);
  writer.join();
  EXPECT_GT(rewrites_during, 0) << "the writer never ran while the loader did";
  std::printf("pin race: %d loads of the pinned code, %d refused by the pin, %d rewrites\n", loaded, refused,
              rewrites.load());
}

TEST(PinnedPluginL4, AMismatchIsStillReportedWithBothDigests) {
  TempDir dir;
  fs::path file = dir.copy(kGood, "libpinned.so");
  auto r = check_plugin_file(file, std::string(64, '0'));
  ASSERT_FALSE(r);
  EXPECT_TRUE(HasPolicy(r.error(), "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(r.error(), "sha256 does not match (expected " + std::string(64, '0') + ", actual " +
                                      sha256_hex(testing::read_file(file)) + ")"));
}

// A pinned library is copied into memory: one larger than the limit is
// refused before anything is copied (a sparse file: no disk, no memory).
TEST(PinnedPluginL4, ALibraryTooLargeToPinIsRefusedBeforeCopying) {
  TempDir dir;
  fs::path file = dir.copy(kGood, "libhuge.so");
  ASSERT_EQ(::truncate(file.c_str(), static_cast<off_t>(kMaxPinnedLibraryBytes + 1)), 0);
  auto r = check_plugin_file(file, std::string(64, '0'));
  ASSERT_FALSE(r);
  EXPECT_TRUE(HasPolicy(r.error(), "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(r.error(), "too large to pin (expected at most 1073741824 bytes, actual 1073741825)"));
  EXPECT_TRUE(testing::HasValues(r.error(), kMaxPinnedLibraryBytes, kMaxPinnedLibraryBytes + 1));
}

}  // namespace
}  // namespace rootspan
