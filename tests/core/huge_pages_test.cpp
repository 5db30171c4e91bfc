// When fresh host memory is advised huge pages (plugins/kit/huge_pages.hpp):
// not where a virtio balloon reports free pages to the hypervisor. The sysfs
// tree is built in a temporary folder, so every case runs on any machine.
#include "plugins/kit/huge_pages.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;

class FreePageReporting : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("rootspan-huge-pages-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "drivers" / "virtio_balloon");
    fs::create_directories(root_ / "drivers" / "virtio_blk");
    fs::create_directories(root_ / "devices");
  }
  void TearDown() override { fs::remove_all(root_); }

  // A device bound to `driver` whose features file holds `bits`.
  void add_device(const std::string &name, const std::string &driver, const std::string &bits) {
    const fs::path device = root_ / "devices" / name;
    fs::create_directories(device);
    fs::create_directory_symlink(root_ / "drivers" / driver, device / "driver");
    std::ofstream(device / "features") << bits << "\n";
  }
  bool reported() const { return rootspan_plugin_kit::free_pages_reported_to_hypervisor((root_ / "devices").c_str()); }

  fs::path root_;
};

TEST_F(FreePageReporting, ABalloonOfferingBitFiveReportsFreePages) {
  add_device("virtio1", "virtio_blk", "0010001001100100");
  add_device("virtio0", "virtio_balloon", "0110010100000000");  // bit 5 set
  EXPECT_TRUE(reported());
}

TEST_F(FreePageReporting, ABalloonWithoutBitFiveDoesNot) {
  add_device("virtio0", "virtio_balloon", "0110000100000000");
  EXPECT_FALSE(reported());
}

TEST_F(FreePageReporting, BitFiveOfAnotherDeviceDoesNotCount) {
  add_device("virtio1", "virtio_blk", "0000010000000000");
  EXPECT_FALSE(reported());
}

TEST_F(FreePageReporting, AShortFeaturesFileOrNoSysfsIsNoReporting) {
  add_device("virtio0", "virtio_balloon", "01100");
  EXPECT_FALSE(reported());
  EXPECT_FALSE(rootspan_plugin_kit::free_pages_reported_to_hypervisor((root_ / "absent").c_str()));
}

}  // namespace
