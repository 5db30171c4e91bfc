// The extern "C" entry points (docs/c-api.md). Each one checks its arguments,
// normalizes incoming structs by their struct_size, calls the C++ core, and
// turns a Diagnostic into an opaque rootspan_error. No exception leaves here.
#include "c_api_support.hpp"
#include "dtype.hpp"

namespace {

using namespace rootspan::c_api;
using rootspan::Diagnostic;
using rootspan::with_request;

rootspan_span span_out(const rootspan::Span &s) {
  return {sizeof(rootspan_span), s.root_id, s.offset, s.length, s.alignment};
}

}  // namespace

extern "C" {

// ---- versions ---------------------------------------------------------------

// "MAJOR.MINOR.PATCH" from rootspan.h's macros, so the two cannot disagree.
#define ROOTSPAN_TEXT(x) #x
#define ROOTSPAN_VERSION_TEXT(major, minor, patch) \
  ROOTSPAN_TEXT(major) "." ROOTSPAN_TEXT(minor) "." ROOTSPAN_TEXT(patch)
const char *rootspan_version(void) {
  return ROOTSPAN_VERSION_TEXT(ROOTSPAN_VERSION_MAJOR, ROOTSPAN_VERSION_MINOR, ROOTSPAN_VERSION_PATCH);
}
const char *rootspan_status_name(rootspan_status status) { return rootspan::status_name(status); }
const char *rootspan_dtype_name(rootspan_dtype dtype) { return rootspan::dtype_name(dtype); }
uint64_t rootspan_dtype_size(rootspan_dtype dtype) { return rootspan::dtype_size(dtype); }

// ---- errors -----------------------------------------------------------------

rootspan_status rootspan_error_code(const rootspan_error *error) {
  return error == nullptr ? ROOTSPAN_ERR_OUT_OF_MEMORY : error->diagnostic.code;
}
const char *rootspan_error_operation(const rootspan_error *error) {
  return error == nullptr ? "" : error->diagnostic.operation.c_str();
}
const char *rootspan_error_message(const rootspan_error *error) {
  return error == nullptr ? "out of memory while reporting an error" : error->message.c_str();
}
const char *rootspan_error_cause(const rootspan_error *error) {
  return error == nullptr ? "" : error->diagnostic.cause.c_str();
}
const char *rootspan_error_policy(const rootspan_error *error) {
  return error == nullptr ? "" : error->diagnostic.policy.c_str();
}
rootspan_status rootspan_error_requested(const rootspan_error *error, rootspan_requested *requested) {
  if (error == nullptr || !struct_size_ok(requested)) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  const rootspan::Requested &r = error->diagnostic.requested;
  write_struct(requested,
               rootspan_requested{
                   sizeof(rootspan_requested), r.kind, r.root_id, {r.key.domain, r.key.local}, r.offset, r.length});
  return ROOTSPAN_OK;
}
int rootspan_error_resolution(const rootspan_error *error, rootspan_span *span) {
  if (error == nullptr || !error->diagnostic.resolution) return 0;
  if (span != nullptr && struct_size_ok(span)) write_struct(span, span_out(*error->diagnostic.resolution));
  return 1;
}
int rootspan_error_values(const rootspan_error *error, uint64_t *expected, uint64_t *actual) {
  if (error == nullptr || !error->diagnostic.values) return 0;
  if (expected != nullptr) *expected = error->diagnostic.values->first;
  if (actual != nullptr) *actual = error->diagnostic.values->second;
  return 1;
}
void rootspan_error_free(rootspan_error *error) { delete error; }

// ---- contexts and providers -----------------------------------------------------

rootspan_status rootspan_context_create(const rootspan_context_options *options, rootspan_context **context,
                                        rootspan_error **error) {
  if (context == nullptr) return invalid(error, "context_create", "context is NULL");
  *context = nullptr;
  if (options != nullptr) {
    if (rootspan_status s = check_struct(error, options, "context_create", "options"); s != ROOTSPAN_OK) return s;
  }
  const rootspan_context_options o = options != nullptr ? read_struct(options) : rootspan_context_options{};
  if (o.manifests == nullptr && o.manifest_count != 0) {
    return invalid(
        error, "context_create",
        ("options.manifests is NULL but options.manifest_count is " + std::to_string(o.manifest_count)).c_str());
  }
  for (std::size_t i = 0; i < o.manifest_count; ++i) {
    if (o.manifests[i] == nullptr) {
      return invalid(error, "context_create",
                     ("options.manifests[" + std::to_string(i) + "] is NULL (of " + std::to_string(o.manifest_count) +
                      " manifest paths)")
                         .c_str());
    }
  }
  return guarded(error, "context_create", [&]() -> rootspan::Result<void> {
    rootspan::ContextOptions opts;
    if (options != nullptr) {
      opts.static_providers = o.no_static_providers == 0;
      for (std::size_t i = 0; i < o.manifest_count; ++i) opts.manifests.emplace_back(o.manifests[i]);
      opts.discover_manifests = o.discover_manifests != 0;
    }
    auto created_result = rootspan::Context::create(opts);
    if (!created_result) return std::move(created_result).error();
    auto created = std::move(created_result).value();
    *context = new rootspan_context{std::move(created)};
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

rootspan_status rootspan_context_destroy(rootspan_context *context, uint64_t *live_roots) {
  if (context == nullptr) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  const std::uint64_t left = context->context->destroy();
  if (live_roots != nullptr) *live_roots = left;
  delete context;
  return ROOTSPAN_OK;
}

rootspan_status rootspan_context_add_provider(rootspan_context *context, rootspan_provider_entry_fn entry,
                                              const char *options_json, rootspan_error **error) {
  if (context == nullptr || entry == nullptr) return invalid(error, "load_plugin", "context or entry is NULL");
  return guarded(error, "context_add_provider", [&] {
    return context->context->add_provider(entry, options_json == nullptr ? "{}" : options_json,
                                          ROOTSPAN_ORIGIN_EMBEDDED);
  });
}

rootspan_status rootspan_provider_report_count(const rootspan_context *context, size_t *count) {
  if (context == nullptr || count == nullptr) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  *count = context->context->report_count();
  return ROOTSPAN_OK;
}

rootspan_status rootspan_provider_report_get(const rootspan_context *context, size_t index,
                                             rootspan_provider_report *report) {
  if (context == nullptr || !struct_size_ok(report)) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  const rootspan::ProviderReport *found = context->context->report(index);
  if (found == nullptr) return ROOTSPAN_ERR_NOT_FOUND;
  const rootspan::ProviderReport &r = *found;
  auto c_str_or_null = [](const std::string &s) { return s.empty() ? nullptr : s.c_str(); };
  write_struct(report,
               rootspan_provider_report{sizeof(rootspan_provider_report), r.name.c_str(), r.kind.c_str(), r.origin,
                                        r.state, c_str_or_null(r.library), c_str_or_null(r.manifest), r.abi_major,
                                        r.abi_minor, r.device_count, r.priority, c_str_or_null(r.policy),
                                        c_str_or_null(r.reason), r.code, c_str_or_null(r.note)});
  return ROOTSPAN_OK;
}

rootspan_status rootspan_manifest_count(const rootspan_context *context, size_t *count) {
  if (context == nullptr || count == nullptr) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  *count = context->context->manifests().size();
  return ROOTSPAN_OK;
}

const char *rootspan_manifest_path(const rootspan_context *context, size_t index) {
  if (context == nullptr || index >= context->context->manifests().size()) return nullptr;
  return context->context->manifests()[index].c_str();
}

rootspan_status rootspan_provider_device_info(rootspan_context *context, const char *provider, uint32_t ordinal,
                                              rootspan_device_info *info, rootspan_error **error) {
  if (context == nullptr || provider == nullptr)
    return invalid(error, "provider_device_info", "context or provider is NULL");
  if (rootspan_status s = check_struct(error, info, "provider_device_info", "info"); s != ROOTSPAN_OK) return s;
  return guarded(error, "provider_device_info", [&]() -> rootspan::Result<void> {
    auto p_result = context->context->provider(provider);
    if (!p_result) return with_request(p_result.error(), "provider_device_info", rootspan::Requested::none());
    auto p = std::move(p_result).value();
    if (ordinal >= p->device_count()) {
      return rootspan::make_error(ROOTSPAN_ERR_NOT_FOUND, "provider_device_info",
                                  "provider '" + p->name() + "' has " + std::to_string(p->device_count()) +
                                      " devices; ordinal " + std::to_string(ordinal) + " does not exist",
                                  p->device_count(), ordinal);
    }
    rootspan_device_info full{};
    full.struct_size = sizeof full;
    auto called = p->invoke("device_info", [&](rootspan_provider_message *m) {
      return p->table().device_info(p->instance(), ordinal, &full, m);
    });
    if (!called) return with_request(called.error(), "provider_device_info", rootspan::Requested::none());
    full.name[sizeof full.name - 1] = '\0';
    full.pci_bus_id[sizeof full.pci_bus_id - 1] = '\0';
    write_struct(info, full);
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

// ---- roots ------------------------------------------------------------------------

rootspan_status rootspan_root_allocate(rootspan_context *context, const rootspan_allocate_options *options,
                                       rootspan_root **root, rootspan_error **error) {
  if (context == nullptr || root == nullptr) return invalid(error, "root_allocate", "context or root is NULL");
  if (rootspan_status s = check_struct(error, options, "root_allocate", "options"); s != ROOTSPAN_OK) return s;
  *root = nullptr;
  return guarded(error, "root_allocate", root, [&] {
    const rootspan_allocate_options o = read_struct(options);
    rootspan::AllocateOptions opts;
    opts.provider = o.provider == nullptr ? "host" : o.provider;
    opts.device = o.device;
    opts.memory_kind = o.memory_kind;
    opts.byte_length = o.byte_length;
    opts.alignment = o.alignment == 0 ? 64 : o.alignment;
    opts.dtype = o.dtype;
    return context->context->allocate(opts);
  });
}

rootspan_status rootspan_root_import_host(rootspan_context *context, const rootspan_host_import *import,
                                          rootspan_root **root, rootspan_error **error) {
  if (struct_size_ok(import) && (context == nullptr || root == nullptr)) {
    // The deleter runs exactly once, even when the call is malformed.
    const rootspan_host_import i = read_struct(import);
    if (i.deleter != nullptr) i.deleter(i.deleter_context, i.data);
  }
  if (context == nullptr || root == nullptr) return invalid(error, "root_import_host", "context or root is NULL");
  // A struct_size that cannot be read leaves the deleter unknown: it is not called.
  if (rootspan_status s = check_struct(error, import, "root_import_host", "import"); s != ROOTSPAN_OK) return s;
  *root = nullptr;
  return guarded(error, "root_import_host", root, [&] {
    const rootspan_host_import i = read_struct(import);
    rootspan::HostImport host;
    host.provider = i.provider == nullptr ? "host" : i.provider;
    host.memory = {sizeof(rootspan_host_memory), i.data, i.byte_length, i.alignment, i.deleter, i.deleter_context};
    host.dtype = i.dtype;
    host.read_only = i.read_only != 0;
    return context->context->import_host(host);
  });
}

rootspan_status rootspan_root_get_info(const rootspan_root *root, rootspan_root_info *info) {
  if (root == nullptr || !struct_size_ok(info)) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  const rootspan::Root &r = *root_of(root);
  write_struct(info, rootspan_root_info{sizeof(rootspan_root_info),
                                        r.id,
                                        {r.extent.key.domain, r.extent.key.local},
                                        r.extent.offset,
                                        r.extent.length,
                                        r.extent.alignment,
                                        r.dtype,
                                        r.read_only ? 1 : 0,
                                        r.host_accessible() ? 1 : 0,
                                        r.allocation.device,
                                        r.provider->name().c_str()});
  return ROOTSPAN_OK;
}

rootspan_status rootspan_root_release(rootspan_root *root, rootspan_error **error) {
  if (root == nullptr) return invalid(error, "root_release", "root is NULL");
  return guarded(error, "root_release", [&] { return root_of(root)->context->release(root_of(root)); });
}

rootspan_status rootspan_span_derive(const rootspan_root *root, uint64_t offset, uint64_t length, rootspan_span *span,
                                     rootspan_error **error) {
  if (root == nullptr) return invalid(error, "span_derive", "root is NULL");
  if (rootspan_status s = check_struct(error, span, "span_derive", "span"); s != ROOTSPAN_OK) return s;
  return guarded(error, "span_derive", [&]() -> rootspan::Result<void> {
    auto s_result = rootspan::span_of(*root_of(root), offset, length);
    if (!s_result) return std::move(s_result).error();
    auto s = std::move(s_result).value();
    write_struct(span, span_out(s));
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

// ---- claims -----------------------------------------------------------------------

rootspan_status rootspan_claim_acquire(rootspan_root *root, uint64_t offset, uint64_t length, rootspan_claim_mode mode,
                                       rootspan_claim **claim, rootspan_error **error) {
  if (root == nullptr || claim == nullptr) return invalid(error, "claim_acquire", "root or claim is NULL");
  if (mode != ROOTSPAN_CLAIM_SHARED && mode != ROOTSPAN_CLAIM_EXCLUSIVE) {
    return invalid(error, "claim_acquire", "mode is neither ROOTSPAN_CLAIM_SHARED nor ROOTSPAN_CLAIM_EXCLUSIVE");
  }
  *claim = nullptr;
  return guarded(error, "claim_acquire", claim,
                 [&] { return rootspan::claim_acquire(*root_of(root), offset, length, mode); });
}

rootspan_status rootspan_claim_split(rootspan_claim *parent, const rootspan_range *ranges, size_t count,
                                     rootspan_claim **children, rootspan_error **error) {
  if (parent == nullptr || (count != 0 && (ranges == nullptr || children == nullptr))) {
    return invalid(error, "claim_split", "parent, ranges or children is NULL");
  }
  return guarded(error, "claim_split", [&] {
    return rootspan::claim_split(*claim_of(parent), ranges, count, reinterpret_cast<rootspan::Claim **>(children));
  });
}

rootspan_status rootspan_claim_get_span(const rootspan_claim *claim, rootspan_span *span, rootspan_claim_mode *mode) {
  if (claim == nullptr) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  if (span != nullptr && !struct_size_ok(span)) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  if (span != nullptr) write_struct(span, span_out(claim_of(claim)->span));
  if (mode != nullptr) *mode = claim_of(claim)->mode;
  return ROOTSPAN_OK;
}

rootspan_status rootspan_claim_release(rootspan_claim *claim, rootspan_error **error) {
  if (claim == nullptr) return invalid(error, "claim_release", "claim is NULL");
  return guarded(error, "claim_release", [&] { return rootspan::claim_release(*claim_of(claim)); });
}

// ---- mappings ---------------------------------------------------------------------

static rootspan_status map(rootspan_claim *claim, rootspan_dtype dtype, uint64_t offset, uint64_t length,
                           rootspan_mapping **mapping, rootspan_error **error, bool write) {
  const char *operation = write ? "map_write" : "map_read";
  if (claim == nullptr || mapping == nullptr) return invalid(error, operation, "claim or mapping is NULL");
  *mapping = nullptr;
  return guarded(error, operation, mapping,
                 [&] { return rootspan::map_range(*claim_of(claim), dtype, offset, length, write); });
}

rootspan_status rootspan_map_read(rootspan_claim *claim, rootspan_dtype dtype, uint64_t offset, uint64_t length,
                                  rootspan_mapping **mapping, rootspan_error **error) {
  return map(claim, dtype, offset, length, mapping, error, false);
}

rootspan_status rootspan_map_write(rootspan_claim *claim, rootspan_dtype dtype, uint64_t offset, uint64_t length,
                                   rootspan_mapping **mapping, rootspan_error **error) {
  return map(claim, dtype, offset, length, mapping, error, true);
}

void *rootspan_mapping_data(const rootspan_mapping *mapping) {
  return mapping == nullptr ? nullptr : mapping_of(mapping)->provider.data;
}

uint64_t rootspan_mapping_length(const rootspan_mapping *mapping) {
  return mapping == nullptr ? 0 : mapping_of(mapping)->provider.byte_length;
}

rootspan_status rootspan_unmap(rootspan_mapping *mapping) {
  if (mapping == nullptr) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  rootspan::unmap(*mapping_of(mapping));
  return ROOTSPAN_OK;
}

// ---- device access ----------------------------------------------------------------

rootspan_status rootspan_device_access_prepare(rootspan_claim *claim, const rootspan_device_access_request *request,
                                               rootspan_device_access *access, rootspan_error **error) {
  if (claim == nullptr) return invalid(error, "device_access_prepare", "claim is NULL");
  if (rootspan_status s = check_struct(error, request, "device_access_prepare", "request"); s != ROOTSPAN_OK) return s;
  if (rootspan_status s = check_struct(error, access, "device_access_prepare", "access"); s != ROOTSPAN_OK) return s;
  return guarded(error, "device_access_prepare",
                 [&] { return rootspan::device_access_prepare(*claim_of(claim), read_struct(request), *access); });
}

rootspan_status rootspan_device_access_release(rootspan_claim *claim, const rootspan_device_access *access) {
  if (claim == nullptr || !struct_size_ok(access)) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  rootspan_error *ignored = nullptr;
  const rootspan_status status = guarded(&ignored, "device_access_release",
                                         [&] { return rootspan::device_access_release(*claim_of(claim), *access); });
  rootspan_error_free(ignored);
  return status;
}

// ---- copies -----------------------------------------------------------------------

rootspan_status rootspan_copy_from_host(rootspan_claim *claim, uint64_t offset, const void *source, uint64_t length,
                                        rootspan_error **error) {
  if (claim == nullptr || (source == nullptr && length != 0))
    return invalid(error, "copy_from_host", "claim or source is NULL");
  return guarded(error, "copy_from_host",
                 [&] { return rootspan::copy_from_host(*claim_of(claim), offset, source, length); });
}

rootspan_status rootspan_copy_to_host(rootspan_claim *claim, uint64_t offset, void *destination, uint64_t length,
                                      rootspan_error **error) {
  if (claim == nullptr || (destination == nullptr && length != 0)) {
    return invalid(error, "copy_to_host", "claim or destination is NULL");
  }
  return guarded(error, "copy_to_host",
                 [&] { return rootspan::copy_to_host(*claim_of(claim), offset, destination, length); });
}

}  // extern "C"
