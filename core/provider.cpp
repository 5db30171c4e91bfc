#include "provider.hpp"

#include <atomic>
#include <cstdio>

namespace rootspan {

namespace {

// Domains are unique in the process, so keys of different providers (and of
// different contexts) never collide.
std::atomic<std::uint64_t> g_next_domain{1};

void log_to_stderr(void *context, rootspan_log_level level, const char *message) {
  const auto *provider = static_cast<const Provider *>(context);
  if (level < ROOTSPAN_LOG_WARN || message == nullptr) return;
  std::fprintf(stderr, "rootspan: provider %s: %s\n", provider->name().c_str(), message);
}

// A provider's own status passes through when it means the same thing to the
// caller; anything else is a provider failure.
rootspan_status caller_status(rootspan_status status) {
  switch (status) {
    case ROOTSPAN_ERR_UNSUPPORTED:
    case ROOTSPAN_ERR_OUT_OF_MEMORY:
    case ROOTSPAN_ERR_NOT_FOUND:
    case ROOTSPAN_ERR_INVALID_ARGUMENT:
      return status;
    default:
      return ROOTSPAN_ERR_PROVIDER_FAILURE;
  }
}

}  // namespace

Result<std::shared_ptr<Provider>> Provider::start(const rootspan_provider_table &table, std::shared_ptr<void> library,
                                                  const std::string &options_json) {
  std::shared_ptr<Provider> provider(new Provider());
  provider->table_ = table;
  provider->library_ = std::move(library);
  provider->name_ = table.name;
  provider->kind_ = table.kind;
  const std::uint64_t first = g_next_domain.fetch_add(ROOTSPAN_DOMAINS_PER_PROVIDER);
  for (std::size_t i = 0; i < provider->domains_.size(); ++i) provider->domains_[i] = first + i;

  // The provider may keep the services pointer until shutdown: it lives in
  // the Provider, as long as the instance does.
  rootspan_core_services &services = provider->services_;
  services.struct_size = sizeof services;
  services.core_abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR;
  services.core_abi_minor = ROOTSPAN_PROVIDER_ABI_MINOR;
  services.granted_domains = provider->domains_.data();
  services.granted_domain_count = provider->domains_.size();
  services.log = log_to_stderr;
  services.log_context = provider.get();

  rootspan_provider_instance *instance = nullptr;
  BOOST_OUTCOME_TRY(provider->invoke(
      "init", [&](rootspan_provider_message *m) { return table.init(&services, options_json.c_str(), &instance, m); }));
  provider->instance_ = instance;
  provider->started_ = true;

  std::uint32_t count = 0;
  BOOST_OUTCOME_TRY(provider->invoke(
      "device_count", [&](rootspan_provider_message *m) { return table.device_count(instance, &count, m); },
      &provider->device_note_));
  provider->device_count_ = count;
  return provider;
}

Provider::~Provider() {
  if (started_) invoke_quietly([&] { table_.shutdown(instance_); });
}

bool Provider::owns_domain(std::uint64_t domain) const {
  return domain >= domains_.front() && domain <= domains_.back();
}

Diagnostic Provider::failure(const char *hook, rootspan_status status, const std::string &text) const {
  Diagnostic d = make_error(
      caller_status(status), "",
      "provider '" + name_ + "' " + hook + " failed (" + status_name(status) + ")" + (text.empty() ? "" : ": " + text));
  return d;
}

}  // namespace rootspan
