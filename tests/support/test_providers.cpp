#include "tests/support/test_providers.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

namespace rootspan::testing {

namespace {

struct Instance {
  TableConfig config;
  std::vector<std::uint64_t> domains;
  std::atomic<std::uint64_t> next_local{1};
};

struct Block {
  unsigned char *buffer = nullptr;  // simulated memory, nullptr when too large to back
  std::uint64_t size = 0;
};

struct State {
  Behaviour behaviour;
  Counters counters;
  std::mutex mutex;  // guards live, granted, tables, pending
  std::set<const Block *> live;
  std::map<std::string, std::uint64_t> granted;
  // Stable addresses, never freed; one table per distinct configuration, so a
  // program that calls the entry functions over and over (the C API fuzzer)
  // does not grow without bound.
  std::deque<std::pair<TableConfig, rootspan_provider_table>> tables;
  std::deque<std::string> strings;
  TableConfig pending;  // the config of the table the last entry call returned
};

State &state() {
  static State *s = new State();  // never destroyed: hooks may run at exit
  return *s;
}

Instance *as_instance(rootspan_provider_instance *instance) { return reinterpret_cast<Instance *>(instance); }

rootspan_status say(rootspan_provider_message *message, rootspan_status status, const std::string &text) {
  std::snprintf(message->data, message->capacity, "%s", text.c_str());
  return status;
}

rootspan_status t_init(const rootspan_core_services *services, const char *, rootspan_provider_instance **instance,
                       rootspan_provider_message *) {
  State &s = state();
  ++s.counters.init;
  if (s.behaviour.init_throws) throw std::runtime_error("init exploded");
  auto *i = new Instance();
  {
    std::lock_guard lock(s.mutex);
    i->config = s.pending;
    s.granted[i->config.name] = services->granted_domain_count ? services->granted_domains[0] : 0;
  }
  i->domains.assign(services->granted_domains, services->granted_domains + services->granted_domain_count);
  *instance = reinterpret_cast<rootspan_provider_instance *>(i);
  return ROOTSPAN_OK;
}

void t_shutdown(rootspan_provider_instance *instance) {
  ++state().counters.shutdown;
  delete as_instance(instance);
}

rootspan_status t_device_count(rootspan_provider_instance *, std::uint32_t *count, rootspan_provider_message *message) {
  const Behaviour &b = state().behaviour;
  *count = b.device_count;
  if (!b.device_note.empty()) say(message, ROOTSPAN_OK, b.device_note);
  return ROOTSPAN_OK;
}

rootspan_status t_device_info(rootspan_provider_instance *instance, std::uint32_t ordinal, rootspan_device_info *info,
                              rootspan_provider_message *message) {
  if (ordinal >= state().behaviour.device_count) return say(message, ROOTSPAN_ERR_NOT_FOUND, "no such device");
  info->ordinal = ordinal;
  std::snprintf(info->name, sizeof info->name, "%s device %u", as_instance(instance)->config.name.c_str(), ordinal);
  std::snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "0000:%02x:00.0", ordinal);
  info->total_memory_bytes = 1ull << 30;
  info->free_memory_bytes = 1ull << 29;
  return ROOTSPAN_OK;
}

rootspan_status t_allocate(rootspan_provider_instance *instance, const rootspan_allocation_request *request,
                           rootspan_provider_allocation *allocation, rootspan_provider_message *message) {
  State &s = state();
  const Behaviour &b = s.behaviour;
  Instance *self = as_instance(instance);
  ++s.counters.allocate;
  if (b.allocate_throws) throw std::runtime_error(b.throw_text);
  if (b.allocate_throws_nonstd) throw 42;
  if (b.allocate_status != ROOTSPAN_OK) return say(message, b.allocate_status, b.allocate_message);

  const std::uint64_t offset = b.byte_offset.value_or(0);
  const std::uint64_t length = b.byte_length.value_or(request->byte_length);
  const std::uint64_t alignment = b.alignment.value_or(request->alignment);

  auto *block = new Block();
  // Back the allocation with memory when it is small enough: host_base (or the
  // simulated device address) + offset + length stays inside the buffer.
  if (offset <= (1u << 20) && length <= (1u << 26) && b.host_shift <= 4096) {
    std::uint64_t buffer_alignment = 4096;
    if (alignment > buffer_alignment && alignment <= (1u << 20) && (alignment & (alignment - 1)) == 0) {
      buffer_alignment = alignment;
    }
    block->size = (b.host_shift + offset + length + 1 + 4095) / 4096 * 4096;
    void *p = nullptr;
    if (posix_memalign(&p, buffer_alignment, block->size) != 0) {
      delete block;
      return say(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "posix_memalign failed");
    }
    std::memset(p, 0, block->size);
    block->buffer = static_cast<unsigned char *>(p);
  }
  allocation->key.domain = b.domain ? *b.domain : self->domains.at(request->device % self->domains.size());
  allocation->key.local = b.local ? *b.local : self->next_local.fetch_add(1);
  allocation->byte_offset = offset;
  allocation->byte_length = length;
  allocation->alignment = alignment;
  allocation->host_base = self->config.host_access && block->buffer != nullptr ? block->buffer + b.host_shift : nullptr;
  allocation->device = request->device;
  allocation->provider_handle = block;
  {
    std::lock_guard lock(s.mutex);
    s.live.insert(block);
  }
  ++s.counters.allocated;
  return ROOTSPAN_OK;
}

void t_release(rootspan_provider_instance *, const rootspan_provider_allocation *allocation) {
  State &s = state();
  ++s.counters.release;
  auto *block = static_cast<Block *>(allocation->provider_handle);
  {
    std::lock_guard lock(s.mutex);
    if (s.live.erase(block) == 0) {
      ++s.counters.double_release;
      return;  // do not free twice
    }
  }
  std::free(block->buffer);
  delete block;
  if (s.behaviour.release_throws) throw std::runtime_error("release exploded");
}

unsigned char *simulated(const rootspan_provider_allocation *allocation) {
  return static_cast<Block *>(allocation->provider_handle)->buffer;
}

rootspan_status t_map(rootspan_provider_instance *, const rootspan_provider_allocation *allocation,
                      std::uint64_t offset, std::uint64_t length, rootspan_provider_mapping *mapping,
                      rootspan_provider_message *message) {
  State &s = state();
  const Behaviour &b = s.behaviour;
  ++s.counters.map;
  if (b.map_throws) throw std::runtime_error("map exploded");
  if (b.map_status != ROOTSPAN_OK) return say(message, b.map_status, b.map_message);
  if (b.map_callback) b.map_callback();
  auto *base = static_cast<unsigned char *>(allocation->host_base);
  // Without a host base (device memory), a careless provider answers with an
  // address the host cannot read.
  void *data = base == nullptr ? reinterpret_cast<void *>(std::uintptr_t{0x10000} + offset)
                               : static_cast<void *>(base + offset + b.map_pointer_shift);
  mapping->data = b.map_null ? nullptr : data;
  mapping->byte_length = static_cast<std::uint64_t>(static_cast<std::int64_t>(length) + b.map_length_delta);
  mapping->provider_token = reinterpret_cast<void *>(std::uintptr_t{0x70c});
  return ROOTSPAN_OK;
}

// Whether the allocation's block was already released (an unmap or access
// release that came too late).
bool released_already(const rootspan_provider_allocation *allocation) {
  State &s = state();
  std::lock_guard lock(s.mutex);
  return s.live.count(static_cast<const Block *>(allocation->provider_handle)) == 0;
}

void t_unmap(rootspan_provider_instance *, const rootspan_provider_allocation *allocation,
             const rootspan_provider_mapping *) {
  ++state().counters.unmap;
  if (released_already(allocation)) ++state().counters.unmap_after_release;
}

rootspan_status t_prepare(rootspan_provider_instance *, const rootspan_provider_allocation *allocation,
                          std::uint64_t byte_offset, const rootspan_device_access_request *request,
                          rootspan_device_access *access, rootspan_provider_message *) {
  State &s = state();
  ++s.counters.prepare;
  s.counters.last_prepare_byte_offset = byte_offset;
  s.counters.last_prepare_element_offset = request->element_offset;
  unsigned char *memory = simulated(allocation);
  access->device_ptr = s.behaviour.prepare_null_pointer || memory == nullptr
                           ? nullptr
                           : memory + byte_offset + request->element_offset * request->element_size;
  access->device_ordinal = allocation->device;
  access->stream = s.behaviour.stream;
  access->provider_token = reinterpret_cast<void *>(std::uintptr_t{0xacce55});
  return ROOTSPAN_OK;
}

void t_release_access(rootspan_provider_instance *, const rootspan_provider_allocation *allocation,
                      const rootspan_device_access *) {
  ++state().counters.release_access;
  if (released_already(allocation)) ++state().counters.access_released_after_release;
}

rootspan_status t_copy_from(rootspan_provider_instance *, const rootspan_provider_allocation *allocation,
                            std::uint64_t offset, const void *source, std::uint64_t length,
                            rootspan_provider_event **event, rootspan_provider_message *message) {
  State &s = state();
  ++s.counters.copy_from;
  if (event != nullptr) *event = nullptr;
  if (s.behaviour.copy_status != ROOTSPAN_OK) return say(message, s.behaviour.copy_status, s.behaviour.copy_message);
  if (length != 0) std::memcpy(simulated(allocation) + offset, source, length);
  return ROOTSPAN_OK;
}

rootspan_status t_copy_to(rootspan_provider_instance *, const rootspan_provider_allocation *allocation,
                          std::uint64_t offset, void *destination, std::uint64_t length,
                          rootspan_provider_event **event, rootspan_provider_message *message) {
  State &s = state();
  ++s.counters.copy_to;
  if (event != nullptr) *event = nullptr;
  if (s.behaviour.copy_status != ROOTSPAN_OK) return say(message, s.behaviour.copy_status, s.behaviour.copy_message);
  if (length != 0) std::memcpy(destination, simulated(allocation) + offset, length);
  return ROOTSPAN_OK;
}

bool same_config(const TableConfig &a, const TableConfig &b) {
  return a.name == b.name && a.kind == b.kind && a.abi_major == b.abi_major && a.abi_minor == b.abi_minor &&
         a.host_access == b.host_access && a.map_hooks == b.map_hooks && a.device_hooks == b.device_hooks &&
         a.copy_hooks == b.copy_hooks && a.null_init == b.null_init;
}

const rootspan_provider_table *make_table(const TableConfig &config) {
  State &s = state();
  std::lock_guard lock(s.mutex);
  s.pending = config;
  for (const auto &[made_for, table] : s.tables) {
    if (same_config(made_for, config)) return &table;
  }
  s.strings.push_back(config.name);
  const char *name = s.strings.back().c_str();
  s.strings.push_back(config.kind);
  const char *kind = s.strings.back().c_str();
  rootspan_provider_table t{};
  t.struct_size = sizeof t;
  t.abi_major = config.abi_major;
  t.abi_minor = config.abi_minor;
  t.name = name;
  t.kind = kind;
  t.init = config.null_init ? nullptr : t_init;
  t.shutdown = t_shutdown;
  t.device_count = t_device_count;
  t.device_info = t_device_info;
  t.allocate = t_allocate;
  t.release = t_release;
  if (config.map_hooks) {
    t.map_read = t_map;
    t.map_write = t_map;
    t.unmap = t_unmap;
  }
  if (config.device_hooks) {
    t.prepare_device_access = t_prepare;
    t.release_device_access = t_release_access;
  }
  if (config.copy_hooks) {
    t.copy_from_host = t_copy_from;
    t.copy_to_host = t_copy_to;
  }
  s.tables.emplace_back(config, t);
  return &s.tables.back().second;
}

}  // namespace

