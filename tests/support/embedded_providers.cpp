#include "tests/support/embedded_providers.hpp"

#include <array>
#include <cstdlib>
#include <new>
#include <string>
#include <utility>

namespace rootspan::testing {

namespace {

struct NamedInstance {
  std::uint64_t domain = 0;
  std::uint64_t next_local = 1;
};

rootspan_status n_init(const rootspan_core_services *services, const char *, rootspan_provider_instance **instance,
                       rootspan_provider_message *) {
  auto *named = new NamedInstance();
  named->domain = services->granted_domains[0];
  *instance = reinterpret_cast<rootspan_provider_instance *>(named);
  return ROOTSPAN_OK;
}
void n_shutdown(rootspan_provider_instance *instance) { delete reinterpret_cast<NamedInstance *>(instance); }
rootspan_status n_device_count(rootspan_provider_instance *, std::uint32_t *count, rootspan_provider_message *) {
  *count = 1;
  return ROOTSPAN_OK;
}
rootspan_status n_device_info(rootspan_provider_instance *, std::uint32_t, rootspan_device_info *,
                              rootspan_provider_message *) {
  return ROOTSPAN_OK;
}
rootspan_status n_allocate(rootspan_provider_instance *instance, const rootspan_allocation_request *request,
                           rootspan_provider_allocation *allocation, rootspan_provider_message *) {
  auto *named = reinterpret_cast<NamedInstance *>(instance);
  void *data = std::aligned_alloc(64, 64 * ((request->byte_length + 64) / 64));
  if (data == nullptr) return ROOTSPAN_ERR_OUT_OF_MEMORY;
  allocation->key = {named->domain, __atomic_fetch_add(&named->next_local, 1, __ATOMIC_RELAXED)};
  allocation->byte_offset = 0;
  allocation->byte_length = request->byte_length;
  allocation->alignment = 64;
  allocation->host_base = data;
  allocation->device = 0;
  allocation->provider_handle = data;
  return ROOTSPAN_OK;
}
void n_release(rootspan_provider_instance *, const rootspan_provider_allocation *allocation) {
  std::free(allocation->provider_handle);
}
rootspan_status n_map(rootspan_provider_instance *, const rootspan_provider_allocation *allocation,
                      std::uint64_t offset, std::uint64_t length, rootspan_provider_mapping *mapping,
                      rootspan_provider_message *) {
  mapping->data = static_cast<char *>(allocation->host_base) + offset;
  mapping->byte_length = length;
  mapping->provider_token = nullptr;
  return ROOTSPAN_OK;
}
void n_unmap(rootspan_provider_instance *, const rootspan_provider_allocation *, const rootspan_provider_mapping *) {}

template <std::size_t I>
const rootspan_provider_table *entry(std::uint32_t, std::uint32_t) {
  static const std::string name = "named-" + std::to_string(I);
  static const rootspan_provider_table table = [] {
    rootspan_provider_table t{};
    t.struct_size = ROOTSPAN_PROVIDER_TABLE_STRUCT_SIZE;
    t.abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR;
    t.abi_minor = ROOTSPAN_PROVIDER_ABI_MINOR;
    t.name = name.c_str();
    t.kind = "test";
    t.init = n_init;
    t.shutdown = n_shutdown;
    t.device_count = n_device_count;
    t.device_info = n_device_info;
    t.allocate = n_allocate;
    t.release = n_release;
    t.map_read = n_map;
    t.map_write = n_map;
    t.unmap = n_unmap;
    return t;
  }();
  return &table;
}

template <std::size_t... I>
constexpr std::array<rootspan_provider_entry_fn, sizeof...(I)> entries(std::index_sequence<I...>) {
  return {entry<I>...};
}

constexpr auto kEntries = entries(std::make_index_sequence<kNamedProviderCount>());

}  // namespace

rootspan_provider_entry_fn named_provider_entry(std::size_t index) { return kEntries.at(index); }

}  // namespace rootspan::testing
