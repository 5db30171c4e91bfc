#include "tests/support/upload_provider.hpp"

#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

namespace rootspan::testing {

namespace {

struct Instance {
  bool shared = false;  // device memory the host can see (kShared... entry)
  std::vector<std::uint64_t> domains;
  std::atomic<std::uint64_t> next_local{1};
};

struct Block {
  std::vector<unsigned char> bytes;  // the simulated device memory
  unsigned char *base = nullptr;     // byte 0 of the allocation, inside bytes
  std::uint64_t size = 0;            // the allocation's bytes from base
  std::uint64_t local = 0;
};

struct State {
  UploadBehaviour behaviour;
  UploadCounters counters;
  std::mutex mutex;  // guards live and copies
  std::set<const Block *> live;
  std::vector<UploadCopy> copies;
};

State &state() {
  static State *s = new State();  // never destroyed: hooks may run at exit
  return *s;
}

rootspan_status say(rootspan_provider_message *message, rootspan_status status, const char *text) {
  std::snprintf(message->data, message->capacity, "%s", text);
  return status;
}

Instance *as_instance(rootspan_provider_instance *instance) { return reinterpret_cast<Instance *>(instance); }
Block *as_block(const rootspan_provider_allocation *allocation) {
  return static_cast<Block *>(allocation->provider_handle);
}

rootspan_status u_init(const rootspan_core_services *services, const char *, rootspan_provider_instance **instance,
                       rootspan_provider_message *) {
  auto *i = new Instance();
  i->domains.assign(services->granted_domains, services->granted_domains + services->granted_domain_count);
  *instance = reinterpret_cast<rootspan_provider_instance *>(i);
  return ROOTSPAN_OK;
}

rootspan_status s_init(const rootspan_core_services *services, const char *options,
                       rootspan_provider_instance **instance, rootspan_provider_message *message) {
  const rootspan_status status = u_init(services, options, instance, message);
  if (status == ROOTSPAN_OK) as_instance(*instance)->shared = true;
  return status;
}

void u_shutdown(rootspan_provider_instance *instance) { delete as_instance(instance); }

rootspan_status u_device_count(rootspan_provider_instance *, std::uint32_t *count, rootspan_provider_message *) {
  *count = state().behaviour.device_count;
  return ROOTSPAN_OK;
}

rootspan_status u_device_info(rootspan_provider_instance *, std::uint32_t ordinal, rootspan_device_info *info,
                              rootspan_provider_message *message) {
  if (ordinal >= state().behaviour.device_count) return say(message, ROOTSPAN_ERR_NOT_FOUND, "no such device");
  info->ordinal = ordinal;
  std::snprintf(info->name, sizeof info->name, "upload device %u", ordinal);
  info->pci_bus_id[0] = '\0';
  info->total_memory_bytes = 1ull << 30;
  info->free_memory_bytes = 1ull << 30;
  return ROOTSPAN_OK;
}

rootspan_status u_allocate(rootspan_provider_instance *instance, const rootspan_allocation_request *request,
                           rootspan_provider_allocation *allocation, rootspan_provider_message *message) {
  State &s = state();
  Instance *self = as_instance(instance);
  // Simulated device memory only: a load's request for pinned staging memory
  // is refused (and not counted as a call), so the loader stages through
  // ordinary host memory.
  if (request->memory_kind != ROOTSPAN_MEMORY_DEVICE) {
    ++s.counters.refused_kind;
    return say(message, ROOTSPAN_ERR_UNSUPPORTED, "upload: only ROOTSPAN_MEMORY_DEVICE is simulated");
  }
  const int call = ++s.counters.allocate;
  s.counters.last_memory_kind = request->memory_kind;
  if (s.behaviour.fail_allocate_at != 0 && call == s.behaviour.fail_allocate_at) {
    return say(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "upload: simulated device is out of memory");
  }
  if (request->device >= s.behaviour.device_count) return say(message, ROOTSPAN_ERR_NOT_FOUND, "no such device");
  auto *block = new Block();
  // Shared memory is seen by the host: its root's bytes start where the
  // requested alignment holds.
  const std::uint64_t slack = self->shared ? request->alignment : 0;
  block->bytes.assign(request->byte_length + slack, 0xEE);  // not zero, so a missed copy shows
  block->size = request->byte_length;
  block->local = self->next_local.fetch_add(1);
  allocation->key.domain = self->domains.at(request->device);
  allocation->key.local = block->local;
  const auto address = reinterpret_cast<std::uintptr_t>(block->bytes.data());
  block->base = block->bytes.data() + (self->shared ? (slack - address % slack) % slack : 0);
  allocation->byte_offset = 0;
  allocation->byte_length = request->byte_length;
  allocation->alignment = request->alignment;
  allocation->host_base = self->shared ? block->base : nullptr;
  allocation->device = request->device;
  allocation->provider_handle = block;
  {
    std::lock_guard lock(s.mutex);
    s.live.insert(block);
  }
  ++s.counters.allocated;
  return ROOTSPAN_OK;
}

void u_release(rootspan_provider_instance *, const rootspan_provider_allocation *allocation) {
  if (state().behaviour.on_release) state().behaviour.on_release();
  State &s = state();
  ++s.counters.release;
  Block *block = as_block(allocation);
  {
    std::lock_guard lock(s.mutex);
    if (s.live.erase(block) == 0) {
      ++s.counters.double_release;
      return;
    }
  }
  delete block;
}

rootspan_status u_copy_from(rootspan_provider_instance *, const rootspan_provider_allocation *allocation,
                            std::uint64_t offset, const void *source, std::uint64_t length,
                            rootspan_provider_event **event, rootspan_provider_message *message) {
  State &s = state();
  const int call = ++s.counters.copy_from;
  if (event != nullptr) *event = nullptr;
  if (s.behaviour.fail_copy_from_at != 0 && call == s.behaviour.fail_copy_from_at) {
    return say(message, ROOTSPAN_ERR_PROVIDER_FAILURE, "upload: simulated copy failure");
  }
  Block *block = as_block(allocation);
  if (offset > block->size || length > block->size - offset) {
    return say(message, ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT, "upload: copy outside the allocation");
  }
  if (length != 0) std::memcpy(block->base + offset, source, length);
  std::lock_guard lock(s.mutex);
  s.copies.push_back({block->local, offset, length});
  return ROOTSPAN_OK;
}

rootspan_status u_copy_to(rootspan_provider_instance *, const rootspan_provider_allocation *allocation,
                          std::uint64_t offset, void *destination, std::uint64_t length,
                          rootspan_provider_event **event, rootspan_provider_message *message) {
  ++state().counters.copy_to;
  if (event != nullptr) *event = nullptr;
  Block *block = as_block(allocation);
  if (offset > block->size || length > block->size - offset) {
    return say(message, ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT, "upload: copy outside the allocation");
  }
  if (length != 0) std::memcpy(destination, block->base + offset, length);
  return ROOTSPAN_OK;
}

rootspan_status s_map(rootspan_provider_instance *, const rootspan_provider_allocation *allocation,
                      std::uint64_t offset, std::uint64_t length, rootspan_provider_mapping *mapping,
                      rootspan_provider_message *) {
  ++state().counters.maps;
  mapping->data = as_block(allocation)->base + offset;
  mapping->byte_length = length;
  mapping->provider_token = nullptr;
  return ROOTSPAN_OK;
}

void s_unmap(rootspan_provider_instance *, const rootspan_provider_allocation *, const rootspan_provider_mapping *) {}

const rootspan_provider_table kTable = [] {
  rootspan_provider_table t{};
  t.struct_size = sizeof t;
  t.abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR;
  t.abi_minor = ROOTSPAN_PROVIDER_ABI_MINOR;
  t.name = kUploadProviderName;
  t.kind = "simulated";
  t.init = u_init;
  t.shutdown = u_shutdown;
  t.device_count = u_device_count;
  t.device_info = u_device_info;
  t.allocate = u_allocate;
  t.release = u_release;
  // No map_read, map_write, unmap: the host cannot see this memory.
  t.copy_from_host = u_copy_from;
  t.copy_to_host = u_copy_to;
  return t;
}();

const rootspan_provider_table kSharedTable = [] {
  rootspan_provider_table t = kTable;
  t.name = kSharedUploadProviderName;
  t.init = s_init;
  t.map_read = s_map;
  t.map_write = s_map;
  t.unmap = s_unmap;
  return t;
}();

}  // namespace

UploadBehaviour &upload_behaviour() { return state().behaviour; }
UploadCounters &upload_counters() { return state().counters; }

std::vector<UploadCopy> upload_copies() {
  std::lock_guard lock(state().mutex);
  return state().copies;
}

void upload_reset() {
  State &s = state();
  s.behaviour = UploadBehaviour{};
  UploadCounters &c = s.counters;
  for (auto *a :
       {&c.allocate, &c.refused_kind, &c.maps, &c.allocated, &c.release, &c.double_release, &c.copy_from, &c.copy_to}) {
    *a = 0;
  }
  c.last_memory_kind = -1;
  std::lock_guard lock(s.mutex);
  s.copies.clear();
}

int upload_live_blocks() {
  std::lock_guard lock(state().mutex);
  return static_cast<int>(state().live.size());
}

const rootspan_provider_table *upload_entry(std::uint32_t, std::uint32_t) { return &kTable; }
const rootspan_provider_table *shared_upload_entry(std::uint32_t, std::uint32_t) { return &kSharedTable; }

}  // namespace rootspan::testing
