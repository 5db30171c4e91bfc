// The host provider (docs/writing-a-provider.md): aligned host allocations of any power-of-two
// alignment, imports of caller memory with a deleter, and map read/write.
// One source, two builds: compiled into librootspan as a static plugin
// (ROOTSPAN_HOST_PROVIDER_STATIC), and as librootspan-host.so.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "plugins/kit/huge_pages.hpp"
#include "plugins/kit/provider_kit.hpp"
#include "rootspan/provider.h"

namespace {

using rootspan_plugin_kit::advise_huge_pages;
using rootspan_plugin_kit::copy_text;
using rootspan_plugin_kit::fail;
using rootspan_plugin_kit::guarded;
using rootspan_plugin_kit::huge_page_advice;
using rootspan_plugin_kit::huge_page_advice_pays;
using rootspan_plugin_kit::read_struct;
using rootspan_plugin_kit::transparent_huge_pages_mode;
using rootspan_plugin_kit::write_message;
using rootspan_plugin_kit::write_struct;

// Huge-page mappings released by roots, kept to back later allocations of
// the same size. Fresh anonymous memory is expensive to fill the first time
// (in a virtual machine the host faults it in too: a 1 GiB copy load into
// fresh memory measured 0.6-2 s, into memory used before 0.15 s), so a
// process that loads again (a reload, the next model) reuses what it had.
class MappingCache {
 public:
  explicit MappingCache(std::size_t limit) : limit_(limit) {}
  MappingCache(const MappingCache &) = delete;
  MappingCache &operator=(const MappingCache &) = delete;
  ~MappingCache() {
    for (const Entry &entry : entries_) ::munmap(entry.data, entry.length);
  }

  // A kept mapping of exactly `length` bytes aligned to `alignment`, or nullptr.
  void *take(std::size_t length, std::size_t alignment) {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].length == length && reinterpret_cast<std::uintptr_t>(entries_[i].data) % alignment == 0) {
        void *data = entries_[i].data;
        entries_[i] = entries_.back();
        entries_.pop_back();
        held_ -= length;
        return data;
      }
    }
    return nullptr;
  }

  // Keeps the mapping while the cache has room; otherwise unmaps it.
  void give(void *data, std::size_t length) {
    {
      std::lock_guard lock(mutex_);
      if (held_ + length <= limit_ && entries_.size() < kMaxEntries) {
        try {
          entries_.push_back({data, length});
          held_ += length;
          return;
        } catch (const std::bad_alloc &) {
        }
      }
    }
    ::munmap(data, length);
  }

 private:
  static constexpr std::size_t kMaxEntries = 4096;
  struct Entry {
    void *data;
    std::size_t length;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;
  std::size_t held_ = 0;
  std::size_t limit_;
};

// At most an eighth of physical memory, and never more than 4 GiB, is kept.
std::size_t cache_limit() {
  const auto memory =
      static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  const std::uint64_t limit = std::min<std::uint64_t>(memory / 8, std::uint64_t{4} << 30);
  return static_cast<std::size_t>(limit);
}

struct HostInstance {
  std::uint64_t domain = 0;
  std::atomic<std::uint64_t> next_local{1};
  MappingCache released{cache_limit()};
};

// What release needs to give the memory back.
struct HostBlock {
  void *data = nullptr;
  bool owned = false;  // allocated here (free or munmap) or imported (deleter)
  void (*deleter)(void *, void *) = nullptr;
  void *deleter_context = nullptr;
  std::size_t mapped_bytes = 0;  // non-zero: an anonymous mapping of this size, given back with munmap
};

// Allocations of a huge page and more get their own anonymous mapping, aligned
// to huge pages and advised MADV_HUGEPAGE where that pays
// (plugins/kit/huge_pages.hpp): filling fresh 4 KiB pages costs a fault each.
// Where transparent huge pages are off, or the advice is not given, the
// mapping works with small pages.
constexpr std::size_t kHugePage = std::size_t{2} << 20;

