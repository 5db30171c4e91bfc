// Part of gpu_provider.hpp (include that): the provider template's class, its
// types (Device, Block, Event, Instance) and the provider table. The member
// functions declared here are defined, by concern, in gpu_devices.hpp,
// gpu_memory.hpp and gpu_transfers.hpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "plugins/kit/provider_kit.hpp"
#include "rootspan/provider.h"

namespace rootspan_gpu {

// The kit's helpers, by their names here too (the plugins' traits call
// rootspan_gpu::copy_text).
using rootspan_plugin_kit::copy_text;
using rootspan_plugin_kit::fail;
using rootspan_plugin_kit::guarded;
using rootspan_plugin_kit::is_power_of_two;
using rootspan_plugin_kit::published_size;
using rootspan_plugin_kit::read_struct;
using rootspan_plugin_kit::write_message;
using rootspan_plugin_kit::write_struct;

// ---- the provider ---------------------------------------------------------

template <class R>
class GpuProvider {
 public:
  static const rootspan_provider_table table;

 private:
  using error_t = typename R::error_t;
  using stream_t = typename R::stream_t;
  using event_t = typename R::event_t;

  // One device the provider exposes.
  struct Device {
    int runtime_ordinal = 0;
    std::mutex mutex;  // guards the stream's creation
    stream_t stream{};
    bool stream_ready = false;
  };

  enum class Kind { device, pinned, registered };

  // What the runtime handed out, behind allocation.provider_handle.
  struct Block {
    Kind kind = Kind::device;
    std::uint32_t ordinal = 0;
    void *raw = nullptr;          // what the runtime returned: freed or unregistered on release
    char *base = nullptr;         // byte 0 of the allocation as reported (aligned)
    char *device_base = nullptr;  // the device address of byte 0
    std::uint64_t length = 0;
    std::uint64_t registered_length = 0;  // bytes registered with the runtime (0: none)
    void (*deleter)(void *, void *) = nullptr;
    void *deleter_context = nullptr;
    // Set when device work that may touch this allocation was issued (an
    // asynchronous copy, a device access); a host mapping waits for it first.
    std::atomic<bool> device_work{false};
  };

  struct Event {
    event_t event{};
    int runtime_ordinal = 0;
  };

  struct Instance {
    std::vector<std::uint64_t> domains;
    std::vector<std::unique_ptr<Device>> devices;
    std::string no_device_reason;  // why devices is empty
    std::atomic<std::uint64_t> next_local{1};
    void (*log)(void *, rootspan_log_level, const char *) = nullptr;
    void *log_context = nullptr;
  };

  static Instance *as_instance(rootspan_provider_instance *instance) { return reinterpret_cast<Instance *>(instance); }
  static Block *as_block(const rootspan_provider_allocation *allocation) {
    return static_cast<Block *>(allocation->provider_handle);
  }

  // ---- the runtime and its devices (gpu_devices.hpp) ----------------------

  static std::string describe(error_t error);
  static void log(const Instance *gpu, rootspan_log_level level, const std::string &line);
  static rootspan_status runtime_failure(rootspan_provider_message *message, rootspan_status status, error_t error,
                                         const std::string &what);
  static std::string no_device_text(const Instance *gpu);
  static rootspan_status find_device(Instance *gpu, std::uint32_t ordinal, const char *what, Device **device,
                                     rootspan_provider_message *message);
  static rootspan_status select(const Device &device, rootspan_provider_message *message);

  static rootspan_status init(const rootspan_core_services *services, const char *options_json,
                              rootspan_provider_instance **instance, rootspan_provider_message *message);
  static void shutdown(rootspan_provider_instance *instance) noexcept;
  static rootspan_status device_count(rootspan_provider_instance *instance, std::uint32_t *count,
                                      rootspan_provider_message *message);
  static rootspan_status device_info(rootspan_provider_instance *instance, std::uint32_t ordinal,
                                     rootspan_device_info *info, rootspan_provider_message *message);

  // ---- allocations and host mappings (gpu_memory.hpp) ---------------------

  static void describe_allocation(Instance *gpu, Block *block, std::uint64_t alignment,
                                  rootspan_provider_allocation *allocation);
  static void free_raw(Kind kind, void *raw);
  static rootspan_status allocate(rootspan_provider_instance *instance, const rootspan_allocation_request *request,
                                  rootspan_provider_allocation *allocation, rootspan_provider_message *message);
  static rootspan_status import_host_memory(rootspan_provider_instance *instance, const rootspan_host_memory *memory,
                                            rootspan_provider_allocation *allocation,
                                            rootspan_provider_message *message);
  static void release(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation) noexcept;

  static rootspan_status map(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                             std::uint64_t offset, std::uint64_t length, rootspan_provider_mapping *mapping,
                             rootspan_provider_message *message);
  static void unmap(rootspan_provider_instance *, const rootspan_provider_allocation *,
                    const rootspan_provider_mapping *) noexcept;

  // ---- streams, device access, copies, events (gpu_transfers.hpp) ---------

  static rootspan_status stream_of(Device &device, stream_t *stream, rootspan_provider_message *message);
  static rootspan_status wait_for_device(Instance *gpu, Block *block, rootspan_provider_message *message);

  static rootspan_status prepare_device_access(rootspan_provider_instance *instance,
                                               const rootspan_provider_allocation *allocation,
                                               std::uint64_t byte_offset, const rootspan_device_access_request *request,
                                               rootspan_device_access *access, rootspan_provider_message *message);
  static void release_device_access(rootspan_provider_instance *, const rootspan_provider_allocation *,
                                    const rootspan_device_access *) noexcept;

  static rootspan_status copy(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                              std::uint64_t offset, void *host, std::uint64_t length, bool to_device,
                              rootspan_provider_event **event, rootspan_provider_message *message);
  static rootspan_status copy_from_host(rootspan_provider_instance *instance,
                                        const rootspan_provider_allocation *allocation, std::uint64_t offset,
                                        const void *source, std::uint64_t length, rootspan_provider_event **event,
                                        rootspan_provider_message *message);
  static rootspan_status copy_to_host(rootspan_provider_instance *instance,
                                      const rootspan_provider_allocation *allocation, std::uint64_t offset,
                                      void *destination, std::uint64_t length, rootspan_provider_event **event,
                                      rootspan_provider_message *message);
  static rootspan_status event_wait(rootspan_provider_instance *, rootspan_provider_event *event,
                                    rootspan_provider_message *message);
};

template <class R>
const rootspan_provider_table GpuProvider<R>::table = {
    .struct_size = sizeof(rootspan_provider_table),
    .abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR,
    .abi_minor = ROOTSPAN_PROVIDER_ABI_MINOR,
    .name = R::kName,
    .kind = R::kName,
    .init = GpuProvider<R>::init,
    .shutdown = GpuProvider<R>::shutdown,
    .device_count = GpuProvider<R>::device_count,
    .device_info = GpuProvider<R>::device_info,
    .allocate = GpuProvider<R>::allocate,
    .release = GpuProvider<R>::release,
    .map_read = GpuProvider<R>::map,
    .map_write = GpuProvider<R>::map,
    .unmap = GpuProvider<R>::unmap,
    .prepare_device_access = GpuProvider<R>::prepare_device_access,
    .release_device_access = GpuProvider<R>::release_device_access,
    .copy_from_host = GpuProvider<R>::copy_from_host,
    .copy_to_host = GpuProvider<R>::copy_to_host,
    .event_wait = GpuProvider<R>::event_wait,
    .import_host_memory = GpuProvider<R>::import_host_memory,
};

}  // namespace rootspan_gpu
