// The CUDA provider (docs/writing-a-provider.md): gpu_provider.hpp over the CUDA runtime API.
// Linked with the static CUDA runtime (libcudart_static.a), so the plugin
// loads on machines without the NVIDIA driver and reports zero devices with
// the runtime's own reason (cudaErrorInsufficientDriver, cudaErrorNoDevice).
#include <cuda_runtime_api.h>

#include <cstring>
#include <string>

#include "plugins/gpu/gpu_provider.hpp"

namespace {

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

struct CudaRuntime {
  using error_t = cudaError_t;
  using stream_t = cudaStream_t;
  using event_t = cudaEvent_t;

  static constexpr const char *kName = "cuda";
  static constexpr const char *kRuntime = "CUDA";
  static constexpr bool kHasReadOnlyRegister = true;
  static constexpr error_t kSuccess = cudaSuccess;

  static constexpr const char *kDeviceCount = "cudaGetDeviceCount";
  static constexpr const char *kSetDevice = "cudaSetDevice";
  static constexpr const char *kDeviceProperties = "cudaGetDeviceProperties";
  static constexpr const char *kMemoryInfo = "cudaMemGetInfo";
  static constexpr const char *kMallocDevice = "cudaMalloc";
  static constexpr const char *kMallocPinned = "cudaHostAlloc";
  static constexpr const char *kHostDevicePointer = "cudaHostGetDevicePointer";
  static constexpr const char *kHostRegister = "cudaHostRegister";
  static constexpr const char *kStreamCreate = "cudaStreamCreateWithFlags";
  static constexpr const char *kStreamSynchronize = "cudaStreamSynchronize";
  static constexpr const char *kMemcpyAsync = "cudaMemcpyAsync";
  static constexpr const char *kEventRecord = "cudaEventRecord";
  static constexpr const char *kEventSynchronize = "cudaEventSynchronize";

  static const char *error_name(error_t e) { return cudaGetErrorName(e); }
  static const char *error_string(error_t e) { return cudaGetErrorString(e); }
  static bool is_out_of_memory(error_t e) { return e == cudaErrorMemoryAllocation; }
  static void clear_error() { (void)cudaGetLastError(); }

  // "CUDA runtime 13.0, driver 12.4" or "CUDA runtime 13.0, no driver".
  static std::string versions() {
    int runtime = 0;
    int driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    clear_error();
    return "CUDA runtime " + version_text(runtime) + ", " +
           (driver == 0 ? "no driver" : "driver " + version_text(driver));
  }

  static error_t device_count(int *count) { return cudaGetDeviceCount(count); }
  static error_t set_device(int device) { return cudaSetDevice(device); }
  static error_t device_name(int device, char *name, std::size_t capacity, std::uint64_t *total) {
    cudaDeviceProp props{};
    const error_t e = cudaGetDeviceProperties(&props, device);
    if (e != cudaSuccess) return e;
    rootspan_gpu::copy_text(name, capacity, props.name);
    *total = props.totalGlobalMem;
    return cudaSuccess;
  }
  static error_t pci_bus_id(char *id, std::size_t capacity, int device) {
    return cudaDeviceGetPCIBusId(id, static_cast<int>(capacity), device);
  }
  static error_t memory_info(std::size_t *free_bytes, std::size_t *total_bytes) {
    return cudaMemGetInfo(free_bytes, total_bytes);
  }

  static error_t malloc_device(void **p, std::size_t bytes) { return cudaMalloc(p, bytes); }
  static error_t free_device(void *p) { return cudaFree(p); }
  static error_t malloc_pinned(void **p, std::size_t bytes) {
    return cudaHostAlloc(p, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
  }
  static error_t free_pinned(void *p) { return cudaFreeHost(p); }
  static error_t host_register(void *p, std::size_t bytes, bool read_only) {
    return cudaHostRegister(
        p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable | (read_only ? cudaHostRegisterReadOnly : 0));
  }
  static error_t host_unregister(void *p) { return cudaHostUnregister(p); }
  static error_t host_device_pointer(void **device, void *host) { return cudaHostGetDevicePointer(device, host, 0); }

  static error_t stream_create(stream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking); }
  static error_t stream_destroy(stream_t s) { return cudaStreamDestroy(s); }
  static error_t stream_synchronize(stream_t s) { return cudaStreamSynchronize(s); }
  static error_t memcpy_async(void *destination, const void *source, std::size_t bytes, stream_t s) {
    return cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDefault, s);
  }

  static error_t event_create(event_t *e) { return cudaEventCreateWithFlags(e, cudaEventDisableTiming); }
  static error_t event_record(event_t e, stream_t s) { return cudaEventRecord(e, s); }
  static error_t event_synchronize(event_t e) { return cudaEventSynchronize(e); }
  static error_t event_destroy(event_t e) { return cudaEventDestroy(e); }
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const rootspan_provider_table *rootspan_provider_entry(
    std::uint32_t, std::uint32_t) {
  // The core checks the versions (policy L6) and names both when they differ.
  return &rootspan_gpu::GpuProvider<CudaRuntime>::table;
}