// An anonymous mapping of `length` bytes (a multiple of kHugePage) aligned to
// `alignment` (a power of two, at least kHugePage); nullptr if mmap fails.
void *map_huge_aligned(std::size_t length, std::size_t alignment) {
  const std::size_t reserve = length + alignment;
  if (reserve < length) return nullptr;
  void *raw = ::mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + alignment - 1) & ~(std::uintptr_t{alignment} - 1);
  // Give back the unaligned head and the tail beyond `length`.
  if (aligned > start) ::munmap(raw, aligned - start);
  const std::uintptr_t end = aligned + length;
  if (start + reserve > end) ::munmap(reinterpret_cast<void *>(end), start + reserve - end);
  void *data = reinterpret_cast<void *>(aligned);
  advise_huge_pages(data, length);
  return data;
}

HostInstance *as_host(rootspan_provider_instance *instance) { return reinterpret_cast<HostInstance *>(instance); }

rootspan_status host_init(const rootspan_core_services *services_in, const char *,
                          rootspan_provider_instance **instance, rootspan_provider_message *message) {
  const rootspan_core_services services = read_struct(services_in);
  if (services.granted_domain_count == 0 || services.granted_domains == nullptr) {
    return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "no domain granted");
  }
  auto *host = new (std::nothrow) HostInstance();
  if (host == nullptr) return fail(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "out of memory");
  host->domain = services.granted_domains[0];
  *instance = reinterpret_cast<rootspan_provider_instance *>(host);
  return ROOTSPAN_OK;
}

void host_shutdown(rootspan_provider_instance *instance) { delete as_host(instance); }

rootspan_status host_device_count(rootspan_provider_instance *, std::uint32_t *count,
                                  rootspan_provider_message *message) {
  *count = 1;
  // Guarded: the mode is a std::string, and no exception may cross the ABI.
  return guarded(message, [&] {
    // The note says whether large allocations get huge pages: without them a
    // first copy load faults every 4 KiB page of fresh memory.
    const std::string mode = transparent_huge_pages_mode();
    if (mode == "always" || (mode == "madvise" && huge_page_advice_pays())) {
      write_message(message, "transparent huge pages: %s (allocations of 2 MiB and more use them)", mode.c_str());
    } else if (mode == "madvise") {
      write_message(message, "transparent huge pages: madvise (not asked for: %s)", huge_page_advice().why);
    } else if (!mode.empty()) {
      write_message(message,
                    "transparent huge pages: %s (allocations use 4 KiB pages; first copy loads fault each one)",
                    mode.c_str());
    }
    return ROOTSPAN_OK;
  });
}

rootspan_status host_device_info(rootspan_provider_instance *, std::uint32_t ordinal, rootspan_device_info *info,
                                 rootspan_provider_message *message) {
  if (ordinal != 0) return fail(message, ROOTSPAN_ERR_NOT_FOUND, "the host provider has one device, ordinal 0");
  const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  rootspan_device_info out{};
  out.ordinal = 0;
  copy_text(out.name, sizeof out.name, "host");
  out.pci_bus_id[0] = '\0';
  out.total_memory_bytes = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) * page;
  out.free_memory_bytes = static_cast<std::uint64_t>(sysconf(_SC_AVPHYS_PAGES)) * page;
  write_struct(info, out);
  return ROOTSPAN_OK;
}

void describe(HostInstance *host, HostBlock *block, std::uint64_t length, std::uint64_t alignment,
              rootspan_provider_allocation *allocation) {
  rootspan_provider_allocation out{};
  out.key.domain = host->domain;
  out.key.local = host->next_local.fetch_add(1);
  out.byte_offset = 0;
  out.byte_length = length;
  out.alignment = alignment;
  out.host_base = block->data;
  out.device = 0;
  out.provider_handle = block;
  write_struct(allocation, out);
}

