// The ROCm provider (docs/writing-a-provider.md): plugins/gpu/gpu_provider.hpp over HIP
// (libamdhip64). HIP mirrors the CUDA runtime call for call; what differs is
// named here. Without an AMD GPU (no /dev/kfd) the plugin still loads and
// reports zero devices with HIP's own reason (hipErrorNoDevice).
#include <hip/hip_runtime_api.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "plugins/gpu/gpu_provider.hpp"

namespace {

struct HipRuntime {
  using error_t = hipError_t;
  using stream_t = hipStream_t;
  using event_t = hipEvent_t;

  static constexpr const char *kName = "rocm";
  static constexpr const char *kRuntime = "HIP";
  // HIP has no read-only registration: read-only memory cannot be registered.
  static constexpr bool kHasReadOnlyRegister = false;
  static constexpr error_t kSuccess = hipSuccess;

  static constexpr const char *kDeviceCount = "hipGetDeviceCount";
  static constexpr const char *kSetDevice = "hipSetDevice";
  static constexpr const char *kDeviceProperties = "hipGetDeviceProperties";
  static constexpr const char *kMemoryInfo = "hipMemGetInfo";
  static constexpr const char *kMallocDevice = "hipMalloc";
  static constexpr const char *kMallocPinned = "hipHostMalloc";
  static constexpr const char *kHostDevicePointer = "hipHostGetDevicePointer";
  static constexpr const char *kHostRegister = "hipHostRegister";
  static constexpr const char *kStreamCreate = "hipStreamCreateWithFlags";
  static constexpr const char *kStreamSynchronize = "hipStreamSynchronize";
  static constexpr const char *kMemcpyAsync = "hipMemcpyAsync";
  static constexpr const char *kEventRecord = "hipEventRecord";
  static constexpr const char *kEventSynchronize = "hipEventSynchronize";

  static const char *error_name(error_t e) { return hipGetErrorName(e); }
  static const char *error_string(error_t e) { return hipGetErrorString(e); }
  static bool is_out_of_memory(error_t e) { return e == hipErrorOutOfMemory; }
  static void clear_error() { (void)hipGetLastError(); }

  // "HIP runtime 50221153, no /dev/kfd (amdgpu kernel driver)". HIP versions
  // are opaque numbers; what a machine without a device lacks is the kernel
  // driver's /dev/kfd.
  static std::string versions() {
    int runtime = 0;
    const bool have_runtime = hipRuntimeGetVersion(&runtime) == hipSuccess;
    clear_error();
    return std::string("HIP runtime ") + (have_runtime ? std::to_string(runtime) : "unknown") +
           (::access("/dev/kfd", R_OK | W_OK) == 0 ? ", /dev/kfd present" : ", no /dev/kfd (amdgpu kernel driver)");
  }

  static error_t device_count(int *count) { return hipGetDeviceCount(count); }
  static error_t set_device(int device) { return hipSetDevice(device); }
  static error_t device_name(int device, char *name, std::size_t capacity, std::uint64_t *total) {
    hipDeviceProp_t props{};
    const error_t e = hipGetDeviceProperties(&props, device);
    if (e != hipSuccess) return e;
    rootspan_gpu::copy_text(name, capacity, props.name);
    *total = props.totalGlobalMem;
    return hipSuccess;
  }
  static error_t pci_bus_id(char *id, std::size_t capacity, int device) {
    return hipDeviceGetPCIBusId(id, static_cast<int>(capacity), device);
  }
  static error_t memory_info(std::size_t *free_bytes, std::size_t *total_bytes) {
    return hipMemGetInfo(free_bytes, total_bytes);
  }

  static error_t malloc_device(void **p, std::size_t bytes) { return hipMalloc(p, bytes); }
  static error_t free_device(void *p) { return hipFree(p); }
  static error_t malloc_pinned(void **p, std::size_t bytes) {
    return hipHostMalloc(p, bytes, hipHostMallocMapped | hipHostMallocPortable);
  }
  static error_t free_pinned(void *p) { return hipHostFree(p); }
  static error_t host_register(void *p, std::size_t bytes, bool) {
    return hipHostRegister(p, bytes, hipHostRegisterMapped | hipHostRegisterPortable);
  }
  static error_t host_unregister(void *p) { return hipHostUnregister(p); }
  static error_t host_device_pointer(void **device, void *host) { return hipHostGetDevicePointer(device, host, 0); }

  static error_t stream_create(stream_t *s) { return hipStreamCreateWithFlags(s, hipStreamNonBlocking); }
  static error_t stream_destroy(stream_t s) { return hipStreamDestroy(s); }
  static error_t stream_synchronize(stream_t s) { return hipStreamSynchronize(s); }
  static error_t memcpy_async(void *destination, const void *source, std::size_t bytes, stream_t s) {
    return hipMemcpyAsync(destination, source, bytes, hipMemcpyDefault, s);
  }

  static error_t event_create(event_t *e) { return hipEventCreateWithFlags(e, hipEventDisableTiming); }
  static error_t event_record(event_t e, stream_t s) { return hipEventRecord(e, s); }
  static error_t event_synchronize(event_t e) { return hipEventSynchronize(e); }
  static error_t event_destroy(event_t e) { return hipEventDestroy(e); }
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const rootspan_provider_table *rootspan_provider_entry(
    std::uint32_t, std::uint32_t) {
  // The core checks the versions (policy L6) and names both when they differ.
  return &rootspan_gpu::GpuProvider<HipRuntime>::table;
}
