// gpu_bandwidth: host-to-device and device-to-host copy bandwidth through the
// CUDA provider (the embedding API: a device root, an exclusive claim,
// rootspan_copy_from_host / rootspan_copy_to_host) against plain cudaMemcpy in
// the same program, on the same buffers, interleaved rep by rep so that a
// noisy machine disturbs both alike (bench/). Sources are pinned (a
// HOST_PINNED root of the provider, mapped) and pageable (ordinary memory,
// touched before use). Then a checkpoint of the same size, in several
// tensors, is loaded into the device with rootspan_weights_load (its uploads
// go through the loader's ring of pinned staging buffers, file reads
// overlapping asynchronous copies), and its GB/s is set against pinned
// cudaMemcpy (the page cache is warm: a warm-up load is not kept).
//
//   gpu_bandwidth [--plugin PATH | --manifest FILE] [--bytes N] [--reps N] [--device N] [--json]
//
// The plugin is --plugin, else $ROOTSPAN_CUDA_PLUGIN, else where meson built
// it. Exit status: 0 measured, or no CUDA device (it says why); 1 a failure;
// 2 usage.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "rootspan/rootspan.h"
#include "rootspan/weights.h"

#ifndef GPU_TEST_CUDA_PLUGIN
#define GPU_TEST_CUDA_PLUGIN ""
#endif

