// The `auto` strategy's rule table (weights/placement/read_strategy.hpp), row
// by row, for file systems a test machine cannot mount (NFS, Lustre, FUSE,
// overlay), and the file system kinds the statfs magic numbers name.
#include "weights/placement/read_strategy.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace rootspan::weights {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

StrategyChoice choose(FileSystemKind kind, const char *name, bool host, std::uint64_t total,
                      std::optional<std::uint64_t> available = 16 * kGiB) {
  return choose_strategy(Strategy::kAuto, StrategyInputs{"model.safetensors", {kind, name}, host, total, available});
}

TEST(AutoStrategy, HostMemoryMapsLocalAndInMemoryFiles) {
  for (auto [kind, name] : {std::pair{FileSystemKind::kLocal, "ext4"}, std::pair{FileSystemKind::kMemory, "tmpfs"},
                            std::pair{FileSystemKind::kUnknown, "type 0x1234"}}) {
    const StrategyChoice c = choose(kind, name, true, kGiB);
    EXPECT_EQ(c.strategy, Strategy::kMmap) << name;
    EXPECT_NE(c.reason.find(std::string("\"model.safetensors\" is on ") + name), std::string::npos) << c.reason;
    EXPECT_NE(c.reason.find("mapped (zero-copy)"), std::string::npos) << c.reason;
  }
}

TEST(AutoStrategy, HostMemoryReadsFromNetworkFuseAndOverlayFileSystems) {
  for (auto [kind, name, words] : {std::tuple{FileSystemKind::kNetwork, "nfs", "a network file system"},
                                   std::tuple{FileSystemKind::kNetwork, "lustre", "a network file system"},
                                   std::tuple{FileSystemKind::kFuse, "fuse", "a FUSE file system"},
                                   std::tuple{FileSystemKind::kOverlay, "overlay", "an overlay file system"}}) {
    const StrategyChoice c = choose(kind, name, true, kGiB);
    EXPECT_EQ(c.strategy, Strategy::kRead) << name;
    EXPECT_NE(c.reason.find(words), std::string::npos) << c.reason;
    EXPECT_NE(c.reason.find("not mapped"), std::string::npos) << c.reason;
  }
}

TEST(AutoStrategy, ACheckpointTooBigToCopyIsMappedEvenOnANetworkFileSystem) {
  const StrategyChoice c = choose(FileSystemKind::kNetwork, "nfs", true, 20 * kGiB, 16 * kGiB);
  EXPECT_EQ(c.strategy, Strategy::kMmap);
  EXPECT_NE(c.reason.find("21474836480 bytes against 17179869184 bytes of memory available"), std::string::npos)
      << c.reason;
  // Memory that cannot be read leaves the network rule alone.
  EXPECT_EQ(choose(FileSystemKind::kNetwork, "nfs", true, 20 * kGiB, std::nullopt).strategy, Strategy::kRead);
}

TEST(AutoStrategy, ADeviceUploadReadsAndGoesDirectWhenThePageCacheCouldNotKeepIt) {
  EXPECT_EQ(choose(FileSystemKind::kLocal, "ext4", false, kGiB).strategy, Strategy::kRead);
  const StrategyChoice big = choose(FileSystemKind::kLocal, "ext4", false, 9 * kGiB, 16 * kGiB);
  EXPECT_EQ(big.strategy, Strategy::kDirect);
  EXPECT_NE(big.reason.find("more than the page cache could keep"), std::string::npos) << big.reason;
  // Direct reads only where a local block device is: elsewhere a big upload reads buffered.
  EXPECT_EQ(choose(FileSystemKind::kNetwork, "nfs", false, 9 * kGiB, 16 * kGiB).strategy, Strategy::kRead);
  EXPECT_EQ(choose(FileSystemKind::kMemory, "tmpfs", false, 9 * kGiB, 16 * kGiB).strategy, Strategy::kRead);
}

TEST(AutoStrategy, AnExplicitStrategyIsTakenAsAsked) {
  for (Strategy s : {Strategy::kMmap, Strategy::kRead, Strategy::kDirect}) {
    const StrategyChoice c =
        choose_strategy(s, StrategyInputs{"m", {FileSystemKind::kNetwork, "nfs"}, true, kGiB, kGiB});
    EXPECT_EQ(c.strategy, s);
    EXPECT_EQ(c.reason, std::string("asked for ") + strategy_name(s));
  }
}

TEST(FileSystemOf, NamesTheFileSystemsThisMachineHas) {
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const FileSystem proc = file_system_of(fd);
  ::close(fd);
  EXPECT_EQ(proc.kind, FileSystemKind::kUnknown);  // procfs is none of the kinds that matter
  EXPECT_EQ(proc.name, "type 0x9fa0");             // PROC_SUPER_MAGIC
  const int shm = ::open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (shm >= 0) {
    const FileSystem fs = file_system_of(shm);
    ::close(shm);
    if (fs.name == "tmpfs") {
      EXPECT_EQ(fs.kind, FileSystemKind::kMemory);
    }
  }
}

}  // namespace
}  // namespace rootspan::weights
