// The device provider (docs/writing-a-provider.md), written once over a GPU runtime's API.
//
// The CUDA runtime and HIP mirror each other call for call, so both plugins
// (plugins/cuda/cuda_provider.cpp, plugins/rocm/rocm_provider.cpp) are this
// template instantiated with a small traits struct `R` that names the calls:
//
//   using error_t, stream_t, event_t;
//   kName ("cuda"), kRuntime ("CUDA"), kHasReadOnlyRegister, kSuccess, and
//   the runtime's function names for messages (kSetDevice, kMallocDevice, ...);
//   error_name, error_string, is_out_of_memory, versions, clear_error;
//   device_count, set_device, device_name, pci_bus_id, memory_info;
//   malloc_device, free_device, malloc_pinned, free_pinned, host_register,
//   host_unregister, host_device_pointer;
//   stream_create, stream_destroy, stream_synchronize, memcpy_async;
//   event_create, event_record, event_synchronize, event_destroy.
//
// What the provider offers:
// - devices: the runtime's devices, or the subset the manifest's options name
//   ({"devices": [0, 1]}); provider ordinal i is the i-th of them and owns
//   granted_domains[i]. Zero devices is a valid answer, with the runtime's own
//   reason in the message.
// - ROOTSPAN_MEMORY_DEVICE: device memory, no host access (map answers
//   Unsupported); ROOTSPAN_MEMORY_HOST_PINNED: page-locked, mapped, portable
//   host memory (host_base set, mappable, device-accessible).
// - import_host_memory: registers caller memory with the runtime (read-only
//   registration when the memory cannot be written, e.g. a checkpoint mmap),
//   so a retained region uploads without a bounce copy; release unregisters it
//   and then calls the caller's deleter.
// - device access: device pointer, ordinal and the device's stream.
// - copies: synchronous, or asynchronous on the device's stream with an event.
// - release: waits for the device's stream, then frees.
//
// Threads: hooks run on any thread. Every hook that touches a device selects
// it first (the runtime's current device is per thread); the lazily created
// per-device stream is guarded by its device's mutex.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rootspan/provider.h"

