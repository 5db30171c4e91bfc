// Part of gpu_provider.hpp: memory. Device and pinned allocations, imports of
// host memory (registration with the runtime), release, and host mappings.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <string>

#include "plugins/gpu/gpu_types.hpp"
#include "rootspan/provider.h"

namespace rootspan_gpu {

// The largest power of two that divides v: the alignment an address really
// meets (2^63 for address 0).
inline std::uint64_t lowest_bit(std::uintptr_t v) { return v == 0 ? std::uint64_t{1} << 63 : v & (~v + 1); }

// ---- allocations ----------------------------------------------------------

template <class R>
void GpuProvider<R>::describe_allocation(Instance *gpu, Block *block, std::uint64_t alignment,
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

template <class R>
void GpuProvider<R>::free_raw(Kind kind, void *raw) {
  if (kind == Kind::device) {
    (void)R::free_device(raw);
  } else {
    (void)R::free_pinned(raw);
  }
  R::clear_error();
}

template <class R>
rootspan_status GpuProvider<R>::allocate(rootspan_provider_instance *instance,
                                         const rootspan_allocation_request *request,
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
      return fail(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "%s: length %llu plus alignment %llu overflows", action.c_str(),
                  static_cast<unsigned long long>(want.byte_length), static_cast<unsigned long long>(want.alignment));
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

template <class R>
rootspan_status GpuProvider<R>::import_host_memory(rootspan_provider_instance *instance,
                                                   const rootspan_host_memory *memory,
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

template <class R>
void GpuProvider<R>::release(rootspan_provider_instance *instance,
                             const rootspan_provider_allocation *allocation) noexcept {
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

template <class R>
rootspan_status GpuProvider<R>::map(rootspan_provider_instance *instance,
                                    const rootspan_provider_allocation *allocation, std::uint64_t offset,
                                    std::uint64_t length, rootspan_provider_mapping *mapping,
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

template <class R>
void GpuProvider<R>::unmap(rootspan_provider_instance *, const rootspan_provider_allocation *,
                           const rootspan_provider_mapping *) noexcept {}

}  // namespace rootspan_gpu
