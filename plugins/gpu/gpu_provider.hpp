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
//
// The template is one class over R, in parts by concern (this header includes
// them all; include this one):
// - gpu_types.hpp: the class, its types (Device, Block, Event, Instance) and
//   the provider table;
// - gpu_options.hpp: the manifest's options;
// - gpu_devices.hpp: runtime errors, device choice, init, shutdown,
//   device_count, device_info;
// - gpu_memory.hpp: allocate, import_host_memory, release, map, unmap;
// - gpu_transfers.hpp: the device's stream, device access, copies, events.
// The helpers every provider shares (messages, guarded hooks, versioned
// structs, text) are plugins/kit/provider_kit.hpp.
#pragma once

#include "plugins/gpu/gpu_devices.hpp"
#include "plugins/gpu/gpu_memory.hpp"
#include "plugins/gpu/gpu_options.hpp"
#include "plugins/gpu/gpu_transfers.hpp"
#include "plugins/gpu/gpu_types.hpp"
