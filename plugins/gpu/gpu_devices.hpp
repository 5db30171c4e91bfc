// Part of gpu_provider.hpp: the runtime and its devices. Runtime errors as
// messages, finding and selecting a device, and the hooks init, shutdown,
// device_count and device_info.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "plugins/gpu/gpu_options.hpp"
#include "plugins/gpu/gpu_types.hpp"
#include "rootspan/provider.h"

namespace rootspan_gpu {

// ---- runtime errors and device choice ---------------------------------------

// "out of memory (cudaErrorMemoryAllocation)"; HIP's error string is often
// the name itself, which is then said once.
template <class R>
std::string GpuProvider<R>::describe(error_t error) {
  const char *name = R::error_name(error);
  const char *text = R::error_string(error);
  if (name == nullptr) name = "unknown error";
  if (text == nullptr || std::strcmp(name, text) == 0) return name;
  return std::string(text) + " (" + name + ")";
}

template <class R>
void GpuProvider<R>::log(const Instance *gpu, rootspan_log_level level, const std::string &line) {
  if (gpu->log != nullptr) gpu->log(gpu->log_context, level, line.c_str());
}

// A runtime call's failure as a hook status. Clears the runtime's last error
// so that a later, unrelated call does not report it again.
template <class R>
rootspan_status GpuProvider<R>::runtime_failure(rootspan_provider_message *message, rootspan_status status,
                                                error_t error, const std::string &what) {
  R::clear_error();
  return fail(message, status, "%s failed: %s", what.c_str(), describe(error).c_str());
}

template <class R>
std::string GpuProvider<R>::no_device_text(const Instance *gpu) {
  return std::string("no ") + R::kRuntime + " device: " + gpu->no_device_reason;
}

// The device behind a provider ordinal, or a NotFound that names what there is.
template <class R>
rootspan_status GpuProvider<R>::find_device(Instance *gpu, std::uint32_t ordinal, const char *what, Device **device,
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

template <class R>
rootspan_status GpuProvider<R>::select(const Device &device, rootspan_provider_message *message) {
  const error_t e = R::set_device(device.runtime_ordinal);
  if (e != R::kSuccess) {
    return runtime_failure(message, ROOTSPAN_ERR_PROVIDER_FAILURE, e,
                           std::string(R::kSetDevice) + "(" + std::to_string(device.runtime_ordinal) + ")");
  }
  return ROOTSPAN_OK;
}

// ---- init, shutdown, devices -------------------------------------------

template <class R>
rootspan_status GpuProvider<R>::init(const rootspan_core_services *services, const char *options_json,
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

template <class R>
void GpuProvider<R>::shutdown(rootspan_provider_instance *instance) noexcept {
  Instance *gpu = as_instance(instance);
  if (gpu == nullptr) return;
  for (auto &device : gpu->devices) {
    if (!device->stream_ready) continue;
    if (R::set_device(device->runtime_ordinal) == R::kSuccess) (void)R::stream_destroy(device->stream);
    R::clear_error();
  }
  delete gpu;
}

template <class R>
rootspan_status GpuProvider<R>::device_count(rootspan_provider_instance *instance, std::uint32_t *count,
                                             rootspan_provider_message *message) {
  Instance *gpu = as_instance(instance);
  *count = static_cast<std::uint32_t>(gpu->devices.size());
  if (gpu->devices.empty()) write_message(message, "%s", gpu->no_device_reason.c_str());
  return ROOTSPAN_OK;
}

template <class R>
rootspan_status GpuProvider<R>::device_info(rootspan_provider_instance *instance, std::uint32_t ordinal,
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

}  // namespace rootspan_gpu
