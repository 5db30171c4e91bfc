#include "context.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "core/loader/abi_negotiation.hpp"
#include "core/loader/provider_loading.hpp"
#include "core/loader/static_providers.hpp"
#include "dtype.hpp"

namespace rootspan {

namespace {

std::string str(std::uint64_t v) { return std::to_string(v); }

}  // namespace

Result<std::unique_ptr<Context>> Context::create(const ContextOptions &options) {
  std::unique_ptr<Context> context(new Context());
  if (options.static_providers) {
    BOOST_OUTCOME_TRY(context->start_static_providers());
  }
  if (!options.manifests.empty() || options.discover_manifests) {
    BOOST_OUTCOME_TRY(context->start_manifest_providers(options.manifests, options.discover_manifests));
  }
  return context;
}

Result<void> Context::start_static_providers() {
  for (rootspan_provider_entry_fn entry : static_provider_entries()) {
    BOOST_OUTCOME_TRY(add_provider(entry, "{}", ROOTSPAN_ORIGIN_STATIC));
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<void> Context::start_manifest_providers(const std::vector<std::string> &paths, bool discover) {
  auto found = find_manifest_providers(paths, discover);
  if (!found) return found.error();
  manifests_ = std::move(found.value().manifests);
  std::vector<std::string> reasons;  // of everything an error skipped or failed
  for (ManifestFinding &finding : found.value().findings) {
    ProviderReport &report = finding.report;
    if (finding.plugin) {
      const PluginToStart &plugin = *finding.plugin;
      std::lock_guard adding(add_mutex_);
      auto started = start_provider(plugin.table, plugin.library, plugin.options_json, report);  // records it
      if (started) continue;
      mark_entry_failure(report, started.error(), plugin.description);  // L7: this entry only
    }
    if (report.code != ROOTSPAN_OK) reasons.push_back(report.reason);
    record(std::move(report));
  }
  if (providers().empty() && !reasons.empty()) {
    std::string all;
    for (const std::string &r : reasons) all += "\n  " + r;
    Diagnostic d = make_error(ROOTSPAN_ERR_NO_PROVIDER, "load_manifest",
                              "no provider could be used; " + std::to_string(reasons.size()) + " reasons:" + all);
    d.policy = "L7";
    return d;
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<void> Context::check_unique_name(const std::string &name) const {
  std::shared_lock lock(providers_mutex_);
  for (const auto &p : providers_) {
    if (p->name() == name) {
      Diagnostic d =
          make_error(ROOTSPAN_ERR_PLUGIN_REJECTED, "load_plugin", "a provider named '" + name + "' is already loaded");
      d.policy = "L6";
      return d;
    }
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<void> Context::start_provider(const rootspan_provider_table &table, std::shared_ptr<void> library,
                                     const std::string &options_json, ProviderReport report) {
  BOOST_OUTCOME_TRY(check_unique_name(table.name));
  auto started = Provider::start(table, std::move(library), options_json);
  if (!started) {
    Diagnostic d = started.error();
    d.operation = "load_plugin";
    return d;
  }
  const Provider &p = *started.value();
  report.name = p.name();
  report.kind = p.kind();
  report.abi_major = p.table().abi_major;
  report.abi_minor = p.table().abi_minor;
  report.device_count = static_cast<std::uint32_t>(p.device_count());
  // Started either way (its name is taken); zero devices is reported as its
  // own state, with the provider's explanation.
  report.state = p.device_count() == 0 ? ROOTSPAN_PROVIDER_NO_DEVICE : ROOTSPAN_PROVIDER_LOADED;
  if (p.device_count() == 0) {
    report.reason = p.device_note().empty() ? "the provider reports no device and gave no reason" : p.device_note();
  } else {
    report.note = p.device_note();
  }
  std::unique_lock lock(providers_mutex_);
  reports_.push_back(std::move(report));
  providers_.push_back(std::move(started).value());
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

void Context::record(ProviderReport report) {
  std::unique_lock lock(providers_mutex_);
  reports_.push_back(std::move(report));
}

std::vector<std::shared_ptr<Provider>> Context::providers() const {
  std::shared_lock lock(providers_mutex_);
  return providers_;
}

std::vector<ProviderReport> Context::reports() const {
  std::shared_lock lock(providers_mutex_);
  return {reports_.begin(), reports_.end()};
}

std::size_t Context::report_count() const {
  std::shared_lock lock(providers_mutex_);
  return reports_.size();
}

const ProviderReport *Context::report(std::size_t index) const {
  std::shared_lock lock(providers_mutex_);
  return index < reports_.size() ? &reports_[index] : nullptr;
}

Result<void> Context::add_provider(rootspan_provider_entry_fn entry, const std::string &options_json,
                                   rootspan_provider_origin origin) {
  ProviderExpectation expected;
  expected.where = origin == ROOTSPAN_ORIGIN_STATIC ? "static provider" : "embedded provider";
  auto negotiated = negotiate(entry, expected);
  if (!negotiated) return negotiated.error();
  std::lock_guard adding(add_mutex_);
  ProviderReport report;
  report.origin = origin;
  return start_provider(negotiated.value().table, nullptr, options_json, std::move(report));
}

Context::~Context() { destroy(); }

std::uint64_t Context::destroy() {
  std::unordered_map<Key, std::unique_ptr<Root>, KeyHash> left;
  {
    std::lock_guard lock(mutex_);
    left.swap(roots_);
  }
  for (auto &[key, root] : left) {
    release_handles(*root);
    release_allocation(*root->provider, root->allocation);
  }
  const std::uint64_t count = left.size();
  left.clear();  // drops each root's provider reference
  std::vector<std::shared_ptr<Provider>> providers;
  {
    std::unique_lock lock(providers_mutex_);
    providers.swap(providers_);
  }
  providers.clear();  // the last reference shuts each provider down
  return count;
}

Result<std::shared_ptr<Provider>> Context::provider(const std::string &name) const {
  std::shared_lock lock(providers_mutex_);
  for (const auto &p : providers_) {
    if (p->name() == name) return p;
  }
  std::string known;
  for (const auto &p : providers_) known += (known.empty() ? "" : ", ") + p->name();
  return make_error(ROOTSPAN_ERR_NOT_FOUND, "",
                    "no loaded provider is named '" + name + "' (loaded: " + (known.empty() ? "none" : known) + ")");
}

std::size_t Context::live_roots() const {
  std::lock_guard lock(mutex_);
  return roots_.size();
}

void Context::release_handles(Root &root) const {
  const Provider &provider = *root.provider;
  const rootspan_provider_table &table = provider.table();
  std::lock_guard lock(root.mutex);
  for (Mapping *mapping : root.claims.live_mappings()) {
    provider.invoke_quietly([&] { table.unmap(provider.instance(), &root.allocation, &mapping->provider); });
    root.claims.free_mapping(mapping);
  }
  for (Claim *claim : root.claims.live_claims()) {
    for (const rootspan_device_access &access : claim->accesses) {
      provider.invoke_quietly([&] { table.release_device_access(provider.instance(), &root.allocation, &access); });
    }
    claim->accesses.clear();
    claim->device_accesses = 0;
  }
}

void Context::release_allocation(const Provider &provider, const rootspan_provider_allocation &allocation) const {
  provider.invoke_quietly([&] { provider.table().release(provider.instance(), &allocation); });
}

Result<Root *> Context::adopt(const std::shared_ptr<Provider> &provider, const rootspan_provider_allocation &allocation,
                              const AllocationExpectation &expected, bool read_only, const char *operation) {
  const Key key{allocation.key.domain, allocation.key.local};
  const Requested requested = Requested::key_range(key, allocation.byte_offset, allocation.byte_length);
  auto reject = [&](Diagnostic d) {
    release_allocation(*provider, allocation);
    d.policy = "L9";
    return with_request(std::move(d), operation, requested);
  };
  // The checks that need the root table run under its lock; the provider's
  // release hook (on rejection) runs after it is dropped.
  std::optional<Diagnostic> refused;
  auto valid = validate_allocation(*provider, allocation, expected);
  if (!valid) return reject(valid.error());

  auto root = std::make_unique<Root>();
  root->context = this;
  root->provider = provider;
  root->allocation = allocation;
  root->extent = {key, allocation.byte_offset, allocation.byte_length, allocation.alignment};
  root->dtype = expected.dtype;
  root->read_only = read_only;

  Root *raw = root.get();
  {
    std::lock_guard lock(mutex_);
    auto found = roots_.find(key);
    if (found != roots_.end()) {
      refused = make_error(
          ROOTSPAN_ERR_DUPLICATE_IDENTITY, "",
          "live root " + str(found->second->id) + " already has key (" + str(key.domain) + "," + str(key.local) + ")");
    } else if (auto id = next_root_id(); !id) {
      refused = id.error();
    } else {
      root->id = id.value();
      roots_.emplace(key, std::move(root));
    }
  }
  if (refused) return reject(std::move(*refused));
  return raw;
}

Result<Root *> Context::allocate(const AllocateOptions &options) {
  const Requested requested = Requested::range(0, options.byte_length);
  auto fail = [&](Diagnostic d) { return with_request(std::move(d), "root_allocate", requested); };
  auto provider = this->provider(options.provider);
  if (!provider) return fail(provider.error());
  if (!is_power_of_two(options.alignment)) {
    return fail(make_error(ROOTSPAN_ERR_INVALID_ALIGNMENT, "",
                           "alignment " + str(options.alignment) + " is not a non-zero power of two"));
  }
  if (!dtype_is_known(options.dtype)) return fail(unknown_enum("dtype", "rootspan_dtype", options.dtype));
  if (options.memory_kind != ROOTSPAN_MEMORY_HOST && options.memory_kind != ROOTSPAN_MEMORY_DEVICE &&
      options.memory_kind != ROOTSPAN_MEMORY_HOST_PINNED) {
    return fail(unknown_enum("memory_kind", "rootspan_memory_kind", options.memory_kind));
  }
  const Provider &p = *provider.value();
  rootspan_allocation_request request{sizeof(rootspan_allocation_request), options.device, options.memory_kind,
                                      options.byte_length, options.alignment};
  rootspan_provider_allocation allocation{};
  allocation.struct_size = sizeof allocation;
  auto made = p.invoke("allocate", [&](rootspan_provider_message *m) {
    return p.table().allocate(p.instance(), &request, &allocation, m);
  });
  if (!made) return fail(made.error());
  allocation.struct_size = sizeof allocation;
  return adopt(provider.value(), allocation, {options.byte_length, options.alignment, options.dtype}, false,
               "root_allocate");
}

Result<Root *> Context::import_host(const HostImport &import) {
  const rootspan_host_memory &memory = import.memory;
  auto delete_caller_memory = [&] {
    if (memory.deleter != nullptr) memory.deleter(memory.deleter_context, memory.data);
  };
  const Requested requested = Requested::range(0, memory.byte_length);
  auto fail = [&](Diagnostic d) {
    delete_caller_memory();
    return with_request(std::move(d), "root_import_host", requested);
  };
  auto provider = this->provider(import.provider);
  if (!provider) return fail(provider.error());
  const Provider &p = *provider.value();
  if (p.table().import_host_memory == nullptr) {
    return fail(make_error(ROOTSPAN_ERR_UNSUPPORTED, "", "provider '" + p.name() + "' cannot import host memory"));
  }
  if (memory.data == nullptr && memory.byte_length != 0) {
    return fail(make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, "", "data is NULL for a non-empty import"));
  }
  // No memory runs past the end of the address space: such a length is a
  // lie the core would otherwise copy and map through.
  if (std::uintptr_t end = 0;
      __builtin_add_overflow(reinterpret_cast<std::uintptr_t>(memory.data), memory.byte_length, &end)) {
    return fail(
        make_error(ROOTSPAN_ERR_RANGE_OVERFLOW, "",
                   "data + byte_length " + str(memory.byte_length) + " runs past the end of the address space"));
  }
  if (!is_power_of_two(memory.alignment)) {
    return fail(make_error(ROOTSPAN_ERR_INVALID_ALIGNMENT, "",
                           "alignment " + str(memory.alignment) + " is not a non-zero power of two"));
  }
  if (!dtype_is_known(import.dtype)) return fail(unknown_enum("dtype", "rootspan_dtype", import.dtype));
  rootspan_provider_allocation allocation{};
  allocation.struct_size = sizeof allocation;
  auto made = p.invoke("import_host_memory", [&](rootspan_provider_message *m) {
    return p.table().import_host_memory(p.instance(), &memory, &allocation, m);
  });
  if (!made) return fail(made.error());  // the provider took nothing: the core deletes
  allocation.struct_size = sizeof allocation;
  // From here the provider owns the deleter: a rejected import releases the
  // allocation, and the provider's release calls it.
  auto adopted =
      adopt(provider.value(), allocation, {memory.byte_length, 1, import.dtype}, import.read_only, "root_import_host");
  // The caller has no handle yet: no other thread can map the root before this.
  if (adopted) adopted.value()->backing_check = import.backing_check;
  return adopted;
}

Result<void> Context::release(Root *root) {
  std::unique_ptr<Root> owned;
  {
    std::lock_guard table_lock(mutex_);
    std::lock_guard root_lock(root->mutex);
    if (root->claims.live_count() != 0) {
      Diagnostic d = make_error(ROOTSPAN_ERR_BUSY, "root_release",
                                str(root->claims.live_count()) + " claims are live, the first: " +
                                    describe_claim(*root->claims.first_live()) + "; the root stays valid",
                                0, root->claims.live_count());
      d.requested = root->request(0, root->extent.length);
      return d;
    }
    auto found = roots_.find(root->extent.key);
    owned = std::move(found->second);
    roots_.erase(found);
  }
  release_allocation(*owned->provider, owned->allocation);
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace rootspan