rootspan_status host_allocate(rootspan_provider_instance *instance, const rootspan_allocation_request *request_in,
                              rootspan_provider_allocation *allocation, rootspan_provider_message *message) {
  const rootspan_allocation_request request = read_struct(request_in);
  if (request.memory_kind != ROOTSPAN_MEMORY_HOST) {
    return fail(message, ROOTSPAN_ERR_UNSUPPORTED, "the host provider allocates only ROOTSPAN_MEMORY_HOST");
  }
  if (request.device != 0) return fail(message, ROOTSPAN_ERR_NOT_FOUND, "the host provider has only device 0");
  // posix_memalign wants at least pointer alignment; a zero-length root still
  // gets a unique address.
  const std::size_t alignment = request.alignment < sizeof(void *) ? sizeof(void *) : request.alignment;
  void *data = nullptr;
  std::size_t mapped_bytes = 0;
  if (request.byte_length >= kHugePage && request.byte_length <= SIZE_MAX - kHugePage) {
    const std::size_t length = (request.byte_length + kHugePage - 1) & ~(kHugePage - 1);
    const std::size_t huge_alignment = alignment < kHugePage ? kHugePage : alignment;
    data = as_host(instance)->released.take(length, huge_alignment);
    if (data == nullptr) data = map_huge_aligned(length, huge_alignment);
    if (data != nullptr) mapped_bytes = length;
  }
  if (data == nullptr && posix_memalign(&data, alignment, request.byte_length == 0 ? 1 : request.byte_length) != 0) {
    return fail(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "posix_memalign failed");
  }
  auto *block = new (std::nothrow) HostBlock{data, true, nullptr, nullptr, mapped_bytes};
  if (block == nullptr) {
    if (mapped_bytes != 0) {
      ::munmap(data, mapped_bytes);
    } else {
      std::free(data);
    }
    return fail(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  describe(as_host(instance), block, request.byte_length, alignment, allocation);
  return ROOTSPAN_OK;
}

rootspan_status host_import(rootspan_provider_instance *instance, const rootspan_host_memory *memory_in,
                            rootspan_provider_allocation *allocation, rootspan_provider_message *message) {
  const rootspan_host_memory memory = read_struct(memory_in);
  auto *block = new (std::nothrow) HostBlock{memory.data, false, memory.deleter, memory.deleter_context};
  if (block == nullptr) return fail(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "out of memory");
  describe(as_host(instance), block, memory.byte_length, memory.alignment, allocation);
  return ROOTSPAN_OK;
}

void host_release(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation) {
  auto *block = static_cast<HostBlock *>(allocation->provider_handle);
  if (block->owned && block->mapped_bytes != 0) {
    as_host(instance)->released.give(block->data, block->mapped_bytes);
  } else if (block->owned) {
    std::free(block->data);
  } else if (block->deleter != nullptr) {
    block->deleter(block->deleter_context, block->data);
  }
  delete block;
}

rootspan_status host_map(rootspan_provider_instance *, const rootspan_provider_allocation *allocation,
                         std::uint64_t offset, std::uint64_t length, rootspan_provider_mapping *mapping,
                         rootspan_provider_message *) {
  rootspan_provider_mapping out{};
  out.data = static_cast<char *>(allocation->host_base) + offset;
  out.byte_length = length;
  out.provider_token = nullptr;
  write_struct(mapping, out);
  return ROOTSPAN_OK;
}

void host_unmap(rootspan_provider_instance *, const rootspan_provider_allocation *, const rootspan_provider_mapping *) {
}

const rootspan_provider_table kHostTable = {
    .struct_size = sizeof(rootspan_provider_table),
    .abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR,
    .abi_minor = ROOTSPAN_PROVIDER_ABI_MINOR,
    .name = "host",
    .kind = "host",
    .init = host_init,
    .shutdown = host_shutdown,
    .device_count = host_device_count,
    .device_info = host_device_info,
    .allocate = host_allocate,
    .release = host_release,
    .map_read = host_map,
    .map_write = host_map,
    .unmap = host_unmap,
    .prepare_device_access = nullptr,  // host memory has no device view
    .release_device_access = nullptr,
    .copy_from_host = nullptr,  // the core copies through a mapping
    .copy_to_host = nullptr,
    .event_wait = nullptr,
    .import_host_memory = host_import,
};

}  // namespace

#ifdef ROOTSPAN_HOST_PROVIDER_STATIC
namespace rootspan::plugins {
const rootspan_provider_table *host_provider_entry(std::uint32_t, std::uint32_t) { return &kHostTable; }
}  // namespace rootspan::plugins
#else
extern "C" __attribute__((visibility("default"))) const rootspan_provider_table *rootspan_provider_entry(
    std::uint32_t, std::uint32_t) {
  return &kHostTable;
}
#endif
