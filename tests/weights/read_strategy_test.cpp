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
  return choose_strategy(
      Strategy::kAuto,
      StrategyInputs{
          .file = "model.safetensors", .fs = {kind, name}, .host = host, .total_bytes = total, .available = available});
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

StrategyChoice choose_resident(FileSystemKind kind, const char *name, std::optional<double> resident,
                               std::uint64_t total = kGiB, std::optional<std::uint64_t> available = 16 * kGiB,
                               bool host = true) {
  return choose_strategy(Strategy::kAuto,
                         StrategyInputs{"model.safetensors", {kind, name}, host, total, available, resident});
}

TEST(AutoStrategy, AColdCheckpointOnALocalDiskIsMappedAndPopulated) {
  const StrategyChoice cold = choose_resident(FileSystemKind::kLocal, "ext4", 0.12);
  EXPECT_EQ(cold.strategy, Strategy::kMmap);
  EXPECT_TRUE(cold.populate);
  EXPECT_NE(cold.reason.find("mapped (zero-copy), and populated: 12% of the pages sampled were in the page cache"),
            std::string::npos)
      << cold.reason;
  EXPECT_TRUE(choose_resident(FileSystemKind::kLocal, "ext4", 0.49).populate);
  // Mostly in the page cache already, or not sampled: mapped, pages fault in as they are touched.
  for (std::optional<double> resident :
       {std::optional<double>(0.5), std::optional<double>(1.0), std::optional<double>()}) {
    const StrategyChoice c = choose_resident(FileSystemKind::kLocal, "ext4", resident);
    EXPECT_EQ(c.strategy, Strategy::kMmap);
    EXPECT_FALSE(c.populate) << c.reason;
    EXPECT_EQ(c.reason.find("populated"), std::string::npos) << c.reason;
  }
  // Bigger than the memory available, or that memory unknown: populating could only evict what it read.
  EXPECT_FALSE(choose_resident(FileSystemKind::kLocal, "ext4", 0.0, 20 * kGiB, 16 * kGiB).populate);
  EXPECT_FALSE(choose_resident(FileSystemKind::kLocal, "ext4", 0.0, kGiB, std::nullopt).populate);
  EXPECT_TRUE(choose_resident(FileSystemKind::kLocal, "ext4", 0.0, 16 * kGiB, 16 * kGiB).populate);
  // Only on a local block device: tmpfs holds its files in memory, unknown kinds are left alone, a network
  // file system reads, a device upload copies.
  EXPECT_FALSE(choose_resident(FileSystemKind::kMemory, "tmpfs", 0.0).populate);
  EXPECT_FALSE(choose_resident(FileSystemKind::kUnknown, "type 0x1234", 0.0).populate);
  EXPECT_EQ(choose_resident(FileSystemKind::kNetwork, "nfs", 0.0).strategy, Strategy::kRead);
  const StrategyChoice upload = choose_resident(FileSystemKind::kLocal, "ext4", 0.0, kGiB, 16 * kGiB, false);
  EXPECT_EQ(upload.strategy, Strategy::kRead);
  EXPECT_FALSE(upload.populate);
  // An explicit strategy never populates on its own.
  EXPECT_FALSE(choose_strategy(Strategy::kMmap,
                               StrategyInputs{"m", {FileSystemKind::kLocal, "ext4"}, true, kGiB, 16 * kGiB, 0.0})
                   .populate);
}

StrategyChoice mmap_when_cold(FileSystemKind kind, const char *name, std::optional<double> resident,
                              std::uint64_t total = kGiB, std::optional<std::uint64_t> available = 16 * kGiB) {
  StrategyInputs in{"model.safetensors", {kind, name}, true, total, available, resident};
  in.populate_when_cold = true;
  return choose_strategy(Strategy::kMmap, in);
}

TEST(AutoStrategy, MmapPopulatedWhenColdIsPopulatedWhereAutoWouldBeAndNeverCopies) {
  const StrategyChoice cold = mmap_when_cold(FileSystemKind::kLocal, "ext4", 0.2);
  EXPECT_EQ(cold.strategy, Strategy::kMmap);
  EXPECT_TRUE(cold.populate);
  EXPECT_EQ(cold.reason,
            "asked for mmap, populate when cold: \"model.safetensors\" is on ext4, a local file system: populated: "
            "20% of the pages sampled were in the page cache, so they are read in before the load returns, many "
            "reads in flight");
  // Warm, not sampled, too big, memory unknown, or not a local block device: mapped, never populated, never read.
  for (auto [c, why] :
       {std::pair{mmap_when_cold(FileSystemKind::kLocal, "ext4", 0.5),
                  "50% of the pages sampled were in the page cache"},
        std::pair{mmap_when_cold(FileSystemKind::kLocal, "ext4", {}), "the page cache could not be sampled"},
        std::pair{mmap_when_cold(FileSystemKind::kLocal, "ext4", 0.0, 20 * kGiB, 16 * kGiB),
                  "the checkpoint is 21474836480 bytes against 17179869184 bytes of memory available"},
        std::pair{mmap_when_cold(FileSystemKind::kLocal, "ext4", 0.0, kGiB, std::nullopt),
                  "the memory available is unknown"},
        std::pair{mmap_when_cold(FileSystemKind::kMemory, "tmpfs", 0.0), "not a local block device"},
        std::pair{mmap_when_cold(FileSystemKind::kNetwork, "nfs", 0.0), "not a local block device"},
        std::pair{mmap_when_cold(FileSystemKind::kOverlay, "overlay", 0.0), "not a local block device"}}) {
    EXPECT_EQ(c.strategy, Strategy::kMmap) << c.reason;
    EXPECT_FALSE(c.populate) << c.reason;
    EXPECT_NE(c.reason.find("asked for mmap, populate when cold: "), std::string::npos) << c.reason;
    EXPECT_NE(c.reason.find(std::string(": not populated: ") + why), std::string::npos) << c.reason;
  }
  // Memory that is not host memory (a provider without host access) is never populated.
  StrategyInputs device{"m", {FileSystemKind::kLocal, "ext4"}, false, kGiB, 16 * kGiB, 0.0};
  device.populate_when_cold = true;
  const StrategyChoice upload = choose_strategy(Strategy::kMmap, device);
  EXPECT_FALSE(upload.populate);
  EXPECT_NE(upload.reason.find(": not populated: the memory is not host memory"), std::string::npos) << upload.reason;
  // Only mmap takes it: the copying strategies are taken as asked.
  StrategyInputs read{"m", {FileSystemKind::kLocal, "ext4"}, true, kGiB, 16 * kGiB, 0.0};
  read.populate_when_cold = true;
  const StrategyChoice r = choose_strategy(Strategy::kRead, read);
  EXPECT_EQ(r.strategy, Strategy::kRead);
  EXPECT_FALSE(r.populate);
  EXPECT_EQ(r.reason, "asked for read");
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
    const StrategyChoice c = choose_strategy(s, StrategyInputs{.file = "m",
                                                               .fs = {FileSystemKind::kNetwork, "nfs"},
                                                               .host = true,
                                                               .total_bytes = kGiB,
                                                               .available = kGiB});
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