namespace {

struct Options {
  std::string plugin;
  std::string manifest;
  std::uint64_t bytes = 256ull << 20;
  int reps = 10;
  std::uint32_t device = 0;
  bool json = false;
};

int usage(const char *why) {
  std::fprintf(stderr,
               "gpu_bandwidth: %s\nusage: gpu_bandwidth [--plugin PATH | --manifest FILE] [--bytes N] [--reps N] "
               "[--device N] [--json]\n",
               why);
  return 2;
}

int failed(const std::string &what, rootspan_error *error = nullptr) {
  std::fprintf(stderr, "gpu_bandwidth: %s%s%s\n", what.c_str(), error != nullptr ? ": " : "",
               error != nullptr ? rootspan_error_message(error) : "");
  rootspan_error_free(error);
  return 1;
}

// One measured path: best and median seconds over the reps.
struct Timing {
  std::vector<double> seconds;
  double best() const { return *std::min_element(seconds.begin(), seconds.end()); }
  double median() const {
    std::vector<double> s = seconds;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
};

double gb_per_s(std::uint64_t bytes, double seconds) { return static_cast<double>(bytes) / seconds / 1e9; }

// Times fn once; returns false when it failed.
bool timed(const std::function<bool()> &fn, Timing &timing) {
  const auto start = std::chrono::steady_clock::now();
  if (!fn()) return false;
  timing.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return true;
}

// A temporary manifest naming the plugin, removed on exit.
struct TempManifest {
  std::filesystem::path dir;
  std::filesystem::path file;
  explicit TempManifest(const std::string &plugin) {
    std::string pattern = (std::filesystem::temp_directory_path() / "rootspan-bandwidth-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) return;
    dir = pattern;
    file = dir / "manifest.json";
    std::ofstream(file) << "{\"file_format_version\": \"1.0.0\", \"providers\": [{\"name\": \"cuda\", \"kind\": "
                           "\"cuda\", \"library\": \""
                        << std::filesystem::absolute(plugin).string()
                        << "\", \"abi\": {\"major\": 1, \"minor\": 1}, \"options\": {}}]}\n";
  }
  ~TempManifest() {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

// A safetensors checkpoint of `data` split into `tensors` U8 tensors, in a
// temporary folder removed on exit.
struct TempCheckpoint {
  std::filesystem::path dir;
  bool written = false;
  TempCheckpoint(const std::vector<unsigned char> &data, int tensors) {
    std::string pattern = (std::filesystem::temp_directory_path() / "rootspan-bandwidth-load-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) return;
    dir = pattern;
    std::string header = "{";
    const std::uint64_t each = data.size() / static_cast<std::uint64_t>(tensors);
    for (int t = 0; t < tensors; ++t) {
      const std::uint64_t begin = each * static_cast<std::uint64_t>(t);
      const std::uint64_t end = t + 1 == tensors ? data.size() : begin + each;
      header += std::string(t == 0 ? "" : ",") + "\"t" + std::to_string(t) + "\":{\"dtype\":\"U8\",\"shape\":[" +
                std::to_string(end - begin) + "],\"data_offsets\":[" + std::to_string(begin) + "," +
                std::to_string(end) + "]}";
    }
    header += "}";
    while (header.size() % 8 != 0) header += ' ';
    std::ofstream out(dir / "model.safetensors", std::ios::binary);
    const std::uint64_t length = header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((length >> (8 * i)) & 0xFF));
    out << header;
    out.write(reinterpret_cast<const char *>(data.data()), static_cast<std::streamsize>(data.size()));
    written = static_cast<bool>(out);
  }
  ~TempCheckpoint() {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace

int main(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char * { return i + 1 < argc ? argv[++i] : nullptr; };
    if (arg == "--json") {
      options.json = true;
    } else if (arg == "--plugin" || arg == "--manifest" || arg == "--bytes" || arg == "--reps" || arg == "--device") {
      const char *v = value();
      if (v == nullptr) return usage((arg + " needs a value").c_str());
      if (arg == "--plugin") options.plugin = v;
      if (arg == "--manifest") options.manifest = v;
      if (arg == "--bytes") options.bytes = std::strtoull(v, nullptr, 0);
      if (arg == "--reps") options.reps = std::atoi(v);
      if (arg == "--device") options.device = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 0));
    } else {
      return usage(("unknown argument " + arg).c_str());
    }
  }
  if (options.bytes == 0 || options.reps <= 0) return usage("--bytes and --reps must be positive");
  if (options.plugin.empty()) {
    const char *env = std::getenv("ROOTSPAN_CUDA_PLUGIN");
    options.plugin = env != nullptr && *env != '\0' ? env : GPU_TEST_CUDA_PLUGIN;
  }
  if (options.manifest.empty() && options.plugin.empty()) {
    return usage("no plugin: pass --plugin or --manifest, or set ROOTSPAN_CUDA_PLUGIN");
  }

  // ---- the provider, through a manifest ----------------------------------
  TempManifest temp(options.manifest.empty() ? options.plugin : std::string());
  const std::string manifest = options.manifest.empty() ? temp.file.string() : options.manifest;
  const char *manifests[] = {manifest.c_str()};
  rootspan_context_options context_options{};
  context_options.struct_size = sizeof context_options;
  context_options.manifests = manifests;
  context_options.manifest_count = 1;
  rootspan_context *context = nullptr;
  rootspan_error *error = nullptr;
  if (rootspan_context_create(&context_options, &context, &error) != ROOTSPAN_OK) {
    return failed("cannot create a context from " + manifest, error);
  }
  struct ContextGuard {
    rootspan_context *c;
    ~ContextGuard() { rootspan_context_destroy(c, nullptr); }
  } context_guard{context};

  rootspan_provider_report report{};
  bool found = false;
  std::size_t count = 0;
  rootspan_provider_report_count(context, &count);
  for (std::size_t i = 0; i < count && !found; ++i) {
    report = {};
    report.struct_size = sizeof report;
    found = rootspan_provider_report_get(context, i, &report) == ROOTSPAN_OK && report.name != nullptr &&
            std::strcmp(report.name, "cuda") == 0;
  }
  if (!found) return failed("the manifest " + manifest + " has no provider named cuda");
  if (report.state != ROOTSPAN_PROVIDER_LOADED && report.state != ROOTSPAN_PROVIDER_NO_DEVICE) {
    return failed(std::string("the cuda provider did not load: ") + (report.reason ? report.reason : "?"));
  }
  if (report.device_count == 0) {
    std::printf("no CUDA device: %s\n", report.reason != nullptr ? report.reason : "the provider gave no reason");
    return 0;
  }
  if (options.device >= report.device_count) return usage("--device is past the provider's devices");

  int runtime_devices = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&runtime_devices); e != cudaSuccess || runtime_devices == 0) {
    std::printf("no CUDA device: %s (this program's CUDA runtime)\n", cudaGetErrorString(e));
    return 0;
  }
  if (cudaSetDevice(static_cast<int>(options.device)) != cudaSuccess) return failed("cudaSetDevice failed");
  rootspan_device_info info{};
  info.struct_size = sizeof info;
  rootspan_provider_device_info(context, "cuda", options.device, &info, nullptr);

  // ---- buffers ------------------------------------------------------------
  auto allocate = [&](rootspan_memory_kind kind, rootspan_root **root) {
    rootspan_allocate_options a{};
    a.struct_size = sizeof a;
    a.provider = "cuda";
    a.device = options.device;
    a.memory_kind = kind;
    a.byte_length = options.bytes;
    a.alignment = 4096;
    return rootspan_root_allocate(context, &a, root, &error) == ROOTSPAN_OK;
  };
  rootspan_root *device_root = nullptr;
  rootspan_root *pinned_root = nullptr;
  if (!allocate(ROOTSPAN_MEMORY_DEVICE, &device_root)) return failed("allocating the device root", error);
  if (!allocate(ROOTSPAN_MEMORY_HOST_PINNED, &pinned_root)) return failed("allocating the pinned root", error);
  rootspan_claim *device_claim = nullptr;
  rootspan_claim *pinned_claim = nullptr;
  if (rootspan_claim_acquire(device_root, 0, options.bytes, ROOTSPAN_CLAIM_EXCLUSIVE, &device_claim, &error) !=
          ROOTSPAN_OK ||
      rootspan_claim_acquire(pinned_root, 0, options.bytes, ROOTSPAN_CLAIM_EXCLUSIVE, &pinned_claim, &error) !=
          ROOTSPAN_OK) {
    return failed("claiming the roots", error);
  }
  rootspan_mapping *pinned_mapping = nullptr;
  if (rootspan_map_write(pinned_claim, ROOTSPAN_DTYPE_NONE, 0, options.bytes, &pinned_mapping, &error) != ROOTSPAN_OK) {
    return failed("mapping the pinned root", error);
  }
  auto *pinned = static_cast<unsigned char *>(rootspan_mapping_data(pinned_mapping));
  std::vector<unsigned char> pageable(options.bytes);
  for (std::uint64_t i = 0; i < options.bytes; ++i) pinned[i] = pageable[i] = static_cast<unsigned char>(i * 131 + 7);

