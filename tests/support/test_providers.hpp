// In-process test providers for the core suites (docs/writing-a-provider.md, "test providers").
//
// The provider entry function takes no user pointer, so the behaviour of every
// test provider is read from one global `Behaviour` that each test fixture
// resets (CoreTest::SetUp). The table-level configuration (name, which hooks
// exist, host access) is taken when the entry function is called; everything
// else (what allocate reports, whether a hook fails or throws, what a mapping
// looks like) is read on every hook call, so a test can change it between
// calls. Counters record how often each hook ran and whether any allocation
// was released twice.
//
// Entries:
//   test_provider_entry  - configurable by Behaviour::table (default "test":
//                          host access and map hooks, no device/copy hooks)
//   device_sim_entry     - "device-sim": simulated device memory without host
//                          access: no map hooks, prepare/release device access,
//                          copy hooks; two devices
//   nomap_entry          - "nomap": host pointer set, but no map hooks
//   null_entry           - returns NULL (a provider that cannot serve the core)
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "rootspan/provider.h"

namespace rootspan::testing {

// Which hooks a table offers and what it calls itself.
struct TableConfig {
  std::string name = "test";
  std::string kind = "test";
  std::uint32_t abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR;
  std::uint32_t abi_minor = ROOTSPAN_PROVIDER_ABI_MINOR;
  bool host_access = true;    // allocations report host_base
  bool map_hooks = true;      // map_read, map_write, unmap
  bool device_hooks = false;  // prepare_device_access, release_device_access
  bool copy_hooks = false;    // copy_from_host, copy_to_host
  bool null_init = false;     // a required entry left NULL
};

// How the hooks behave; read on every call.
struct Behaviour {
  TableConfig table;

  // init / device_count
  bool init_throws = false;
  std::uint32_t device_count = 1;
  std::string device_note;  // written on a successful device_count (a zero count's reason)

  // allocate: failure modes
  bool allocate_throws = false;         // throws std::runtime_error(throw_text)
  bool allocate_throws_nonstd = false;  // throws an int
  std::string throw_text = "boom";
  rootspan_status allocate_status = ROOTSPAN_OK;
  std::string allocate_message;

  // allocate: what it reports (nullopt: a well-behaved value)
  std::optional<std::uint64_t> domain;       // default: granted_domains[device]
  std::optional<std::uint64_t> local;        // default: a counter from 1
  std::optional<std::uint64_t> byte_offset;  // default 0
  std::optional<std::uint64_t> byte_length;  // default: as requested
  std::optional<std::uint64_t> alignment;    // default: as requested
  std::uint64_t host_shift = 0;              // host_base = aligned buffer + host_shift

  // release
  bool release_throws = false;  // frees, then throws

  // map_read / map_write
  bool map_throws = false;
  rootspan_status map_status = ROOTSPAN_OK;
  std::string map_message;
  std::int64_t map_length_delta = 0;    // reported length = requested + delta
  std::uint64_t map_pointer_shift = 0;  // reported pointer = correct pointer + shift
  bool map_null = false;                // reported pointer = NULL
  std::function<void()> map_callback;   // runs inside the map hook (e.g. to block in it)

  // prepare_device_access
  void *stream = reinterpret_cast<void *>(std::uintptr_t{0x5eed0});
  bool prepare_null_pointer = false;
  rootspan_status copy_status = ROOTSPAN_OK;
  std::string copy_message;
};

struct Counters {
  std::atomic<int> init{0};
  std::atomic<int> shutdown{0};
  std::atomic<int> allocate{0};        // calls
  std::atomic<int> allocated{0};       // successful allocations (blocks handed out)
  std::atomic<int> release{0};         // release hook calls
  std::atomic<int> double_release{0};  // release of a block not live
  std::atomic<int> map{0};
  std::atomic<int> unmap{0};
  std::atomic<int> prepare{0};
  std::atomic<int> release_access{0};
  std::atomic<int> unmap_after_release{0};            // unmap of an allocation already released
  std::atomic<int> access_released_after_release{0};  // the same for a device access
  std::atomic<int> copy_from{0};
  std::atomic<int> copy_to{0};
  // What the last prepare_device_access saw.
  std::atomic<std::uint64_t> last_prepare_byte_offset{0};
  std::atomic<std::uint64_t> last_prepare_element_offset{0};
};

Behaviour &behaviour();
Counters &counters();
// Resets behaviour and counters (a fixture calls this in SetUp).
void reset();
// Blocks handed out and not yet released.
int live_blocks();
// The first domain the core granted the last started instance of `name`
// (0 if none was started).
std::uint64_t granted_domain(const std::string &name);

// Entry functions (rootspan_provider_entry_fn). The simulated device memory of
// device-sim is ordinary host memory, so a test can read what a device pointer
// points at.
const rootspan_provider_table *test_provider_entry(std::uint32_t core_major, std::uint32_t core_minor);
const rootspan_provider_table *device_sim_entry(std::uint32_t core_major, std::uint32_t core_minor);
const rootspan_provider_table *nomap_entry(std::uint32_t core_major, std::uint32_t core_minor);
const rootspan_provider_table *null_entry(std::uint32_t core_major, std::uint32_t core_minor);

}  // namespace rootspan::testing
