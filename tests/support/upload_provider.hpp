// A tiny in-process provider for the materialization tests: simulated device
// memory without host access (no host_base, no map hooks), reachable only
// through its copy hooks, so that a load must upload into it (docs/weight-schema.md).
//
// Its behaviour is read from one global `UploadBehaviour` that each test
// resets (upload_reset); counters record every hook call and every copy, so a
// test can see how many staging chunks a load used and that every allocation
// was released exactly once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rootspan/provider.h"

namespace rootspan::testing {

inline constexpr const char *kUploadProviderName = "upload";
inline constexpr const char *kSharedUploadProviderName = "shared";

struct UploadBehaviour {
  int fail_allocate_at = 0;   // the n-th allocate call (from 1) fails with OUT_OF_MEMORY; 0: never
  int fail_copy_from_at = 0;  // the n-th copy_from_host call (from 1) fails with PROVIDER_FAILURE; 0: never
  std::uint32_t device_count = 1;
  std::function<void()> on_release;  // runs inside every release hook call
};

struct UploadCopy {
  std::uint64_t local;   // the allocation's key.local
  std::uint64_t offset;  // where in the allocation
  std::uint64_t length;
};

struct UploadCounters {
  std::atomic<int> allocate{0};        // calls for device memory
  std::atomic<int> refused_kind{0};    // calls for another memory kind, refused as unsupported
  std::atomic<int> maps{0};            // map_read / map_write calls (the shared entry only)
  std::atomic<int> allocated{0};       // successful allocations
  std::atomic<int> release{0};         // release hook calls
  std::atomic<int> double_release{0};  // release of a block not live
  std::atomic<int> copy_from{0};
  std::atomic<int> copy_to{0};
  std::atomic<int> last_memory_kind{-1};  // what the last allocate request asked for
};

UploadBehaviour &upload_behaviour();
UploadCounters &upload_counters();
// Every copy_from_host, in call order.
std::vector<UploadCopy> upload_copies();
void upload_reset();
// Allocations handed out and not yet released.
int upload_live_blocks();

// The entry function (rootspan_provider_entry_fn): name "upload", kind
// "simulated", one device, copy hooks only.
const rootspan_provider_table *upload_entry(std::uint32_t core_major, std::uint32_t core_minor);
// The same simulated device, named "shared", as a device that shares memory
// with the host: its device memory has a host view (host_base and map hooks),
// as on an integrated GPU, so a load reads straight into it.
const rootspan_provider_table *shared_upload_entry(std::uint32_t core_major, std::uint32_t core_minor);

}  // namespace rootspan::testing
