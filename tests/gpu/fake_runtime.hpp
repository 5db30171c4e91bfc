// A fake GPU runtime for plugins/gpu/gpu_provider.hpp, so that the device
// provider's own logic (devices and options, keys and domains, alignment
// padding, pinned and registered memory, device access, copies, events, and
// waiting before release) is tested on machines without a GPU.
//
// "Device memory" is host memory mapped PROT_NONE: only the fake's own copies
// (memcpy_async, when the stream runs) open it for the moment they copy, so a
// provider (or anything above it) that touches a device pointer on the host
// crashes instead of passing. The fake is deliberately unhelpful where a
// careless provider would slip:
// - device pointers are 256-byte aligned and never 512-byte aligned, pinned
//   ones page aligned and never two-page aligned, so larger alignments need
//   padding;
// - asynchronous copies are deferred until the stream or an event is
//   synchronized (so a source overwritten before its copy was waited for
//   lands wrong on the device), the copies in flight are counted (and their
//   most at once), and freeing memory or destroying a stream while copies are
//   pending is counted as a violation;
// - memory marked read-only registers only with the read-only flag.
// One global state, reset by reset(); the tests using it run on one thread.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace rootspan::testing::fake_gpu {

enum Error : int {
  kSuccess = 0,
  kInvalidValue = 1,
  kMemoryAllocation = 2,
  kRegisterFailed = 3,
  kNoDevice = 100,
};

// Operations run in issue order; an event waits only for those issued before
// it was recorded, as a real event does, so later copies stay in flight.
struct Stream {
  int device = 0;
  std::deque<std::function<void()>> pending;
  std::uint64_t issued = 0;  // operations ever enqueued
  std::uint64_t done = 0;    // operations ever run
  void run_until(std::uint64_t target) {
    while (done < target && !pending.empty()) {
      std::function<void()> op = std::move(pending.front());
      pending.pop_front();
      op();
      ++done;
    }
  }
  void run() { run_until(issued); }
};

struct Event {
  Stream *stream = nullptr;
  std::uint64_t target = 0;  // the stream's operations to run before the event completes
};

struct Allocation {
  void *real = nullptr;    // what aligned_alloc (pinned) or mmap (device) returned
  std::size_t mapped = 0;  // device memory: the length of the mapping at real
  std::size_t bytes = 0;
  bool pinned = false;
  int device = 0;
};

struct State {
  int devices = 2;
  std::map<void *, Allocation> allocations;                     // by the pointer handed out
  std::map<void *, std::size_t> registered;                     // host pointer -> bytes
  std::vector<std::pair<const char *, std::size_t>> read_only;  // ranges the process cannot write
  std::vector<Stream *> streams;
  int streams_created = 0;
  int streams_destroyed = 0;
  int events_live = 0;
  int copies_in_flight = 0;      // issued by memcpy_async, not yet run
  int max_copies_in_flight = 0;  // the most at once since reset()
  int copies_issued = 0;
  std::uint64_t bytes_in_flight = 0;      // the bytes those copies move
  std::uint64_t max_bytes_in_flight = 0;  // the most at once since reset()
  int pinned_allocations = 0;
  int event_synchronize_calls = 0;
  int fail_event_synchronize_at = 0;  // that call (from 1) reports kInvalidValue after waiting; 0: never             //
                                      // successful malloc_pinned calls since reset()
  int pending_at_free = 0;            // memory freed while a copy was pending: a violation
  int pending_at_destroy = 0;         // a stream destroyed with pending copies: a violation
  int invalid_frees = 0;
  Error fail_next_malloc = kSuccess;
  bool fail_register = false;
  int last_malloc_device = -1;
};

inline State &state() {
  static State s;
  return s;
}
inline thread_local int current_device = 0;

inline bool any_pending() {
  for (Stream *s : state().streams) {
    if (!s->pending.empty()) return true;
  }
  return false;
}

// Frees what a test leaked and starts over with `devices` devices.
inline void free_allocation(const Allocation &a) {
  if (a.pinned) {
    std::free(a.real);
  } else {
    ::munmap(a.real, a.mapped);
  }
}

inline void reset(int devices = 2) {
  for (auto &[p, a] : state().allocations) free_allocation(a);
  for (Stream *s : state().streams) delete s;
  state() = State{};
  state().devices = devices;
  current_device = 0;
}

// Memory from `base` aligned to `grain` but not to 2 * grain.
inline void *oddly_aligned(std::size_t bytes, std::size_t grain, void **real) {
  const std::size_t total = (bytes + grain + 2 * grain - 1) / (2 * grain) * (2 * grain);
  *real = std::aligned_alloc(2 * grain, total);
  return *real == nullptr ? nullptr : static_cast<char *>(*real) + grain;
}