  // The device root's address, for plain cudaMemcpy.
  rootspan_root_info root_info{};
  root_info.struct_size = sizeof root_info;
  rootspan_root_get_info(device_root, &root_info);
  const std::uint64_t shape[] = {options.bytes};
  const std::int64_t strides[] = {1};
  rootspan_device_access_request request{};
  request.struct_size = sizeof request;
  request.key = root_info.key;
  request.byte_length = options.bytes;
  request.element_size = 1;
  request.rank = 1;
  request.shape = shape;
  request.strides = strides;
  rootspan_device_access access{};
  access.struct_size = sizeof access;
  if (rootspan_device_access_prepare(device_claim, &request, &access, &error) != ROOTSPAN_OK) {
    return failed("preparing device access", error);
  }
  void *device = access.device_ptr;

  // ---- correctness first: a round trip through the provider ----------------
  {
    if (rootspan_copy_from_host(device_claim, 0, pageable.data(), options.bytes, &error) != ROOTSPAN_OK) {
      return failed("copy_from_host", error);
    }
    std::vector<unsigned char> back(options.bytes);
    if (rootspan_copy_to_host(device_claim, 0, back.data(), options.bytes, &error) != ROOTSPAN_OK) {
      return failed("copy_to_host", error);
    }
    if (back != pageable) return failed("the bytes read back differ from the bytes written");
  }

  // ---- measurements ----------------------------------------------------------
  struct Path {
    const char *name;
    bool to_device;
    unsigned char *host;
    Timing plain;
    Timing provider;
  };
  Path paths[] = {
      {"host->device pinned", true, pinned, {}, {}},
      {"host->device pageable", true, pageable.data(), {}, {}},
      {"device->host pinned", false, pinned, {}, {}},
      {"device->host pageable", false, pageable.data(), {}, {}},
  };
  for (int rep = -1; rep < options.reps; ++rep) {  // rep -1 warms up and is not kept
    for (Path &p : paths) {
      Timing scratch;
      Timing &plain = rep < 0 ? scratch : p.plain;
      Timing &provider = rep < 0 ? scratch : p.provider;
      const bool plain_ok = timed(
          [&] {
            return (p.to_device ? cudaMemcpy(device, p.host, options.bytes, cudaMemcpyHostToDevice)
                                : cudaMemcpy(p.host, device, options.bytes, cudaMemcpyDeviceToHost)) == cudaSuccess;
          },
          plain);
      if (!plain_ok) return failed(std::string("cudaMemcpy ") + p.name + ": " + cudaGetErrorString(cudaGetLastError()));
      const bool provider_ok = timed(
          [&] {
            return (p.to_device ? rootspan_copy_from_host(device_claim, 0, p.host, options.bytes, &error)
                                : rootspan_copy_to_host(device_claim, 0, p.host, options.bytes, &error)) == ROOTSPAN_OK;
          },
          provider);
      if (!provider_ok) return failed(std::string("provider copy ") + p.name, error);
    }
  }

