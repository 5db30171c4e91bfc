// Whether fresh host memory should be advised MADV_HUGEPAGE: the one home of
// that rule, for the host provider's large allocations (plugins/host) and the
// memory a direct load places for itself (weights/placement/direct_landing).
// Header-only and over the C library alone, like provider_kit.hpp.
//
// Huge pages make a first touch cheap: one fault zeroes 2 MiB instead of 512
// faults of 4 KiB each. That holds where free memory is backed by the machine.
// In a virtual machine whose balloon reports free pages to the hypervisor
// (virtio-balloon's free page reporting), the free blocks of 2 MiB and more
// are exactly the ones reported and given back, so a huge page is rebuilt by
// the host on first touch, and filling fresh huge pages was 2-3x slower than
// filling 4 KiB pages (2.4 GB read from the page cache: 3.0 s against 1.0 s,
// docs/cold-start.md). There no advice is given: the kernel's own policy
// (`enabled` = always still gives huge pages where they are free) decides, as
// it does for every other program.
//
// ROOTSPAN_HUGE_PAGES=advise (or =no) overrides what is detected.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace rootspan_plugin_kit {

// What the kernel does with MADV_HUGEPAGE: the word in brackets of
// /sys/kernel/mm/transparent_hugepage/enabled ("always", "madvise",
// "never"), or "" where the file cannot be read.
inline std::string transparent_huge_pages_mode() {
  std::FILE *file = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
  if (file == nullptr) return "";
  char line[128] = {};
  const bool read = std::fgets(line, sizeof line, file) != nullptr;
  std::fclose(file);
  if (!read) return "";
  const char *open = std::strchr(line, '[');
  const char *close = open == nullptr ? nullptr : std::strchr(open, ']');
  return close == nullptr ? "" : std::string(open + 1, close);
}

// True when a virtio balloon bound to its driver offers free page reporting
// (feature bit 5, VIRTIO_BALLOON_F_REPORTING): its `features` file is one
// '0' or '1' per feature bit, bit 0 first. False where sysfs cannot tell.
inline bool free_pages_reported_to_hypervisor(const char *devices = "/sys/bus/virtio/devices") {
  constexpr std::size_t kReportingBit = 5;
  std::error_code error;
  for (const auto &device : std::filesystem::directory_iterator(devices, error)) {
    const auto driver = std::filesystem::read_symlink(device.path() / "driver", error);
    if (error || driver.filename() != "virtio_balloon") continue;
    std::FILE *file = std::fopen((device.path() / "features").c_str(), "re");
    if (file == nullptr) continue;
    char bits[160] = {};
    const bool read = std::fgets(bits, sizeof bits, file) != nullptr;
    std::fclose(file);
    if (read && std::strlen(bits) > kReportingBit && bits[kReportingBit] == '1') return true;
  }
  return false;
}

// Whether to advise huge pages, worked out once a process: the environment's
// ROOTSPAN_HUGE_PAGES first ("advise" or "no"), else no advice where free
// pages are reported to a hypervisor, else advice.
inline bool huge_page_advice_pays() {
  static const bool pays = [] {
    if (const char *forced = std::getenv("ROOTSPAN_HUGE_PAGES")) {
      if (std::strcmp(forced, "advise") == 0) return true;
      if (std::strcmp(forced, "no") == 0) return false;
    }
    return !free_pages_reported_to_hypervisor();
  }();
  return pays;
}

// Advises MADV_HUGEPAGE over fresh memory where it pays (above). Advice only:
// small pages still work where it fails or is not given.
inline void advise_huge_pages(void *data, std::size_t length) {
  if (huge_page_advice_pays()) (void)::madvise(data, length, MADV_HUGEPAGE);
}

}  // namespace rootspan_plugin_kit