Behaviour &behaviour() { return state().behaviour; }
Counters &counters() { return state().counters; }

void reset() {
  State &s = state();
  s.behaviour = Behaviour{};
  Counters &c = s.counters;
  for (auto *a :
       {&c.init, &c.shutdown, &c.allocate, &c.allocated, &c.release, &c.double_release, &c.map, &c.unmap, &c.prepare,
        &c.release_access, &c.copy_from, &c.copy_to, &c.unmap_after_release, &c.access_released_after_release}) {
    *a = 0;
  }
  c.last_prepare_byte_offset = 0;
  c.last_prepare_element_offset = 0;
}

int live_blocks() {
  std::lock_guard lock(state().mutex);
  return static_cast<int>(state().live.size());
}

std::uint64_t granted_domain(const std::string &name) {
  std::lock_guard lock(state().mutex);
  auto it = state().granted.find(name);
  return it == state().granted.end() ? 0 : it->second;
}

const rootspan_provider_table *test_provider_entry(std::uint32_t, std::uint32_t) {
  return make_table(state().behaviour.table);
}

const rootspan_provider_table *device_sim_entry(std::uint32_t, std::uint32_t) {
  TableConfig c;
  c.name = "device-sim";
  c.kind = "sim";
  c.host_access = false;
  c.map_hooks = false;
  c.device_hooks = true;
  c.copy_hooks = true;
  return make_table(c);
}

const rootspan_provider_table *nomap_entry(std::uint32_t, std::uint32_t) {
  TableConfig c;
  c.name = "nomap";
  c.map_hooks = false;
  return make_table(c);
}

const rootspan_provider_table *null_entry(std::uint32_t, std::uint32_t) { return nullptr; }

}  // namespace rootspan::testing
