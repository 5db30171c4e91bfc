// The extern "C" entry points of weights.h.
#include <cstdlib>

#include "core/c_api_support.hpp"
#include "rootspan/weights.h"
#include "weights/inspect.hpp"
#include "weights/materialize.hpp"
#include "weights/schema.hpp"

struct rootspan_weights {
  rootspan::Context *context = nullptr;
  rootspan::weights::LoadResult result;
};

namespace {

using namespace rootspan::c_api;
using rootspan::Diagnostic;
using rootspan::Result;
namespace weights = rootspan::weights;

// "auto": the highest-priority loaded provider that has a device; the first
// listed wins a tie (static providers come first).
Result<std::string> choose_provider(const rootspan::Context &context, const char *requested) {
  if (requested != nullptr && std::string(requested) != "auto") return std::string(requested);
  const rootspan::ProviderReport *best = nullptr;
  const std::vector<rootspan::ProviderReport> reports = context.reports();  // a snapshot
  for (const rootspan::ProviderReport &report : reports) {
    if (report.state != ROOTSPAN_PROVIDER_LOADED || report.device_count == 0) continue;
    if (best == nullptr || report.priority > best->priority) best = &report;
  }
  if (best == nullptr) {
    return rootspan::make_error(ROOTSPAN_ERR_NOT_FOUND, "load_component",
                                "no loaded provider has a device to load into");
  }
  return best->name;
}

}  // namespace

extern "C" {

rootspan_status rootspan_weights_load(rootspan_context *context, const char *path, const rootspan_load_options *options,
                                      rootspan_weights **out, rootspan_error **error) {
  if (context == nullptr || path == nullptr || out == nullptr) {
    return invalid(error, "load_component", "context, path or weights is NULL");
  }
  if (options != nullptr) {
    if (rootspan_status s = check_struct(error, options, "load_component", "options"); s != ROOTSPAN_OK) return s;
  }
  *out = nullptr;
  return guarded(error, "load_component", [&]() -> Result<void> {
    rootspan_load_options o{};
    o.struct_size = sizeof o;
    if (options != nullptr) o = read_struct(options);
    if (o.strategy != ROOTSPAN_LOAD_MMAP && o.strategy != ROOTSPAN_LOAD_READ) {
      return rootspan::with_request(rootspan::unknown_enum("strategy", "rootspan_load_strategy", o.strategy),
                                    "load_component", rootspan::Requested::none());
    }
    rootspan::Context &ctx = *context->context;

    auto checkpoint = weights::Checkpoint::open(path);
    if (!checkpoint) return checkpoint.error();
    auto schema = o.schema_path != nullptr
                      ? weights::load_component_schema(o.schema_path)
                      : Result<weights::ComponentSchema>(weights::default_schema(checkpoint.value()));
    if (!schema) return schema.error();
    auto resolved = weights::resolve_schema(checkpoint.value(), schema.value());
    if (!resolved) return resolved.error();
    auto provider = choose_provider(ctx, o.provider);
    if (!provider) return provider.error();

    weights::LoadOptions load;
    load.provider = provider.value();
    load.device = o.device;
    load.strategy = o.strategy == ROOTSPAN_LOAD_READ ? weights::Strategy::kRead : weights::Strategy::kMmap;
    if (o.progress != nullptr) {
      load.progress = [&o](const weights::LoadProgress &p) {
        const rootspan_load_progress progress{sizeof(rootspan_load_progress),
                                              p.component->c_str(),
                                              p.component_index,
                                              p.component_count,
                                              p.bytes_done,
                                              p.bytes_total};
        return o.progress(o.progress_context, &progress) == 0;
      };
    }
    auto loaded = weights::load_components(ctx, checkpoint.value(), std::move(resolved).value(), load);
    if (!loaded) return loaded.error();
    *out = new rootspan_weights{&ctx, std::move(loaded).value()};
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

const char *rootspan_weights_provider(const rootspan_weights *weights) {
  return weights == nullptr ? nullptr : weights->result.provider.c_str();
}

rootspan_status rootspan_weights_component_count(const rootspan_weights *weights, size_t *count) {
  if (weights == nullptr || count == nullptr) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  *count = weights->result.components.size();
  return ROOTSPAN_OK;
}

rootspan_status rootspan_weights_component(const rootspan_weights *weights, size_t index,
                                           rootspan_component_info *info) {
  if (weights == nullptr || !struct_size_ok(info)) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  if (index >= weights->result.components.size()) return ROOTSPAN_ERR_NOT_FOUND;
  const weights::LoadedComponent &c = weights->result.components[index];
  write_struct(info, rootspan_component_info{sizeof(rootspan_component_info), c.id.c_str(), handle_of(c.root), c.bytes,
                                             c.segments, c.zero_copy ? 1 : 0});
  return ROOTSPAN_OK;
}

rootspan_status rootspan_weights_skipped_count(const rootspan_weights *weights, size_t *count) {
  if (weights == nullptr || count == nullptr) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  *count = weights->result.skipped.size();
  return ROOTSPAN_OK;
}

rootspan_status rootspan_weights_skipped(const rootspan_weights *weights, size_t index, const char **id,
                                         const char **reason) {
  if (weights == nullptr) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  if (index >= weights->result.skipped.size()) return ROOTSPAN_ERR_NOT_FOUND;
  if (id != nullptr) *id = weights->result.skipped[index].id.c_str();
  if (reason != nullptr) *reason = weights->result.skipped[index].reason.c_str();
  return ROOTSPAN_OK;
}

rootspan_status rootspan_weights_component_sha256(rootspan_weights *weights, size_t index, char hex[65],
                                                  rootspan_error **error) {
  if (weights == nullptr || hex == nullptr) return invalid(error, "verify", "weights or hex is NULL");
  if (index >= weights->result.components.size()) return invalid(error, "verify", "no component at that index");
  return guarded(error, "verify", [&]() -> Result<void> {
    auto digest = weights::root_sha256(*weights->result.components[index].root);
    if (!digest) return digest.error();
    std::memcpy(hex, digest.value().c_str(), 65);
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

rootspan_status rootspan_weights_free(rootspan_weights *weights, rootspan_error **error) {
  if (weights == nullptr) return ROOTSPAN_OK;
  // All or nothing: the claim checks and the releases under one hold.
  std::vector<rootspan::Root *> roots;
  std::vector<std::string> names;
  for (const weights::LoadedComponent &c : weights->result.components) {
    roots.push_back(c.root);
    names.push_back("component \"" + c.id + "\"");
  }
  const rootspan_status status =
      guarded(error, "release_root", [&] { return weights->context->release_together(roots, names); });
  if (status == ROOTSPAN_OK) delete weights;
  return status;
}

rootspan_status rootspan_checkpoint_inspect(const char *path, char **json, rootspan_error **error) {
  if (path == nullptr || json == nullptr) return invalid(error, "open_checkpoint", "path or json is NULL");
  *json = nullptr;
  return guarded(error, "open_checkpoint", [&]() -> Result<void> {
    auto checkpoint = weights::Checkpoint::open(path);
    if (!checkpoint) return checkpoint.error();
    const std::string text = weights::describe_checkpoint(path, checkpoint.value()).dump();
    *json = static_cast<char *>(std::malloc(text.size() + 1));
    if (*json == nullptr) throw std::bad_alloc();
    std::memcpy(*json, text.c_str(), text.size() + 1);
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

void rootspan_string_free(char *string) { std::free(string); }

}  // extern "C"
