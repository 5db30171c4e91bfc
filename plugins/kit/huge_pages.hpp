// Whether fresh host memory should be advised MADV_HUGEPAGE: the one home of
// that rule, for the host provider's large allocations (plugins/host) and the
// memory a direct load places for itself (weights/placement/direct_landing).
// Header-only, and over the C and C++ standard libraries alone, so that a
// plugin can use it as it uses provider_kit.hpp. Nothing here throws.
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
inline std::string transparent_huge_pages_mode() {  // throws only std::bad_alloc
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
inline bool free_pages_reported_to_hypervisor(const char *devices = "/sys/bus/virtio/devices") noexcept {
  constexpr std::size_t kReportingBit = 5;
  try {
    std::error_code error;
    std::filesystem::directory_iterator device(devices, error);
    for (; !error && device != std::filesystem::directory_iterator(); device.increment(error)) {
      std::error_code link_error;
      const auto driver = std::filesystem::read_symlink(device->path() / "driver", link_error);
      if (link_error || driver.filename() != "virtio_balloon") continue;
      std::FILE *file = std::fopen((device->path() / "features").c_str(), "re");
      if (file == nullptr) continue;
      char bits[160] = {};
      const bool read = std::fgets(bits, sizeof bits, file) != nullptr;
      std::fclose(file);
      if (read && std::strlen(bits) > kReportingBit && bits[kReportingBit] == '1') return true;
    }
  } catch (...) {  // out of memory building a path: no answer is "not reported"
  }
  return false;
}

// Whether huge pages are advised, and why not where they are not ("" where
// they are by default). Worked out once a process: the environment's
// ROOTSPAN_HUGE_PAGES first ("advise" or "no"), else no advice where free
// pages are reported to a hypervisor, else advice.
struct HugePageAdvice {
  bool advise;
  const char *why;
};
inline const HugePageAdvice &huge_page_advice() noexcept {
  static const HugePageAdvice advice = []() -> HugePageAdvice {
    if (const char *forced = std::getenv("ROOTSPAN_HUGE_PAGES")) {
      if (std::strcmp(forced, "advise") == 0) return {true, "ROOTSPAN_HUGE_PAGES=advise"};
      if (std::strcmp(forced, "no") == 0) return {false, "ROOTSPAN_HUGE_PAGES=no"};
    }
    if (free_pages_reported_to_hypervisor()) {
      return {false,
              "free memory is reported to the hypervisor, and fresh huge pages fill slower there than 4 KiB pages"};
    }
    return {true, ""};
  }();
  return advice;
}

inline bool huge_page_advice_pays() noexcept { return huge_page_advice().advise; }

// Advises MADV_HUGEPAGE over fresh memory where it pays (above). Advice only:
// small pages still work where it fails or is not given.
inline void advise_huge_pages(void *data, std::size_t length) noexcept {
  if (huge_page_advice_pays()) (void)::madvise(data, length, MADV_HUGEPAGE);
}

}  // namespace rootspan_plugin_kit