namespace rootspan_gpu {

// ---- small helpers --------------------------------------------------------

__attribute__((format(printf, 3, 4))) inline rootspan_status fail(rootspan_provider_message *message,
                                                                  rootspan_status status, const char *format, ...) {
  if (message != nullptr && message->data != nullptr && message->capacity != 0) {
    va_list args;
    va_start(args, format);
    std::vsnprintf(message->data, message->capacity, format, args);
    va_end(args);
  }
  return status;
}

// The published size (ROOTSPAN_<NAME>_STRUCT_SIZE) of each versioned struct
// this provider reads or writes, for provider.h's struct helpers.
constexpr std::size_t published_size(const rootspan_core_services *) { return ROOTSPAN_CORE_SERVICES_STRUCT_SIZE; }
constexpr std::size_t published_size(const rootspan_allocation_request *) {
  return ROOTSPAN_ALLOCATION_REQUEST_STRUCT_SIZE;
}
constexpr std::size_t published_size(const rootspan_host_memory *) { return ROOTSPAN_HOST_MEMORY_STRUCT_SIZE; }
constexpr std::size_t published_size(const rootspan_device_access_request *) {
  return ROOTSPAN_DEVICE_ACCESS_REQUEST_STRUCT_SIZE;
}
constexpr std::size_t published_size(const rootspan_device_info *) { return ROOTSPAN_DEVICE_INFO_STRUCT_SIZE; }
constexpr std::size_t published_size(const rootspan_provider_allocation *) {
  return ROOTSPAN_PROVIDER_ALLOCATION_STRUCT_SIZE;
}
constexpr std::size_t published_size(const rootspan_provider_mapping *) {
  return ROOTSPAN_PROVIDER_MAPPING_STRUCT_SIZE;
}
constexpr std::size_t published_size(const rootspan_device_access *) { return ROOTSPAN_DEVICE_ACCESS_STRUCT_SIZE; }

// A struct the core wrote, as a full one: fields past its size read as zero.
template <class T>
T read_struct(const T *in) {
  T out{};
  rootspan_struct_read(&out, published_size(in), in, sizeof(std::size_t));
  return out;
}

// Fills a struct the core handed over, up to the size the core set.
template <class T>
void write_struct(T *out, const T &value) {
  rootspan_struct_write(out, &value, published_size(out));
}

inline bool is_power_of_two(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
// Copies a NUL-terminated string into a fixed field, truncated to fit.
inline void copy_text(char *field, std::size_t capacity, const char *text) {
  const std::size_t length = ::strnlen(text, capacity - 1);
  std::memcpy(field, text, length);
  field[length] = '\0';
}
inline std::uint64_t lowest_bit(std::uintptr_t v) { return v == 0 ? std::uint64_t{1} << 63 : v & (~v + 1); }

// Runs a hook body; an escaping exception (allocation failure) becomes a
// status, since hooks must not throw across the ABI.
template <class Body>
rootspan_status guarded(rootspan_provider_message *message, Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return fail(message, ROOTSPAN_ERR_PROVIDER_FAILURE, "unexpected exception: %s", e.what());
  } catch (...) {
    return fail(message, ROOTSPAN_ERR_PROVIDER_FAILURE, "unexpected exception");
  }
}

// ---- options --------------------------------------------------------------

// {"devices": [0, 1]}: which runtime devices to expose, in provider order.
inline rootspan_status parse_options(const char *provider, const char *options_json, std::vector<int> *selected,
                                     bool *has_selection, rootspan_provider_message *message) {
  *has_selection = false;
  nlohmann::json options;
  try {
    options = nlohmann::json::parse(options_json == nullptr || *options_json == '\0' ? "{}" : options_json);
  } catch (const nlohmann::json::exception &e) {
    return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "options are not JSON: %s", e.what());
  }
  if (!options.is_object()) {
    return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "options must be a JSON object, got %s", options.type_name());
  }
  for (const auto &[key, value] : options.items()) {
    if (key != "devices") {
      return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT,
                  "unknown option \"%s\" (the %s provider takes only \"devices\": [ordinal, ...])", key.c_str(),
                  provider);
    }
    if (!value.is_array()) {
      return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "option \"devices\" must be an array of device ordinals");
    }
    for (const auto &ordinal : value) {
      if (!ordinal.is_number_unsigned() || ordinal.get<std::uint64_t>() > 1u << 20) {
        return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT,
                    "option \"devices\" holds %s, expected a non-negative device ordinal", ordinal.dump().c_str());
      }
      const int runtime = static_cast<int>(ordinal.get<std::uint64_t>());
      if (std::find(selected->begin(), selected->end(), runtime) != selected->end()) {
        return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "option \"devices\" names device %d twice", runtime);
      }
      selected->push_back(runtime);
    }
    *has_selection = true;
  }
  return ROOTSPAN_OK;
}

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

  // "out of memory (cudaErrorMemoryAllocation)"; HIP's error string is often
  // the name itself, which is then said once.
  static std::string describe(error_t error) {
    const char *name = R::error_name(error);
    const char *text = R::error_string(error);
    if (name == nullptr) name = "unknown error";
    if (text == nullptr || std::strcmp(name, text) == 0) return name;
    return std::string(text) + " (" + name + ")";
  }

  static void log(const Instance *gpu, rootspan_log_level level, const std::string &line) {
    if (gpu->log != nullptr) gpu->log(gpu->log_context, level, line.c_str());
  }

  // A runtime call's failure as a hook status. Clears the runtime's last error
  // so that a later, unrelated call does not report it again.
  static rootspan_status runtime_failure(rootspan_provider_message *message, rootspan_status status, error_t error,
                                         const std::string &what) {
    R::clear_error();
    return fail(message, status, "%s failed: %s", what.c_str(), describe(error).c_str());
  }

  static std::string no_device_text(const Instance *gpu) {
    return std::string("no ") + R::kRuntime + " device: " + gpu->no_device_reason;
  }

  // The device behind a provider ordinal, or a NotFound that names what there is.
  static rootspan_status find_device(Instance *gpu, std::uint32_t ordinal, const char *what, Device **device,
                                     rootspan_provider_message *message) {
    if (gpu->devices.empty()) {
      return fail(message, ROOTSPAN_ERR_NOT_FOUND, "%s on device %u: %s", what, ordinal, no_device_text(gpu).c_str());
    }
    if (ordinal >= gpu->devices.size()) {
      return fail(message, ROOTSPAN_ERR_NOT_FOUND, "%s on device %u: the %s provider has %zu device%s (0-%zu)", what,
                  ordinal, R::kName, gpu->devices.size(), gpu->devices.size() == 1 ? "" : "s", gpu->devices.size() - 1);
    }
    *device = gpu->devices[ordinal].get();
    return ROOTSPAN_OK;
  }

  static rootspan_status select(const Device &device, rootspan_provider_message *message) {
    const error_t e = R::set_device(device.runtime_ordinal);
    if (e != R::kSuccess) {
      return runtime_failure(message, ROOTSPAN_ERR_PROVIDER_FAILURE, e,
                             std::string(R::kSetDevice) + "(" + std::to_string(device.runtime_ordinal) + ")");
    }
    return ROOTSPAN_OK;
  }

  // Selects the device and returns its stream, made on first use.
  static rootspan_status stream_of(Device &device, stream_t *stream, rootspan_provider_message *message) {
    if (rootspan_status s = select(device, message); s != ROOTSPAN_OK) return s;
    std::lock_guard lock(device.mutex);
    if (!device.stream_ready) {
      const error_t e = R::stream_create(&device.stream);
      if (e != R::kSuccess) {
        return runtime_failure(message, ROOTSPAN_ERR_PROVIDER_FAILURE, e,
                               std::string(R::kStreamCreate) + " on device " + std::to_string(device.runtime_ordinal));
      }
      device.stream_ready = true;
    }
    *stream = device.stream;
    return ROOTSPAN_OK;
  }

  // Waits for everything issued on the block's device stream.
  static rootspan_status wait_for_device(Instance *gpu, Block *block, rootspan_provider_message *message) {
    Device &device = *gpu->devices[block->ordinal];
    {
      std::lock_guard lock(device.mutex);
      if (!device.stream_ready) return ROOTSPAN_OK;  // nothing was ever issued
    }
    stream_t stream{};
    if (rootspan_status s = stream_of(device, &stream, message); s != ROOTSPAN_OK) return s;
    const error_t e = R::stream_synchronize(stream);
    if (e != R::kSuccess) {
      return runtime_failure(message, ROOTSPAN_ERR_PROVIDER_FAILURE, e,
                             std::string(R::kStreamSynchronize) + " on device " + std::to_string(block->ordinal));
    }
    return ROOTSPAN_OK;
  }

  // ---- init, shutdown, devices -------------------------------------------

  static rootspan_status init(const rootspan_core_services *services, const char *options_json,
                              rootspan_provider_instance **instance, rootspan_provider_message *message) {
    return guarded(message, [&]() -> rootspan_status {
      if (services == nullptr || instance == nullptr) {
        return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "services or instance is NULL");
      }
      const rootspan_core_services core = read_struct(services);
      if (core.granted_domain_count == 0 || core.granted_domains == nullptr) {
        return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "the core granted no domain");
      }
      std::vector<int> selected;
      bool has_selection = false;
      const rootspan_status parsed = parse_options(R::kName, options_json, &selected, &has_selection, message);
      if (parsed != ROOTSPAN_OK) return parsed;

      auto gpu = std::make_unique<Instance>();
      gpu->domains.assign(core.granted_domains, core.granted_domains + core.granted_domain_count);
      gpu->log = core.log;
      gpu->log_context = core.log_context;

      int count = 0;
      const error_t e = R::device_count(&count);
      if (e != R::kSuccess || count <= 0) {
        // Zero devices: a valid answer, and the runtime says why.
        gpu->no_device_reason = e != R::kSuccess ? std::string(R::kDeviceCount) + " failed: " + describe(e)
                                                 : std::string(R::kDeviceCount) + " found no device";
        gpu->no_device_reason += " (" + R::versions() + ")";
        R::clear_error();
        count = 0;
      }
      if (count > 0) {
        if (!has_selection) {
          for (int i = 0; i < count; ++i) selected.push_back(i);
        }
        for (int runtime : selected) {
          if (runtime >= count) {
            return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT,
                        "option \"devices\" names device %d, but the %s runtime sees %d device%s (0-%d)", runtime,
                        R::kRuntime, count, count == 1 ? "" : "s", count - 1);
          }
        }
        if (selected.size() > gpu->domains.size()) {
          log(gpu.get(), ROOTSPAN_LOG_WARN,
              "the core granted " + std::to_string(gpu->domains.size()) + " domains; exposing only the first " +
                  std::to_string(gpu->domains.size()) + " of " + std::to_string(selected.size()) + " devices");
          selected.resize(gpu->domains.size());
        }
        if (selected.empty()) gpu->no_device_reason = "option \"devices\" is empty";
        for (int runtime : selected) {
          auto device = std::make_unique<Device>();
          device->runtime_ordinal = runtime;
          gpu->devices.push_back(std::move(device));
        }
      }
      *instance = reinterpret_cast<rootspan_provider_instance *>(gpu.release());
      return ROOTSPAN_OK;
    });
  }

  static void shutdown(rootspan_provider_instance *instance) noexcept {
    Instance *gpu = as_instance(instance);
    if (gpu == nullptr) return;
    for (auto &device : gpu->devices) {
      if (!device->stream_ready) continue;
      if (R::set_device(device->runtime_ordinal) == R::kSuccess) (void)R::stream_destroy(device->stream);
      R::clear_error();
    }
    delete gpu;
  }

  static rootspan_status device_count(rootspan_provider_instance *instance, std::uint32_t *count,
                                      rootspan_provider_message *message) {
    Instance *gpu = as_instance(instance);
    *count = static_cast<std::uint32_t>(gpu->devices.size());
    if (gpu->devices.empty()) fail(message, ROOTSPAN_OK, "%s", gpu->no_device_reason.c_str());
    return ROOTSPAN_OK;
  }

  static rootspan_status device_info(rootspan_provider_instance *instance, std::uint32_t ordinal,
                                     rootspan_device_info *info, rootspan_provider_message *message) {
    return guarded(message, [&]() -> rootspan_status {
      Instance *gpu = as_instance(instance);
      Device *device = nullptr;
      if (rootspan_status s = find_device(gpu, ordinal, "device_info", &device, message); s != ROOTSPAN_OK) return s;
      rootspan_device_info out{};
      out.struct_size = sizeof out;
      out.ordinal = ordinal;
      std::uint64_t total = 0;
      error_t e = R::device_name(device->runtime_ordinal, out.name, sizeof out.name, &total);
      if (e != R::kSuccess) {
        return runtime_failure(message, ROOTSPAN_ERR_PROVIDER_FAILURE, e,
                               std::string(R::kDeviceProperties) + "(" + std::to_string(device->runtime_ordinal) + ")");
      }
      out.total_memory_bytes = total;
      if (R::pci_bus_id(out.pci_bus_id, sizeof out.pci_bus_id, device->runtime_ordinal) != R::kSuccess) {
        out.pci_bus_id[0] = '\0';
        R::clear_error();
      }
      // Free memory needs the device's context; a listing should not fail
      // because of it, so a failure reads as 0 free bytes and a warning.
      std::size_t free_bytes = 0;
      std::size_t total_bytes = 0;
      e = R::set_device(device->runtime_ordinal);
      if (e == R::kSuccess) e = R::memory_info(&free_bytes, &total_bytes);
      if (e == R::kSuccess) {
        out.free_memory_bytes = free_bytes;
        if (total_bytes != 0) out.total_memory_bytes = total_bytes;
      } else {
        log(gpu, ROOTSPAN_LOG_WARN,
            std::string(R::kMemoryInfo) + " on device " + std::to_string(ordinal) + " failed: " + describe(e));
        R::clear_error();
      }
      write_struct(info, out);
      return ROOTSPAN_OK;
    });
  }

  // ---- allocations ----------------------------------------------------------

  static void describe_allocation(Instance *gpu, Block *block, std::uint64_t alignment,
                                  rootspan_provider_allocation *allocation) {
    rootspan_provider_allocation out{};
    out.struct_size = sizeof out;
    out.key.domain = gpu->domains[block->ordinal];
    out.key.local = gpu->next_local.fetch_add(1);
    out.byte_offset = 0;
    out.byte_length = block->length;
    out.alignment = alignment;
    out.host_base = block->kind == Kind::device ? nullptr : block->base;
    out.device = block->ordinal;
    out.provider_handle = block;
    write_struct(allocation, out);
  }

  static void free_raw(Kind kind, void *raw) {
    if (kind == Kind::device) {
      (void)R::free_device(raw);
    } else {
      (void)R::free_pinned(raw);
    }
    R::clear_error();
  }

  static rootspan_status allocate(rootspan_provider_instance *instance, const rootspan_allocation_request *request,
                                  rootspan_provider_allocation *allocation, rootspan_provider_message *message) {
    return guarded(message, [&]() -> rootspan_status {
      Instance *gpu = as_instance(instance);
      const rootspan_allocation_request want = read_struct(request);
      Kind kind = Kind::device;
      const char *what = nullptr;
      switch (want.memory_kind) {
        case ROOTSPAN_MEMORY_DEVICE:
          kind = Kind::device;
          what = "device memory";
          break;
        case ROOTSPAN_MEMORY_HOST_PINNED:
          kind = Kind::pinned;
          what = "pinned host memory";
          break;
        case ROOTSPAN_MEMORY_HOST:
          return fail(message, ROOTSPAN_ERR_UNSUPPORTED,
                      "the %s provider allocates ROOTSPAN_MEMORY_DEVICE and ROOTSPAN_MEMORY_HOST_PINNED; ordinary "
                      "host memory comes from the host provider",
                      R::kName);
        default:
          return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "unknown memory kind %d", want.memory_kind);
      }
      const std::string action = std::string("allocating ") + std::to_string(want.byte_length) + " bytes of " + what;
      Device *device = nullptr;
      if (rootspan_status s = find_device(gpu, want.device, action.c_str(), &device, message); s != ROOTSPAN_OK) {
        return s;
      }
      if (!is_power_of_two(want.alignment)) {
        return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "alignment %llu is not a power of two",
                    static_cast<unsigned long long>(want.alignment));
      }
      // What the runtime guarantees by itself: 256 bytes for device memory,
      // a page for pinned memory. More is had by padding.
      const std::uint64_t natural =
          kind == Kind::device ? std::uint64_t{256} : static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
      const std::uint64_t alignment = std::max(want.alignment, natural);
      const std::uint64_t padding = want.alignment > natural ? want.alignment - 1 : 0;
      std::uint64_t bytes = 0;
      if (__builtin_add_overflow(std::max<std::uint64_t>(want.byte_length, 1), padding, &bytes) || bytes > SIZE_MAX) {
        return fail(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "%s: length %llu plus alignment %llu overflows",
                    action.c_str(), static_cast<unsigned long long>(want.byte_length),
                    static_cast<unsigned long long>(want.alignment));
      }
      if (rootspan_status s = select(*device, message); s != ROOTSPAN_OK) return s;
      void *raw = nullptr;
      const error_t e = kind == Kind::device ? R::malloc_device(&raw, bytes) : R::malloc_pinned(&raw, bytes);
      if (e != R::kSuccess) {
        return runtime_failure(message,
                               R::is_out_of_memory(e) ? ROOTSPAN_ERR_OUT_OF_MEMORY : ROOTSPAN_ERR_PROVIDER_FAILURE, e,
                               std::string(kind == Kind::device ? R::kMallocDevice : R::kMallocPinned) + " of " +
                                   std::to_string(bytes) + " bytes on device " + std::to_string(want.device));
      }
      const auto address = reinterpret_cast<std::uintptr_t>(raw);
      const std::uintptr_t aligned = (address + padding) & ~static_cast<std::uintptr_t>(want.alignment - 1);
      // Report what the pointer really meets, never more than asked or natural.
      const std::uint64_t guaranteed = std::min<std::uint64_t>(alignment, lowest_bit(aligned));
      if (guaranteed < want.alignment) {
        free_raw(kind, raw);
        return fail(message, ROOTSPAN_ERR_PROVIDER_FAILURE, "%s: the runtime returned %p, not %llu-byte aligned",
                    action.c_str(), raw, static_cast<unsigned long long>(want.alignment));
      }
      char *device_base = reinterpret_cast<char *>(aligned);
      if (kind == Kind::pinned) {
        void *mapped = nullptr;
        const error_t m = R::host_device_pointer(&mapped, raw);
        if (m != R::kSuccess) {
          free_raw(kind, raw);
          return runtime_failure(
              message, ROOTSPAN_ERR_PROVIDER_FAILURE, m,
              std::string(R::kHostDevicePointer) + " for pinned memory on device " + std::to_string(want.device));
        }
        device_base = static_cast<char *>(mapped) + (aligned - address);
      }
      auto *block = new (std::nothrow) Block();
      if (block == nullptr) {
        free_raw(kind, raw);
        return fail(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "out of memory");
      }
      block->kind = kind;
      block->ordinal = want.device;
      block->raw = raw;
      block->base = reinterpret_cast<char *>(aligned);
      block->device_base = device_base;
      block->length = want.byte_length;
      describe_allocation(gpu, block, guaranteed, allocation);
      return ROOTSPAN_OK;
    });
  }

  static rootspan_status import_host_memory(rootspan_provider_instance *instance, const rootspan_host_memory *memory,
                                            rootspan_provider_allocation *allocation,
                                            rootspan_provider_message *message) {
    return guarded(message, [&]() -> rootspan_status {
      Instance *gpu = as_instance(instance);
      const rootspan_host_memory host = read_struct(memory);
      const std::string action = "registering " + std::to_string(host.byte_length) + " bytes of host memory";
      // Registered memory is portable (every device sees it); its key, stream
      // and ordinal are device 0's.
      Device *device = nullptr;
      if (rootspan_status s = find_device(gpu, 0, action.c_str(), &device, message); s != ROOTSPAN_OK) return s;
      if (host.data == nullptr && host.byte_length != 0) {
        return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "%s: data is NULL", action.c_str());
      }
      if (!is_power_of_two(host.alignment)) {
        return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "alignment %llu is not a power of two",
                    static_cast<unsigned long long>(host.alignment));
      }
      if (rootspan_status s = select(*device, message); s != ROOTSPAN_OK) return s;
      char *device_base = static_cast<char *>(host.data);
      if (host.byte_length != 0) {
        error_t e = R::host_register(host.data, host.byte_length, false);
        if (e != R::kSuccess && R::kHasReadOnlyRegister) {
          // Memory the process may not write (a read-only checkpoint mapping)
          // registers only as read-only.
          const std::string first = describe(e);
          R::clear_error();
          e = R::host_register(host.data, host.byte_length, true);
          if (e != R::kSuccess) {
            return runtime_failure(message, ROOTSPAN_ERR_PROVIDER_FAILURE, e,
                                   std::string(R::kHostRegister) + " of " + std::to_string(host.byte_length) +
                                       " bytes (read-write: " + first + "; read-only)");
          }
        } else if (e != R::kSuccess) {
          return runtime_failure(message, ROOTSPAN_ERR_PROVIDER_FAILURE, e,
                                 std::string(R::kHostRegister) + " of " + std::to_string(host.byte_length) + " bytes");
        }
        void *mapped = nullptr;
        e = R::host_device_pointer(&mapped, host.data);
        if (e != R::kSuccess) {
          const std::string why = describe(e);
          (void)R::host_unregister(host.data);
          R::clear_error();
          return fail(message, ROOTSPAN_ERR_PROVIDER_FAILURE, "%s for registered memory failed: %s",
                      R::kHostDevicePointer, why.c_str());
        }
        device_base = static_cast<char *>(mapped);
      }
      auto *block = new (std::nothrow) Block();
      if (block == nullptr) {
        if (host.byte_length != 0) (void)R::host_unregister(host.data);
        return fail(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "out of memory");
      }
      block->kind = Kind::registered;
      block->ordinal = 0;
      block->raw = host.data;
      block->base = static_cast<char *>(host.data);
      block->device_base = device_base;
      block->length = host.byte_length;
      block->registered_length = host.byte_length;
      block->deleter = host.deleter;
      block->deleter_context = host.deleter_context;
      describe_allocation(gpu, block, host.alignment, allocation);
      return ROOTSPAN_OK;
    });
  }

  static void release(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation) noexcept {
    Instance *gpu = as_instance(instance);
    Block *block = as_block(allocation);
    if (block == nullptr) return;
    char text[256];
    text[0] = '\0';
    rootspan_provider_message message{text, sizeof text};
    // Outstanding copies and kernels on the device's stream finish first.
    if (wait_for_device(gpu, block, &message) != ROOTSPAN_OK) {
      try {
        log(gpu, ROOTSPAN_LOG_WARN, std::string("releasing an allocation: ") + text);
      } catch (...) {
      }
    }
    if (gpu->devices.size() > block->ordinal) (void)R::set_device(gpu->devices[block->ordinal]->runtime_ordinal);
    switch (block->kind) {
      case Kind::device:
      case Kind::pinned:
        free_raw(block->kind, block->raw);
        break;
      case Kind::registered:
        if (block->registered_length != 0) (void)R::host_unregister(block->raw);
        R::clear_error();
        if (block->deleter != nullptr) block->deleter(block->deleter_context, block->raw);
        break;
    }
    delete block;
  }

  // ---- host mappings ----------------------------------------------------------

  static rootspan_status map(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                             std::uint64_t offset, std::uint64_t length, rootspan_provider_mapping *mapping,
                             rootspan_provider_message *message) {
    return guarded(message, [&]() -> rootspan_status {
      Instance *gpu = as_instance(instance);
      Block *block = as_block(allocation);
      if (block->kind == Kind::device) {
        return fail(message, ROOTSPAN_ERR_UNSUPPORTED,
                    "%s device memory has no host access; copy it with copy_to_host/copy_from_host, or allocate "
                    "ROOTSPAN_MEMORY_HOST_PINNED",
                    R::kRuntime);
      }
      std::uint64_t end = 0;
      if (__builtin_add_overflow(offset, length, &end) || end > block->length) {
        return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "range [%llu,+%llu) leaves the allocation of %llu bytes",
                    static_cast<unsigned long long>(offset), static_cast<unsigned long long>(length),
                    static_cast<unsigned long long>(block->length));
      }
      // The host must not see bytes the device is still writing.
      if (block->device_work.exchange(false)) {
        if (rootspan_status s = wait_for_device(gpu, block, message); s != ROOTSPAN_OK) {
          block->device_work = true;
          return s;
        }
      }
      rootspan_provider_mapping out{};
      out.struct_size = sizeof out;
      out.data = block->base + offset;
      out.byte_length = length;
      out.provider_token = nullptr;
      write_struct(mapping, out);
      return ROOTSPAN_OK;
    });
  }

  static void unmap(rootspan_provider_instance *, const rootspan_provider_allocation *,
                    const rootspan_provider_mapping *) noexcept {}

  // ---- device access ------------------------------------------------------------

  static rootspan_status prepare_device_access(rootspan_provider_instance *instance,
                                               const rootspan_provider_allocation *allocation,
                                               std::uint64_t byte_offset, const rootspan_device_access_request *request,
                                               rootspan_device_access *access, rootspan_provider_message *message) {
    return guarded(message, [&]() -> rootspan_status {
      Instance *gpu = as_instance(instance);
      Block *block = as_block(allocation);
      const rootspan_device_access_request want = read_struct(request);
      std::uint64_t element_bytes = 0;
      std::uint64_t offset = 0;
      if (__builtin_mul_overflow(want.element_offset, want.element_size, &element_bytes) ||
          __builtin_add_overflow(byte_offset, element_bytes, &offset) || offset > block->length) {
        return fail(message, ROOTSPAN_ERR_INVALID_REQUEST,
                    "element offset %llu of %llu-byte elements at byte %llu leaves the allocation of %llu bytes",
                    static_cast<unsigned long long>(want.element_offset),
                    static_cast<unsigned long long>(want.element_size), static_cast<unsigned long long>(byte_offset),
                    static_cast<unsigned long long>(block->length));
      }
      stream_t stream{};
      if (rootspan_status s = stream_of(*gpu->devices[block->ordinal], &stream, message); s != ROOTSPAN_OK) return s;
      block->device_work = true;
      rootspan_device_access out{};
      out.struct_size = sizeof out;
      out.device_ptr = block->device_base + offset;
      out.device_ordinal = block->ordinal;
      out.stream = static_cast<void *>(stream);
      out.provider_token = nullptr;
      write_struct(access, out);
      return ROOTSPAN_OK;
    });
  }

  static void release_device_access(rootspan_provider_instance *, const rootspan_provider_allocation *,
                                    const rootspan_device_access *) noexcept {}

  // ---- copies ---------------------------------------------------------------------

  static rootspan_status copy(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                              std::uint64_t offset, void *host, std::uint64_t length, bool to_device,
                              rootspan_provider_event **event, rootspan_provider_message *message) {
    return guarded(message, [&]() -> rootspan_status {
      Instance *gpu = as_instance(instance);
      Block *block = as_block(allocation);
      const char *direction = to_device ? "copy_from_host" : "copy_to_host";
      if (event != nullptr) *event = nullptr;
      std::uint64_t end = 0;
      if (__builtin_add_overflow(offset, length, &end) || end > block->length) {
        return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT,
                    "%s: range [%llu,+%llu) leaves the allocation of %llu bytes", direction,
                    static_cast<unsigned long long>(offset), static_cast<unsigned long long>(length),
                    static_cast<unsigned long long>(block->length));
      }
      if (host == nullptr && length != 0) {
        return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "%s: host pointer is NULL", direction);
      }
      if (length == 0 && event == nullptr) return ROOTSPAN_OK;
      Device &device = *gpu->devices[block->ordinal];
      stream_t stream{};
      if (rootspan_status s = stream_of(device, &stream, message); s != ROOTSPAN_OK) return s;
      char *target = block->device_base + offset;
      const std::string what = std::string(R::kMemcpyAsync) + " of " + std::to_string(length) + " bytes " +
                               (to_device ? "to" : "from") + " device " + std::to_string(block->ordinal);
      if (length != 0) {
        const error_t e =
            to_device ? R::memcpy_async(target, host, length, stream) : R::memcpy_async(host, target, length, stream);
        if (e != R::kSuccess) return runtime_failure(message, ROOTSPAN_ERR_PROVIDER_FAILURE, e, what);
      }
      if (event == nullptr) {
        const error_t e = R::stream_synchronize(stream);
        if (e != R::kSuccess) return runtime_failure(message, ROOTSPAN_ERR_PROVIDER_FAILURE, e, what);
        return ROOTSPAN_OK;
      }
      block->device_work = true;
      auto *done = new (std::nothrow) Event();
      error_t e = done == nullptr ? R::kSuccess : R::event_create(&done->event);
      if (done != nullptr && e == R::kSuccess) {
        e = R::event_record(done->event, stream);
        if (e != R::kSuccess) (void)R::event_destroy(done->event);
      }
      if (done == nullptr || e != R::kSuccess) {
        // The copy is issued: finish it before saying the event failed.
        (void)R::stream_synchronize(stream);
        delete done;
        if (done == nullptr) return fail(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "out of memory");
        return runtime_failure(message, ROOTSPAN_ERR_PROVIDER_FAILURE, e,
                               std::string(R::kEventRecord) + " after " + what);
      }
      done->runtime_ordinal = device.runtime_ordinal;
      *event = reinterpret_cast<rootspan_provider_event *>(done);
      return ROOTSPAN_OK;
    });
  }

  static rootspan_status copy_from_host(rootspan_provider_instance *instance,
                                        const rootspan_provider_allocation *allocation, std::uint64_t offset,
                                        const void *source, std::uint64_t length, rootspan_provider_event **event,
                                        rootspan_provider_message *message) {
    return copy(instance, allocation, offset, const_cast<void *>(source), length, true, event, message);
  }

  static rootspan_status copy_to_host(rootspan_provider_instance *instance,
                                      const rootspan_provider_allocation *allocation, std::uint64_t offset,
                                      void *destination, std::uint64_t length, rootspan_provider_event **event,
                                      rootspan_provider_message *message) {
    return copy(instance, allocation, offset, destination, length, false, event, message);
  }

  static rootspan_status event_wait(rootspan_provider_instance *, rootspan_provider_event *event,
                                    rootspan_provider_message *message) {
    auto *done = reinterpret_cast<Event *>(event);
    if (done == nullptr) return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "event is NULL");
    (void)R::set_device(done->runtime_ordinal);
    const error_t e = R::event_synchronize(done->event);
    (void)R::event_destroy(done->event);
    delete done;
    if (e == R::kSuccess) return ROOTSPAN_OK;
    R::clear_error();
    return guarded(message, [&]() -> rootspan_status {
      return fail(message, ROOTSPAN_ERR_PROVIDER_FAILURE, "%s failed: %s", R::kEventSynchronize, describe(e).c_str());
    });
  }
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
