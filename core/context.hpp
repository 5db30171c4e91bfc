// Context (docs/concepts.md): the providers it loaded, static and from manifests,
// and the table of its live roots. Contexts share nothing but the
// process-wide root id and domain counters.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/provider_report.hpp"
#include "provider.hpp"
#include "root.hpp"

namespace rootspan {

struct ContextOptions {
  bool static_providers = true;
  std::vector<std::string> manifests;
  bool discover_manifests = false;
};

struct AllocateOptions {
  std::string provider;
  std::uint32_t device = 0;
  rootspan_memory_kind memory_kind = ROOTSPAN_MEMORY_HOST;
  std::uint64_t byte_length = 0;
  std::uint64_t alignment = 64;
  rootspan_dtype dtype = ROOTSPAN_DTYPE_NONE;
};

struct HostImport {
  std::string provider = "host";
  rootspan_host_memory memory{};  // data, length, alignment, deleter
  rootspan_dtype dtype = ROOTSPAN_DTYPE_NONE;
  bool read_only = false;
  // Set for memory that maps a file (see Root::backing_check).
  std::function<Result<void>(std::uint64_t offset, std::uint64_t length)> backing_check;
};

class Context {
 public:
  static Result<std::unique_ptr<Context>> create(const ContextOptions &options);
  ~Context();  // releases what is left; see destroy()
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  // Releases every live root (each once, through its provider), then drops
  // the providers. Returns how many roots were still live.
  std::uint64_t destroy();

  // Negotiates a provider's table from its entry function (L6), starts it
  // and adds it; refuses a name already loaded. For static and embedded
  // providers; plugins come through start_manifest_providers.
  Result<void> add_provider(rootspan_provider_entry_fn entry, const std::string &options_json,
                            rootspan_provider_origin origin);

  Result<Root *> allocate(const AllocateOptions &options);
  // The deleter runs exactly once: at release, or before a failed import returns.
  Result<Root *> import_host(const HostImport &import);
  // Busy while claims are live; the root then stays valid.
  Result<void> release(Root *root);
  // Releases every root of `roots` or none: Busy (naming the first claimed
  // one, roots[i], by `name_of(i)` when given, else by its id) if any is
  // claimed, with the claim checks and the removal done under one hold of
  // every root's lock. The name is made only for that error: a load frees
  // thousands of roots at once.
  Result<void> release_together(const std::vector<Root *> &roots,
                                const std::function<std::string(std::size_t)> &name_of = {});

  Result<std::shared_ptr<Provider>> provider(const std::string &name) const;
  // Snapshots: providers may be added from another thread meanwhile.
  std::vector<std::shared_ptr<Provider>> providers() const;
  std::vector<ProviderReport> reports() const;
  std::size_t report_count() const;
  // The report at `index`, or nullptr. A report never moves or changes once
  // recorded, so its strings live as long as the context.
  const ProviderReport *report(std::size_t index) const;
  // Written only while the context is created.
  const std::vector<std::string> &manifests() const { return manifests_; }
  std::size_t live_roots() const;

 private:
  Context() = default;
  Result<void> start_static_providers();
  // Starts the plugins the manifests name (the loader checks, loads and
  // negotiates them: core/loader/provider_loading.hpp), recording a report
  // for every entry, started or not; NO_PROVIDER when none could be used.
  Result<void> start_manifest_providers(const std::vector<std::string> &paths, bool discover);
  // A second provider of one name is refused (L6).
  Result<void> check_unique_name(const std::string &name) const;
  void record(ProviderReport report);
  Result<void> start_provider(const rootspan_provider_table &table, std::shared_ptr<void> library,
                              const std::string &options_json, ProviderReport report);
  // Validates an allocation the provider made and makes it a root; on any
  // failure the provider's release hook runs exactly once.
  Result<Root *> adopt(const std::shared_ptr<Provider> &provider, const rootspan_provider_allocation &allocation,
                       const AllocationExpectation &expected, bool read_only, const char *operation);
  // Unmaps the root's live mappings and releases its live device accesses
  // through the provider: what must go before its allocation is released.
  void release_handles(Root &root) const;
  void release_allocation(const Provider &provider, const rootspan_provider_allocation &allocation) const;

  // add_mutex_ makes one add_provider (name check, init, append) atomic
  // against another; providers_mutex_ guards the two lists against readers.
  std::mutex add_mutex_;
  mutable std::shared_mutex providers_mutex_;
  std::vector<std::shared_ptr<Provider>> providers_;
  std::deque<ProviderReport> reports_;  // a deque: recorded reports never move
  std::vector<std::string> manifests_;

  struct KeyHash {
    std::size_t operator()(const Key &k) const {
      return std::hash<std::uint64_t>()(k.domain * 0x9E3779B97F4A7C15ull ^ k.local);
    }
  };
  mutable std::mutex mutex_;  // guards roots_; never held on the claim path
  std::unordered_map<Key, std::unique_ptr<Root>, KeyHash> roots_;
};

}  // namespace rootspan