// Device memory: a PROT_NONE mapping; the pointer handed out is `grain`
// bytes into it (page aligned + 256: 256-aligned, never 512-aligned).
inline void *device_mapping(std::size_t bytes, std::size_t grain, Allocation *a) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  a->mapped = (bytes + grain + page - 1) / page * page;
  void *base = ::mmap(nullptr, a->mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return nullptr;
  a->real = base;
  return static_cast<char *>(base) + grain;
}

// The device allocation that holds [p, p + bytes), or nullptr (host memory).
inline const Allocation *device_allocation_of(const void *p, std::size_t bytes) {
  const char *c = static_cast<const char *>(p);
  for (const auto &[handed_out, a] : state().allocations) {
    const char *start = static_cast<const char *>(handed_out);
    if (!a.pinned && c >= start && c + bytes <= start + a.bytes) return &a;
  }
  return nullptr;
}

// A copy as the device's copy engine does it: device memory is opened for
// the copy and closed again right after.
inline void engine_copy(void *destination, const void *source, std::size_t bytes) {
  const Allocation *to = device_allocation_of(destination, bytes);
  const Allocation *from = device_allocation_of(source, bytes);
  for (const Allocation *a : {to, from}) {
    if (a != nullptr) ::mprotect(a->real, a->mapped, PROT_READ | PROT_WRITE);
  }
  std::memcpy(destination, source, bytes);
  for (const Allocation *a : {to, from}) {
    if (a != nullptr) ::mprotect(a->real, a->mapped, PROT_NONE);
  }
}

struct Runtime {
  using error_t = int;
  using stream_t = Stream *;
  using event_t = Event *;

  static constexpr const char *kName = "fake";
  static constexpr const char *kRuntime = "FAKE";
  static constexpr bool kHasReadOnlyRegister = true;
  static constexpr error_t kSuccess = fake_gpu::kSuccess;

  static constexpr const char *kDeviceCount = "fakeGetDeviceCount";
  static constexpr const char *kSetDevice = "fakeSetDevice";
  static constexpr const char *kDeviceProperties = "fakeGetDeviceProperties";
  static constexpr const char *kMemoryInfo = "fakeMemGetInfo";
  static constexpr const char *kMallocDevice = "fakeMalloc";
  static constexpr const char *kMallocPinned = "fakeHostAlloc";
  static constexpr const char *kHostDevicePointer = "fakeHostGetDevicePointer";
  static constexpr const char *kHostRegister = "fakeHostRegister";
  static constexpr const char *kStreamCreate = "fakeStreamCreate";
  static constexpr const char *kStreamSynchronize = "fakeStreamSynchronize";
  static constexpr const char *kMemcpyAsync = "fakeMemcpyAsync";
  static constexpr const char *kEventRecord = "fakeEventRecord";
  static constexpr const char *kEventSynchronize = "fakeEventSynchronize";

  static const char *error_name(error_t e) {
    switch (e) {
      case fake_gpu::kSuccess:
        return "fakeSuccess";
      case kInvalidValue:
        return "fakeErrorInvalidValue";
      case kMemoryAllocation:
        return "fakeErrorMemoryAllocation";
      case kRegisterFailed:
        return "fakeErrorHostRegister";
      case kNoDevice:
        return "fakeErrorNoDevice";
      default:
        return "fakeErrorUnknown";
    }
  }
  static const char *error_string(error_t e) {
    switch (e) {
      case kNoDevice:
        return "no fake device is installed";
      case kMemoryAllocation:
        return "out of memory";
      default:
        return error_name(e);
    }
  }
  static bool is_out_of_memory(error_t e) { return e == kMemoryAllocation; }
  static void clear_error() {}
  static std::string versions() { return "fake runtime 1.0"; }

  static error_t device_count(int *count) {
    *count = state().devices;
    return state().devices == 0 ? kNoDevice : fake_gpu::kSuccess;
  }
  static error_t set_device(int device) {
    if (device < 0 || device >= state().devices) return kInvalidValue;
    current_device = device;
    return fake_gpu::kSuccess;
  }
  static error_t device_name(int device, char *name, std::size_t capacity, std::uint64_t *total) {
    std::snprintf(name, capacity, "Fake GPU %d", device);
    *total = std::uint64_t{1} << 30;
    return fake_gpu::kSuccess;
  }
  static error_t pci_bus_id(char *id, std::size_t capacity, int device) {
    std::snprintf(id, capacity, "0000:%02x:00.0", device + 1);
    return fake_gpu::kSuccess;
  }
  static error_t memory_info(std::size_t *free_bytes, std::size_t *total_bytes) {
    *free_bytes = std::size_t{1} << 29;
    *total_bytes = std::size_t{1} << 30;
    return fake_gpu::kSuccess;
  }