  // ---- a checkpoint load into the device, against pinned cudaMemcpy -------
  constexpr int kLoadTensors = 8;
  TempCheckpoint checkpoint(pageable, kLoadTensors);
  if (!checkpoint.written) return failed("cannot write the checkpoint to load");
  Timing load;
  for (int rep = -1; rep < options.reps; ++rep) {
    rootspan_load_options o{};
    o.struct_size = ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE;
    o.provider = "cuda";
    o.device = options.device;
    o.strategy = ROOTSPAN_LOAD_READ;
    rootspan_weights *weights = nullptr;
    Timing scratch;
    const bool loaded = timed(
        [&] { return rootspan_weights_load(context, checkpoint.dir.c_str(), &o, &weights, &error) == ROOTSPAN_OK; },
        rep < 0 ? scratch : load);
    if (!loaded) return failed("loading the checkpoint into device " + std::to_string(options.device), error);
    if (rep < 0) {  // the warm-up load's first tensor, read back, is the file's
      rootspan_component_info c{};
      c.struct_size = sizeof c;
      rootspan_claim *claim = nullptr;
      std::vector<unsigned char> back;
      bool same = rootspan_weights_component(weights, 0, &c) == ROOTSPAN_OK;
      if (same) {
        back.resize(c.byte_length);
        same = rootspan_claim_acquire(c.root, 0, c.byte_length, ROOTSPAN_CLAIM_SHARED, &claim, &error) == ROOTSPAN_OK;
      }
      if (same) {
        same = rootspan_copy_to_host(claim, 0, back.data(), back.size(), &error) == ROOTSPAN_OK &&
               std::equal(back.begin(), back.end(), pageable.begin());
        rootspan_claim_release(claim, nullptr);
      }
      if (!same) {
        rootspan_weights_free(weights, nullptr);
        return failed("the loaded checkpoint's first tensor differs from the file's", error);
      }
    }
    if (rootspan_weights_free(weights, &error) != ROOTSPAN_OK) return failed("freeing the loaded checkpoint", error);
  }

  rootspan_device_access_release(device_claim, &access);
  rootspan_unmap(pinned_mapping);
  rootspan_claim_release(device_claim, nullptr);
  rootspan_claim_release(pinned_claim, nullptr);
  rootspan_root_release(device_root, nullptr);
  rootspan_root_release(pinned_root, nullptr);

  // ---- report ----------------------------------------------------------------
  const double mib = static_cast<double>(options.bytes) / (1 << 20);
  if (options.json) {
    std::printf(
        "{\"device\": {\"ordinal\": %u, \"name\": \"%s\", \"pci_bus_id\": \"%s\"}, \"bytes\": %llu, "
        "\"reps\": %d, \"paths\": [",
        options.device, info.name, info.pci_bus_id, static_cast<unsigned long long>(options.bytes), options.reps);
    for (std::size_t i = 0; i < std::size(paths); ++i) {
      const Path &p = paths[i];
      std::printf(
          "%s{\"path\": \"%s\", \"plain_gb_per_s\": %.3f, \"provider_gb_per_s\": %.3f, "
          "\"plain_median_gb_per_s\": %.3f, \"provider_median_gb_per_s\": %.3f, \"ratio\": %.4f}",
          i == 0 ? "" : ", ", p.name, gb_per_s(options.bytes, p.plain.best()),
          gb_per_s(options.bytes, p.provider.best()), gb_per_s(options.bytes, p.plain.median()),
          gb_per_s(options.bytes, p.provider.median()), p.plain.best() / p.provider.best());
    }
    std::printf(
        "], \"load\": {\"tensors\": %d, \"gb_per_s\": %.3f, \"median_gb_per_s\": %.3f, "
        "\"ratio_to_pinned_cudamemcpy\": %.4f}}\n",
        kLoadTensors, gb_per_s(options.bytes, load.best()), gb_per_s(options.bytes, load.median()),
        paths[0].plain.best() / load.best());
    return 0;
  }
  std::printf("device %u: %s (PCI %s), %.0f MiB per copy, best and median of %d\n", options.device, info.name,
              info.pci_bus_id, mib, options.reps);
  std::printf("%-24s %14s %14s %14s %14s %9s\n", "path", "cudaMemcpy", "(median)", "provider", "(median)", "ratio");
  for (const Path &p : paths) {
    std::printf("%-24s %9.2f GB/s %9.2f GB/s %9.2f GB/s %9.2f GB/s %9.3f\n", p.name,
                gb_per_s(options.bytes, p.plain.best()), gb_per_s(options.bytes, p.plain.median()),
                gb_per_s(options.bytes, p.provider.best()), gb_per_s(options.bytes, p.provider.median()),
                p.plain.best() / p.provider.best());
  }
  std::printf("ratio = provider bandwidth / cudaMemcpy bandwidth (best of each)\n");
  std::printf(
      "pinned / pageable: host->device %.2fx (provider) %.2fx (cudaMemcpy); device->host %.2fx (provider) "
      "%.2fx (cudaMemcpy)\n",
      paths[1].provider.best() / paths[0].provider.best(), paths[1].plain.best() / paths[0].plain.best(),
      paths[3].provider.best() / paths[2].provider.best(), paths[3].plain.best() / paths[2].plain.best());
  std::printf(
      "load of a %d-tensor checkpoint (read strategy, warm page cache): %.2f GB/s (median %.2f GB/s), %.3f of pinned "
      "cudaMemcpy host->device\n",
      kLoadTensors, gb_per_s(options.bytes, load.best()), gb_per_s(options.bytes, load.median()),
      paths[0].plain.best() / load.best());
  return 0;
}
