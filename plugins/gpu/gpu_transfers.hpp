// Part of gpu_provider.hpp: transfers. The per-device stream and waiting for
// it, device access, copies (synchronous, or asynchronous with an event) and
// event_wait.
#pragma once

#include <cstdint>
#include <mutex>
#include <new>
#include <string>

#include "plugins/gpu/gpu_types.hpp"
#include "rootspan/provider.h"

namespace rootspan_gpu {

// ---- the device's stream ----------------------------------------------------

// Selects the device and returns its stream, made on first use.
template <class R>
rootspan_status GpuProvider<R>::stream_of(Device &device, stream_t *stream, rootspan_provider_message *message) {
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
template <class R>
rootspan_status GpuProvider<R>::wait_for_device(Instance *gpu, Block *block, rootspan_provider_message *message) {
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

// ---- device access ------------------------------------------------------------

template <class R>
rootspan_status GpuProvider<R>::prepare_device_access(
    rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation, std::uint64_t byte_offset,
    const rootspan_device_access_request *request, rootspan_device_access *access, rootspan_provider_message *message) {
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

template <class R>
void GpuProvider<R>::release_device_access(rootspan_provider_instance *, const rootspan_provider_allocation *,
                                           const rootspan_device_access *) noexcept {}

// ---- copies ---------------------------------------------------------------------

template <class R>
rootspan_status GpuProvider<R>::copy(rootspan_provider_instance *instance,
                                     const rootspan_provider_allocation *allocation, std::uint64_t offset, void *host,
                                     std::uint64_t length, bool to_device, rootspan_provider_event **event,
                                     rootspan_provider_message *message) {
  return guarded(message, [&]() -> rootspan_status {
    Instance *gpu = as_instance(instance);
    Block *block = as_block(allocation);
    const char *direction = to_device ? "copy_from_host" : "copy_to_host";
    if (event != nullptr) *event = nullptr;
    std::uint64_t end = 0;
    if (__builtin_add_overflow(offset, length, &end) || end > block->length) {
      return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "%s: range [%llu,+%llu) leaves the allocation of %llu bytes",
                  direction, static_cast<unsigned long long>(offset), static_cast<unsigned long long>(length),
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

template <class R>
rootspan_status GpuProvider<R>::copy_from_host(rootspan_provider_instance *instance,
                                               const rootspan_provider_allocation *allocation, std::uint64_t offset,
                                               const void *source, std::uint64_t length,
                                               rootspan_provider_event **event, rootspan_provider_message *message) {
  return copy(instance, allocation, offset, const_cast<void *>(source), length, true, event, message);
}

template <class R>
rootspan_status GpuProvider<R>::copy_to_host(rootspan_provider_instance *instance,
                                             const rootspan_provider_allocation *allocation, std::uint64_t offset,
                                             void *destination, std::uint64_t length, rootspan_provider_event **event,
                                             rootspan_provider_message *message) {
  return copy(instance, allocation, offset, destination, length, false, event, message);
}

template <class R>
rootspan_status GpuProvider<R>::event_wait(rootspan_provider_instance *, rootspan_provider_event *event,
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

}  // namespace rootspan_gpu