  static error_t allocate(void **p, std::size_t bytes, bool pinned) {
    if (state().fail_next_malloc != fake_gpu::kSuccess) {
      const Error e = state().fail_next_malloc;
      state().fail_next_malloc = fake_gpu::kSuccess;
      return e;
    }
    Allocation a;
    *p = pinned ? oddly_aligned(bytes, 4096, &a.real) : device_mapping(bytes, 256, &a);
    if (*p == nullptr) return kMemoryAllocation;
    a.bytes = bytes;
    a.pinned = pinned;
    if (pinned) ++state().pinned_allocations;
    a.device = current_device;
    state().last_malloc_device = current_device;
    state().allocations[*p] = a;
    return fake_gpu::kSuccess;
  }
  static error_t release(void *p, bool pinned) {
    auto found = state().allocations.find(p);
    if (found == state().allocations.end() || found->second.pinned != pinned) {
      ++state().invalid_frees;
      return kInvalidValue;
    }
    if (any_pending()) ++state().pending_at_free;
    free_allocation(found->second);
    state().allocations.erase(found);
    return fake_gpu::kSuccess;
  }
  static error_t malloc_device(void **p, std::size_t bytes) { return allocate(p, bytes, false); }
  static error_t free_device(void *p) { return release(p, false); }
  static error_t malloc_pinned(void **p, std::size_t bytes) { return allocate(p, bytes, true); }
  static error_t free_pinned(void *p) { return release(p, true); }

  static bool is_read_only(const void *p) {
    for (const auto &[base, bytes] : state().read_only) {
      if (p >= base && static_cast<const char *>(p) < base + bytes) return true;
    }
    return false;
  }
  static error_t host_register(void *p, std::size_t bytes, bool read_only) {
    if (state().fail_register) return kRegisterFailed;
    if (!read_only && is_read_only(p)) return kInvalidValue;
    if (state().registered.count(p) != 0) return kInvalidValue;
    state().registered[p] = bytes;
    return fake_gpu::kSuccess;
  }
  static error_t host_unregister(void *p) {
    if (any_pending()) ++state().pending_at_free;
    return state().registered.erase(p) == 1 ? fake_gpu::kSuccess : kInvalidValue;
  }
  static error_t host_device_pointer(void **device, void *host) {
    const bool known = state().registered.count(host) != 0 ||
                       (state().allocations.count(host) != 0 && state().allocations[host].pinned);
    if (!known) return kInvalidValue;
    *device = host;  // unified addressing
    return fake_gpu::kSuccess;
  }

  static error_t stream_create(stream_t *s) {
    *s = new Stream{current_device, {}};
    state().streams.push_back(*s);
    ++state().streams_created;
    return fake_gpu::kSuccess;
  }
  static error_t stream_destroy(stream_t s) {
    if (!s->pending.empty()) ++state().pending_at_destroy;
    std::erase(state().streams, s);
    delete s;
    ++state().streams_destroyed;
    return fake_gpu::kSuccess;
  }
  static error_t stream_synchronize(stream_t s) {
    s->run();
    return fake_gpu::kSuccess;
  }
  static error_t memcpy_async(void *destination, const void *source, std::size_t bytes, stream_t s) {
    s->pending.push_back([=] {
      engine_copy(destination, source, bytes);
      --state().copies_in_flight;
      state().bytes_in_flight -= bytes;
    });
    ++s->issued;
    ++state().copies_issued;
    state().max_copies_in_flight = std::max(state().max_copies_in_flight, ++state().copies_in_flight);
    state().bytes_in_flight += bytes;
    state().max_bytes_in_flight = std::max(state().max_bytes_in_flight, state().bytes_in_flight);
    return fake_gpu::kSuccess;
  }

  static error_t event_create(event_t *e) {
    *e = new Event{};
    ++state().events_live;
    return fake_gpu::kSuccess;
  }
  static error_t event_record(event_t e, stream_t s) {
    e->stream = s;
    e->target = s->issued;
    return fake_gpu::kSuccess;
  }
  static error_t event_synchronize(event_t e) {
    // The stream may be gone (its provider shut down): nothing is pending then.
    for (Stream *s : state().streams) {
      if (s == e->stream) s->run_until(e->target);
    }
    if (++state().event_synchronize_calls == state().fail_event_synchronize_at) return kInvalidValue;
    return fake_gpu::kSuccess;
  }
  static error_t event_destroy(event_t e) {
    delete e;
    --state().events_live;
    return fake_gpu::kSuccess;
  }
};

}  // namespace rootspan::testing::fake_gpu
