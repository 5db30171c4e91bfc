// The extern "C" entry points of weights.h.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/c_api_support.hpp"
#include "core/claim_ops.hpp"
#include "core/mapping.hpp"
#include "core/root.hpp"
#include "core/text/closest_names.hpp"
#include "core/text/quoting.hpp"
#include "rootspan/weights.h"
#include "weights/api/inspect.hpp"
#include "weights/api/live_handles.hpp"
#include "weights/files/mapped_file.hpp"
#include "weights/pipeline/load_pipeline.hpp"
#include "weights/placement/staging_ring.hpp"
#include "weights/schema/schema.hpp"

// The versioned structs of weights.h, for check_struct/read_struct/write_struct.
namespace rootspan {
ROOTSPAN_STRUCT_VERSIONS(rootspan_load_options, LOAD_OPTIONS);
ROOTSPAN_STRUCT_VERSIONS(rootspan_sign_options, SIGN_OPTIONS);
ROOTSPAN_STRUCT_VERSIONS(rootspan_component_info, COMPONENT_INFO);
ROOTSPAN_STRUCT_VERSIONS(rootspan_inspect_options, INSPECT_OPTIONS);
ROOTSPAN_STRUCT_VERSIONS(rootspan_component_mapping, COMPONENT_MAPPING);
}  // namespace rootspan

// Listed in live_weights() from the load to rootspan_weights_free: every call
// holds it through that list (hold), so a free on another thread cannot
// free it under the call.
struct rootspan_weights {
  // Taken shared by every call that reads, exclusively by the two that
  // change the components' roots (release_component, free).
  mutable std::shared_mutex lock;
  bool freed = false;  // rootspan_weights_free released everything: no call may use it now
  rootspan::Context *context = nullptr;
  rootspan::weights::LoadResult result;
  bool checked_digests = false;                               // the load was asked to check digests
  std::vector<rootspan::weights::Unverifiable> unverifiable;  // files it read that had none published

  rootspan_weights(rootspan::Context *c, rootspan::weights::FinishedLoad load)
      : context(c),
        result(std::move(load.result)),
        checked_digests(load.checked_digests),
        unverifiable(std::move(load.unverifiable)) {}

  // What rootspan_weights_find searches, views of result.components (which
  // nothing changes after the load): the ids, and the tensor names of the
  // components found by name (found_by_source). Made at the first search,
  // not by the load: a load never searched by name (the drop-in's and
  // torch.load's keep their own) pays nothing, where on 10,000 tensors the two
  // tables were some 4% of a load and its free. Throws bad_alloc.
  struct NameIndex {
    std::unordered_map<std::string_view, std::size_t> by_id;
    std::unordered_map<std::string_view, std::size_t> by_source;
  };
  const NameIndex &names() const {
    const std::lock_guard guard(names_lock_);
    if (!names_) {
      NameIndex made;
      made.by_id.reserve(result.components.size());
      for (std::size_t i = 0; i < result.components.size(); ++i) {
        const auto &c = result.components[i];
        made.by_id.emplace(c.id, i);
        if (found_by_source(c)) made.by_source.emplace(c.source, i);
      }
      names_ = std::move(made);
    }
    return *names_;  // never changed once made: read without the lock
  }

  // A one-tensor component whose tensor's name is outside the id rule (it
  // loads as "tensor.<n>"): found by that name too.
  static bool found_by_source(const rootspan::weights::LoadedComponent &c) {
    return c.segments == 1 && !rootspan::weights::is_component_id(c.source);
  }

 private:
  mutable std::mutex names_lock_;
  mutable std::optional<NameIndex> names_;  // unset until made; a throw leaves it so
};

namespace {

using namespace rootspan::c_api;
using rootspan::Diagnostic;
using rootspan::Result;
namespace weights = rootspan::weights;

// The C roles are the schema roles in the same order; these pin it.
using weights::ComponentRole;
static_assert(static_cast<int>(ComponentRole::kValues) == ROOTSPAN_ROLE_VALUES);
static_assert(static_cast<int>(ComponentRole::kPackedValues) == ROOTSPAN_ROLE_PACKED_VALUES);
static_assert(static_cast<int>(ComponentRole::kScales) == ROOTSPAN_ROLE_SCALES);
static_assert(static_cast<int>(ComponentRole::kZeroPoints) == ROOTSPAN_ROLE_ZERO_POINTS);
static_assert(static_cast<int>(ComponentRole::kIndices) == ROOTSPAN_ROLE_INDICES);
static_assert(static_cast<int>(ComponentRole::kPermutation) == ROOTSPAN_ROLE_PERMUTATION);
static_assert(static_cast<int>(ComponentRole::kCodebook) == ROOTSPAN_ROLE_CODEBOOK);
static_assert(static_cast<int>(ComponentRole::kMetadata) == ROOTSPAN_ROLE_METADATA);

rootspan_component_info info_of(const weights::LoadResult &result, const weights::LoadedComponent &c) {
  rootspan_component_info info{};
  info.struct_size = sizeof info;
  info.id = c.id.c_str();
  info.root = handle_of(c.root);
  info.byte_length = c.bytes;
  info.segments = c.segments;
  info.zero_copy = c.zero_copy ? 1 : 0;
  info.read_only = c.read_only ? 1 : 0;
  info.dtype = c.dtype;
  info.role = static_cast<rootspan_component_role>(c.role);
  if (const auto *blocks = std::get_if<weights::BlockQuantizedEncoding>(&c.encoding)) {
    info.encoding = ROOTSPAN_ENCODING_BLOCK_QUANTIZED;
    info.format_id = blocks->format_id.c_str();
    info.values_per_block = blocks->values_per_block;
    info.bytes_per_block = blocks->bytes_per_block;
  } else {
    info.encoding = ROOTSPAN_ENCODING_DENSE;
  }
  info.rank = static_cast<std::uint32_t>(c.dimensions.size());
  info.shape = c.dimensions.empty() ? nullptr : c.dimensions.data();
  info.source_name = c.source.c_str();
  info.gguf_type = c.gguf_type;
  info.source_file =
      c.source_file == weights::LoadedComponent::kNoSourceFile ? "" : result.source_files.at(c.source_file).c_str();
  info.source_offset = c.source_offset;
  info.source_contiguous = c.source_contiguous ? 1 : 0;
  return info;
}

// Every live rootspan_weights. Never destroyed: a call may come while the
// program exits.
rootspan::LiveHandles<rootspan_weights> &live_weights() {
  static auto *live = new rootspan::LiveHandles<rootspan_weights>();
  return *live;
}

constexpr const char *kNotLive =
    "weights is not a live handle: it was freed (rootspan_weights_free), here or on another thread, or was never "
    "made by rootspan_weights_load";

// A call's hold on a live handle: the object, kept alive to the end of the
// call, and its lock (shared to read, unique to release roots).
template <class Lock>
struct Held {
  std::shared_ptr<rootspan_weights> weights;  // declared first: outlives the lock
  Lock lock;
  rootspan_weights *operator->() const { return weights.get(); }
  rootspan_weights &operator*() const { return *weights; }
};
using Reading = std::shared_lock<std::shared_mutex>;
using Writing = std::unique_lock<std::shared_mutex>;

// The handle held, or nullopt when it is not live (freed, or never made).
template <class Lock>
std::optional<Held<Lock>> hold(const rootspan_weights *handle) {
  std::shared_ptr<rootspan_weights> found = live_weights().find(handle);
  if (found == nullptr) return std::nullopt;
  Lock lock(found->lock);
  if (found->freed) return std::nullopt;  // freed while this call waited for the lock
  return Held<Lock>{std::move(found), std::move(lock)};
}

// rootspan_weights_find's search, on a held handle: by id, then by the
// names of the components found by name. Where the index cannot be made
// (out of memory), the same search walks the components.
bool find_in(const rootspan_weights &weights, std::string_view id, std::size_t &index) {
  try {
    const rootspan_weights::NameIndex &names = weights.names();
    for (const auto *table : {&names.by_id, &names.by_source}) {
      const auto found = table->find(id);
      if (found != table->end()) {
        index = found->second;
        return true;
      }
    }
    return false;
  } catch (const std::bad_alloc &) {
    const auto &components = weights.result.components;
    for (const bool by_source : {false, true}) {
      for (std::size_t i = 0; i < components.size(); ++i) {
        const auto &c = components[i];
        if (by_source ? rootspan_weights::found_by_source(c) && c.source == id : c.id == id) {
          index = i;
          return true;
        }
      }
    }
    return false;
  }
}

// What a lookup of `missing` could have meant, for its NotFound: the reason
// it was skipped, or the loaded ids nearest to it, or the first few.
std::string what_is_there(const rootspan_weights &held, std::string_view missing) {
  constexpr std::size_t kShown = 3;
  for (const weights::SkippedComponent &skipped : held.result.skipped) {
    if (skipped.id == missing) return "skipped: " + skipped.reason;
  }
  const auto &components = held.result.components;
  if (components.empty()) return "nothing was loaded";
  std::vector<std::string_view> names;
  names.reserve(components.size());
  for (const weights::LoadedComponent &c : components) names.push_back(c.id);
  // Then the tensor names outside the id rule, in component order.
  for (const weights::LoadedComponent &c : components) {
    if (rootspan_weights::found_by_source(c)) names.push_back(c.source);
  }
  const auto listed = [](std::span<const std::string_view> shown) {
    std::string out;
    for (std::string_view name : shown) out += (out.empty() ? "" : ", ") + rootspan::quoted_text(name);
    return out;
  };
  const std::string loaded = std::to_string(components.size()) + " loaded";
  const std::vector<std::string_view> near = rootspan::closest_names(missing, names, kShown);
  if (!near.empty()) return loaded + "; closest: " + listed(near);
  const std::size_t shown = std::min(kShown, components.size());
  return loaded + ": " + listed(std::span(names).first(shown)) + (components.size() > shown ? ", ..." : "");
}

// A copy of text the caller frees with rootspan_string_free.
char *c_string(const std::string &text) {
  auto *out = static_cast<char *>(std::malloc(text.size() + 1));
  if (out == nullptr) throw std::bad_alloc();
  std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

// A C string option: NULL is "not given".
std::optional<std::string> optional_string(const char *text) {
  return text == nullptr ? std::nullopt : std::optional<std::string>(text);
}

// The slicing of options (rank, world size, split rules); NULL rules with a
// count, a NULL rule pattern or a short rule struct_size is the caller's
// mistake.
Result<weights::ShardSpec> shard_spec(const rootspan_load_options &o, const char *operation) {
  if (o.split_rule_count != 0 && o.split_rules == nullptr) {
    return rootspan::make_error(
        ROOTSPAN_ERR_INVALID_ARGUMENT, operation,
        "options.split_rules is NULL, but options.split_rule_count is " + std::to_string(o.split_rule_count));
  }
  if (o.split_convention != ROOTSPAN_SPLIT_TENSOR_SPLIT && o.split_convention != ROOTSPAN_SPLIT_CHUNK) {
    return rootspan::with_request(
        rootspan::unknown_enum("split_convention", "rootspan_split_convention", o.split_convention), operation,
        rootspan::Requested::none());
  }
  weights::ShardSpec spec{o.rank,
                          o.world_size,
                          {},
                          o.split_convention == ROOTSPAN_SPLIT_CHUNK ? weights::SplitConvention::kChunk
                                                                     : weights::SplitConvention::kTensorSplit};
  // The rules lie as the caller's compiler laid out its version of the
  // struct: the first rule's struct_size, rounded up to the struct's
  // alignment, is the distance between rules (a newer, longer struct is not
  // read at the stride this library was built with). Every rule must say the
  // same size.
  const std::size_t first_size = o.split_rule_count == 0 ? 0 : o.split_rules[0].struct_size;
  // No version of the struct will be this long: a larger size is a mistake,
  // and a stride from it would point far past the caller's array.
  constexpr std::size_t kLargestRule = 1024;
  if (first_size > kLargestRule) {
    return rootspan::make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, operation,
                                "options.split_rules[0].struct_size is too large for any version of the struct",
                                kLargestRule, first_size);
  }
  const std::size_t stride =
      (first_size + alignof(rootspan_split_rule) - 1) / alignof(rootspan_split_rule) * alignof(rootspan_split_rule);
  const auto *bytes = reinterpret_cast<const std::byte *>(o.split_rules);
  for (std::size_t i = 0; i < o.split_rule_count; ++i) {
    const auto &element = *reinterpret_cast<const rootspan_split_rule *>(bytes + i * stride);
    if (element.struct_size < ROOTSPAN_SPLIT_RULE_STRUCT_SIZE) {
      return rootspan::make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, operation,
                                  "options.split_rules[" + std::to_string(i) + "].struct_size is too small",
                                  ROOTSPAN_SPLIT_RULE_STRUCT_SIZE, element.struct_size);
    }
    if (element.struct_size != first_size) {
      return rootspan::make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, operation,
                                  "options.split_rules[" + std::to_string(i) +
                                      "].struct_size differs from split_rules[0]'s (every rule of one array is "
                                      "one version of the struct)",
                                  first_size, element.struct_size);
    }
    const rootspan_split_rule &given = element;  // pattern and dimension lie within the size checked
    if (given.pattern == nullptr) {
      return rootspan::make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, operation,
                                  "options.split_rules[" + std::to_string(i) + "].pattern is NULL");
    }
    spec.rules.push_back({given.pattern, given.dimension});
  }
  return spec;
}

// `count` C strings of `array` (options.`field`, counted by options.`count_field`):
// a NULL array with a count, or a NULL entry, is the caller's mistake.
Result<std::vector<std::string>> string_array(const char *const *array, std::size_t count, const char *field,
                                              const char *count_field, const char *operation) {
  if (count != 0 && array == nullptr) {
    return rootspan::make_error(
        ROOTSPAN_ERR_INVALID_ARGUMENT, operation,
        std::string("options.") + field + " is NULL, but options." + count_field + " is " + std::to_string(count));
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < count; ++i) {
    if (array[i] == nullptr) {
      return rootspan::make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, operation,
                                  std::string("options.") + field + "[" + std::to_string(i) + "] is NULL");
    }
    out.emplace_back(array[i]);
  }
  return out;
}

// The signature options, checked for form: a key or a chain goes with a
// signature, and a chain's paths are not NULL.
Result<std::optional<weights::SignatureRequest>> signature_request(const rootspan_load_options &o,
                                                                   const char *operation) {
  const bool keys = o.public_key_path != nullptr || o.certificate_chain_count != 0;
  if (o.signature_path == nullptr) {
    if (!keys && o.ignore_unsigned_files == 0) return std::nullopt;
    return rootspan::make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, operation,
                                "options.public_key_path, certificate_chain_paths and ignore_unsigned_files check a "
                                "signature: options.signature_path is NULL");
  }
  if (!keys) {
    return rootspan::make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, operation,
                                "options.signature_path needs a public key (public_key_path) or certificates to "
                                "trust (certificate_chain_paths) to be checked with");
  }
  auto chain = string_array(o.certificate_chain_paths, o.certificate_chain_count, "certificate_chain_paths",
                            "certificate_chain_count", operation);
  if (!chain) return chain.error();
  weights::SignatureRequest request;
  request.bundle = o.signature_path;
  if (o.public_key_path != nullptr) request.public_key = o.public_key_path;
  request.certificate_chain.assign(chain.value().begin(), chain.value().end());
  request.ignore_unsigned_files = o.ignore_unsigned_files != 0;
  return std::optional<weights::SignatureRequest>(std::move(request));
}

// A C request decoded once: the patterns and the slicing are checked before
// any file is opened. Decoding errors are named after `operation`, the call
// the caller made.
Result<weights::LoadRequest> request_of(const char *path, const rootspan_load_options &o, const char *operation) {
  weights::LoadRequest request;
  request.path = path;
  request.revision = optional_string(o.revision);
  if (o.schema_path != nullptr) request.schema = o.schema_path;
  auto patterns = string_array(o.tensors, o.tensor_count, "tensors", "tensor_count", operation);
  if (!patterns) return patterns.error();
  request.patterns = std::move(patterns).value();
  if (o.world_size != 0) {
    auto spec = shard_spec(o, operation);
    if (!spec) return spec.error();
    request.spec = std::move(spec).value();
  }
  request.check_digests = o.check_digests != 0;
  if (o.digests_path != nullptr) request.digests_manifest = o.digests_path;
  auto signature = signature_request(o, operation);
  if (!signature) return signature.error();
  request.signature = std::move(signature).value();
  return request;
}

// The strategy a C caller asked for; an unknown value is refused by name.
Result<weights::Strategy> strategy_of(rootspan_load_strategy strategy) {
  switch (strategy) {
    case ROOTSPAN_LOAD_MMAP:
      return weights::Strategy::kMmap;
    case ROOTSPAN_LOAD_READ:
      return weights::Strategy::kRead;
    case ROOTSPAN_LOAD_DIRECT:
      return weights::Strategy::kDirect;
    case ROOTSPAN_LOAD_AUTO:
      return weights::Strategy::kAuto;
    default:
      break;
  }
  return rootspan::with_request(rootspan::unknown_enum("strategy", "rootspan_load_strategy", strategy), "weights_load",
                                rootspan::Requested::none());
}

// The read report's "reads" object (weights.h, rootspan_weights_read_report).
nlohmann::json reads_json(const weights::ParallelReadStats &stats) {
  nlohmann::json fallbacks = nlohmann::json::array();
  for (const auto &[file, reason] : stats.fallbacks) fallbacks.push_back({{"file", file}, {"reason", reason}});
  return {{"engine", weights::read_engine_name(stats.engine)},
          {"engine_note", stats.engine_note},
          {"threads", stats.threads},
          {"queue_depth", stats.queue_depth},
          {"max_bytes_in_flight", stats.max_bytes_in_flight},
          {"requests", stats.requests},
          {"bytes", stats.bytes},
          {"direct_bytes", stats.direct_bytes},
          {"bounced_bytes", stats.bounced_bytes},
          {"peak_requests_in_flight", stats.peak_requests_in_flight},
          {"peak_bytes_in_flight", stats.peak_bytes_in_flight},
          {"fallbacks", fallbacks}};
}

}  // namespace

extern "C" {

rootspan_status rootspan_weights_load(rootspan_context *context, const char *path, const rootspan_load_options *options,
                                      rootspan_weights **out, rootspan_error **error) {
  // Arguments are checked under the name of the call itself; what goes wrong
  // later is named after its phase (open_checkpoint, load_component, ...).
  if (context == nullptr || path == nullptr || out == nullptr) {
    return invalid(error, "weights_load", "context, path or weights is NULL");
  }
  if (options != nullptr) {
    if (rootspan_status s = check_struct(error, options, "weights_load", "options"); s != ROOTSPAN_OK) return s;
  }
  *out = nullptr;
  return guarded(error, "load_component", [&]() -> Result<void> {
    rootspan_load_options o{};
    o.struct_size = sizeof o;
    if (options != nullptr) o = read_struct(options);
    auto strategy = strategy_of(o.strategy);
    if (!strategy) return strategy.error();
    auto request = request_of(path, o, "weights_load");
    if (!request) return request.error();
    weights::LoadOptions load;
    load.provider = o.provider == nullptr ? "auto" : o.provider;
    load.device = o.device;
    load.strategy = strategy.value();
    load.copy_on_write = o.copy_on_write != 0;
    load.populate = o.populate != 0;
    load.populate_when_cold = o.populate_when_cold != 0;
    load.source_digests = o.source_digests != 0;
    // Checked here, before any file is opened (0 is the default).
    auto staging = weights::checked_staging_shape({o.staging_buffer_count, o.staging_buffer_bytes});
    if (!staging) return staging.error();
    load.staging = staging.value();
    if (o.progress != nullptr) {
      load.progress = [&o](const weights::LoadProgress &p) {
        const rootspan_load_progress progress{sizeof(rootspan_load_progress),
                                              p.component != nullptr ? p.component->c_str() : "",
                                              p.component_index,
                                              p.component_count,
                                              p.bytes_done,
                                              p.bytes_total};
        return o.progress(o.progress_context, &progress) == 0;
      };
    }
    rootspan::Context &ctx = *context->context;
    auto loaded = weights::run_load(ctx, request.value(), std::move(load));
    if (!loaded) return loaded.error();
    *out = live_weights().add(std::make_shared<rootspan_weights>(&ctx, std::move(loaded).value()));
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

rootspan_status rootspan_weights_bytes_read(const rootspan_weights *weights, uint64_t *bytes) {
  if (weights == nullptr || bytes == nullptr) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  const auto held = hold<Reading>(weights);
  if (!held) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  *bytes = (*held)->result.total_bytes;
  return ROOTSPAN_OK;
}

const char *rootspan_weights_provider(const rootspan_weights *weights) {
  const auto held = hold<Reading>(weights);
  return held ? (*held)->result.provider.c_str() : nullptr;
}

rootspan_status rootspan_weights_component_count(const rootspan_weights *weights, size_t *count) {
  if (weights == nullptr || count == nullptr) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  const auto held = hold<Reading>(weights);
  if (!held) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  *count = (*held)->result.components.size();
  return ROOTSPAN_OK;
}

rootspan_status rootspan_weights_component(const rootspan_weights *weights, size_t index,
                                           rootspan_component_info *info) {
  if (weights == nullptr || !struct_size_ok(info)) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  const auto held = hold<Reading>(weights);
  if (!held) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  const weights::LoadResult &result = (*held)->result;
  if (index >= result.components.size()) return ROOTSPAN_ERR_NOT_FOUND;
  write_struct(info, info_of(result, result.components[index]));
  return ROOTSPAN_OK;
}

rootspan_status rootspan_weights_find(const rootspan_weights *weights, const char *id, size_t *index) {
  if (weights == nullptr || id == nullptr || index == nullptr) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  const auto held = hold<Reading>(weights);
  if (!held) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  return find_in(**held, id, *index) ? ROOTSPAN_OK : ROOTSPAN_ERR_NOT_FOUND;
}

rootspan_status rootspan_weights_lookup(const rootspan_weights *weights, const char *id, size_t *index,
                                        rootspan_error **error) {
  constexpr const char *kOperation = "weights_lookup";
  if (weights == nullptr || id == nullptr || index == nullptr) {
    return invalid(error, kOperation, "weights, id or index is NULL");
  }
  // Shared: other calls go on while a miss is explained (its search is
  // bounded: closest_names.hpp); a release or free waits for it.
  const auto held = hold<Reading>(weights);
  if (!held) return invalid(error, kOperation, kNotLive);
  if (find_in(**held, id, *index)) return ROOTSPAN_OK;
  if (error == nullptr) return ROOTSPAN_ERR_NOT_FOUND;  // no one to tell why
  try {
    const std::string missed = "no loaded component has the id or tensor name " + rootspan::quoted_text(id);
    std::string there;
    try {
      there = " (" + what_is_there(**held, id) + ")";
    } catch (const std::bad_alloc &) {
      // Still a miss: said without what is there.
    }
    return report(error, rootspan::make_error(ROOTSPAN_ERR_NOT_FOUND, kOperation, missed + there));
  } catch (const std::bad_alloc &) {
    *error = nullptr;  // a miss all the same, told as report() tells one it cannot allocate
    return ROOTSPAN_ERR_NOT_FOUND;
  }
}

const char *rootspan_role_name(rootspan_component_role role) {
  if (role < ROOTSPAN_ROLE_VALUES || role > ROOTSPAN_ROLE_METADATA) return "";
  return weights::role_name(static_cast<ComponentRole>(role)).data();  // the names are NUL-terminated literals
}

rootspan_status rootspan_weights_skipped_count(const rootspan_weights *weights, size_t *count) {
  if (weights == nullptr || count == nullptr) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  const auto held = hold<Reading>(weights);
  if (!held) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  *count = (*held)->result.skipped.size();
  return ROOTSPAN_OK;
}

rootspan_status rootspan_weights_skipped(const rootspan_weights *weights, size_t index, const char **id,
                                         const char **reason) {
  if (weights == nullptr) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  const auto held = hold<Reading>(weights);
  if (!held) return ROOTSPAN_ERR_INVALID_ARGUMENT;
  const auto &skipped = (*held)->result.skipped;
  if (index >= skipped.size()) return ROOTSPAN_ERR_NOT_FOUND;
  if (id != nullptr) *id = skipped[index].id.c_str();
  if (reason != nullptr) *reason = skipped[index].reason.c_str();
  return ROOTSPAN_OK;
}

rootspan_status rootspan_weights_component_sha256(rootspan_weights *weights, size_t index, char hex[65],
                                                  rootspan_error **error) {
  if (weights == nullptr || hex == nullptr) return invalid(error, "verify", "weights or hex is NULL");
  return guarded(error, "verify", [&]() -> Result<void> {
    rootspan::Root *root = nullptr;
    struct Keep {  // a claim that holds the root while it is hashed, after the lock is let go
      rootspan::Claim *claim = nullptr;
      ~Keep() {
        if (claim != nullptr) (void)rootspan::claim_release(*claim);
      }
    } keep;
    {
      const auto held = hold<Reading>(weights);
      if (!held) return rootspan::make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, "verify", kNotLive);
      const auto &components = (*held)->result.components;
      if (index >= components.size()) {
        return rootspan::make_error(
            ROOTSPAN_ERR_INVALID_ARGUMENT, "verify",
            "index " + std::to_string(index) + " is past the " + std::to_string(components.size()) + " components",
            components.size(), index);
      }
      const weights::LoadedComponent &component = components[index];
      if (component.root == nullptr) {
        return rootspan::make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, "verify",
                                    "component \"" + component.id + "\" was released on its own");
      }
      root = component.root;
      if (root->extent.length == 0) {  // nothing to claim or read: hashed here, under the lock
        auto digest = weights::root_sha256(*root);
        if (!digest) return digest.error();
        std::memcpy(hex, digest.value().c_str(), 65);
        return BOOST_OUTCOME_V2_NAMESPACE::success();
      }
      // Claimed before the lock is let go: a release or free on another
      // thread now fails with Busy instead of freeing the root being read.
      ROOTSPAN_ASSIGN_OR_RETURN(keep.claim,
                                rootspan::claim_acquire(*root, 0, root->extent.length, ROOTSPAN_CLAIM_SHARED));
    }
    auto digest = weights::root_sha256(*root);
    if (!digest) return digest.error();
    std::memcpy(hex, digest.value().c_str(), 65);
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

rootspan_status rootspan_weights_source_sha256(const rootspan_weights *weights, size_t index, char hex[65],
                                               rootspan_error **error) {
  constexpr const char *kOperation = "weights_source_sha256";
  if (weights == nullptr || hex == nullptr) return invalid(error, kOperation, "weights or hex is NULL");
  return guarded(error, kOperation, [&]() -> Result<void> {
    const auto held = hold<Reading>(weights);
    if (!held) return rootspan::make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation, kNotLive);
    const auto &components = (*held)->result.components;
    if (index >= components.size()) {
      return rootspan::make_error(
          ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation,
          "index " + std::to_string(index) + " is past the " + std::to_string(components.size()) + " components",
          components.size(), index);
    }
    const weights::LoadedComponent &component = components[index];
    if (component.source_sha256.empty()) {
      return rootspan::make_error(
          ROOTSPAN_ERR_NOT_FOUND, kOperation,
          "component \"" + component.id + "\" has no source digest: the load was not asked for source_digests");
    }
    std::memcpy(hex, component.source_sha256.c_str(), 65);
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

rootspan_status rootspan_weights_release_component(rootspan_weights *weights, size_t index, rootspan_error **error) {
  constexpr const char *kOperation = "weights_release_component";
  if (weights == nullptr) return invalid(error, kOperation, "weights is NULL");
  const auto held = hold<Writing>(weights);
  if (!held) return invalid(error, kOperation, kNotLive);
  auto &components = (*held)->result.components;
  if (index >= components.size()) {
    return report(error, rootspan::make_error(ROOTSPAN_ERR_NOT_FOUND, kOperation,
                                              "no component at index " + std::to_string(index) + "; the weights hold " +
                                                  std::to_string(components.size()),
                                              components.size(), index));
  }
  weights::LoadedComponent &component = components[index];
  if (component.root == nullptr) return ROOTSPAN_OK;
  const rootspan_status status = guarded(error, kOperation, [&] {
    return (*held)->context->release_together({component.root},
                                              [&](std::size_t) { return "component \"" + component.id + "\""; });
  });
  if (status == ROOTSPAN_OK) component.root = nullptr;
  return status;
}

namespace {
// One component claimed and mapped whole (rootspan_weights_map_components):
// exclusive and for writing unless its root is read-only.
rootspan::Result<rootspan_component_mapping> map_whole(const weights::LoadedComponent &component) {
  rootspan::Root &root = *component.root;
  const bool write = !root.read_only;
  rootspan::Claim *claim = nullptr;
  ROOTSPAN_ASSIGN_OR_RETURN(claim, rootspan::claim_acquire(root, 0, component.bytes,
                                                           write ? ROOTSPAN_CLAIM_EXCLUSIVE : ROOTSPAN_CLAIM_SHARED));
  auto mapped = rootspan::map_range(*claim, root.dtype, 0, component.bytes, write);
  if (!mapped) {
    (void)rootspan::claim_release(*claim);
    return std::move(mapped).error();
  }
  const rootspan::Mapping &mapping = *mapped.value();
  return rootspan_component_mapping{sizeof(rootspan_component_mapping),
                                    reinterpret_cast<rootspan_claim *>(claim),
                                    reinterpret_cast<rootspan_mapping *>(mapped.value()),
                                    mapping.provider.data,
                                    mapping.provider.byte_length,
                                    write ? 1 : 0};
}
}  // namespace

namespace {

// Each of mappings[0 .. count - 1] has a published struct_size; the refusal
// names the first that has not ("mappings[i]").
rootspan_status check_mappings(rootspan_error **error, const rootspan_component_mapping *mappings, std::size_t count,
                               const char *operation) {
  for (std::size_t i = 0; i < count; ++i) {
    if (struct_size_ok(&mappings[i])) continue;  // the argument's name is built only for a refusal
    const std::string argument = "mappings[" + std::to_string(i) + "]";
    return check_struct(error, &mappings[i], operation, argument.c_str());
  }
  return ROOTSPAN_OK;
}

}  // namespace

rootspan_status rootspan_weights_map_components(rootspan_weights *weights, size_t first, size_t count,
                                                rootspan_component_mapping *mappings, rootspan_error **error) {
  constexpr const char *kOperation = "weights_map_components";
  if (weights == nullptr || mappings == nullptr) return invalid(error, kOperation, "weights or mappings is NULL");
  const auto held = hold<Reading>(weights);
  if (!held) return invalid(error, kOperation, kNotLive);
  const auto &components = (*held)->result.components;
  if (first > components.size() || count > components.size() - first) {
    return report(error, rootspan::make_error(ROOTSPAN_ERR_NOT_FOUND, kOperation,
                                              "components [" + std::to_string(first) + ", " + std::to_string(first) +
                                                  " + " + std::to_string(count) + ") run past the " +
                                                  std::to_string(components.size()) + " the weights hold",
                                              components.size(), first + count));
  }
  if (rootspan_status s = check_mappings(error, mappings, count, kOperation); s != ROOTSPAN_OK) return s;
  return guarded(error, kOperation, [&]() -> rootspan::Result<void> {
    // All or nothing: what this call made goes back unless every component was mapped.
    struct Made {
      std::vector<rootspan_component_mapping> mappings;
      bool kept = false;
      ~Made() {
        if (kept) return;
        for (const rootspan_component_mapping &m : mappings) {
          rootspan::unmap(*mapping_of(m.mapping));
          (void)rootspan::claim_release(*claim_of(m.claim));
        }
      }
    } made;
    made.mappings.reserve(count);
    // Every component is checked against its file's size as of one fstat a
    // file in this call (a file truncated since the load fails the call).
    const weights::MappedFile::CoverageBatch coverage;
    for (std::size_t i = 0; i < count; ++i) {
      const weights::LoadedComponent &component = components[first + i];
      auto what = [&] { return "component \"" + component.id + "\" (index " + std::to_string(first + i) + ")"; };
      if (component.root == nullptr) {
        return rootspan::make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation,
                                    what() + " was released (rootspan_weights_release_component)");
      }
      auto mapped = map_whole(component);
      if (!mapped) {
        rootspan::Diagnostic failure = std::move(mapped).error();
        failure.cause = what() + ": " + failure.cause;
        return failure;
      }
      made.mappings.push_back(mapped.value());
    }
    for (std::size_t i = 0; i < count; ++i) write_struct(&mappings[i], made.mappings[i]);
    made.kept = true;
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

rootspan_status rootspan_weights_unmap_components(rootspan_component_mapping *mappings, size_t count,
                                                  rootspan_error **error) {
  constexpr const char *kOperation = "weights_unmap_components";
  if (mappings == nullptr && count != 0) return invalid(error, kOperation, "mappings is NULL with a non-zero count");
  if (rootspan_status s = check_mappings(error, mappings, count, kOperation); s != ROOTSPAN_OK) return s;
  return guarded(error, kOperation, [&]() -> rootspan::Result<void> {
    for (std::size_t i = 0; i < count; ++i) {
      rootspan_component_mapping &m = mappings[i];
      if (m.mapping != nullptr) {
        rootspan::unmap(*mapping_of(m.mapping));
        m.mapping = nullptr;
        m.data = nullptr;
      }
      if (m.claim == nullptr) continue;
      if (auto released = rootspan::claim_release(*claim_of(m.claim)); !released) {
        rootspan::Diagnostic failure = std::move(released).error();
        failure.operation = kOperation;
        failure.cause = "mappings[" + std::to_string(i) + "]: " + failure.cause;
        return failure;
      }
      m.claim = nullptr;
    }
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

rootspan_status rootspan_weights_free(rootspan_weights *weights, rootspan_error **error) {
  if (weights == nullptr) return ROOTSPAN_OK;
  const auto held = hold<Writing>(weights);
  if (!held) return invalid(error, "weights_free", kNotLive);
  // All or nothing: the claim checks and the releases under one hold.
  const auto &components = (*held)->result.components;
  std::vector<rootspan::Root *> roots;
  std::vector<std::size_t> indices;  // roots[i] is components[indices[i]]'s: its name for a Busy error
  roots.reserve(components.size());
  indices.reserve(components.size());
  for (std::size_t i = 0; i < components.size(); ++i) {
    if (components[i].root == nullptr) continue;  // released on its own
    roots.push_back(components[i].root);
    indices.push_back(i);
  }
  const auto name_of = [&](std::size_t i) { return "component \"" + components[indices[i]].id + "\""; };
  const rootspan_status status =
      guarded(error, "weights_free", [&] { return (*held)->context->release_together(roots, name_of); });
  if (status == ROOTSPAN_OK) {
    // Calls waiting for the lock see `freed`; later ones find no handle. The
    // object goes with the last hold (this one, or a waiting call's).
    (*held)->freed = true;
    live_weights().remove(weights);
  }
  return status;
}

rootspan_status rootspan_checkpoint_inspect(const char *path, char **json, rootspan_error **error) {
  return rootspan_checkpoint_inspect_with_options(path, nullptr, json, error);
}

rootspan_status rootspan_checkpoint_inspect_with_options(const char *path, const rootspan_inspect_options *options,
                                                         char **json, rootspan_error **error) {
  if (path == nullptr || json == nullptr) return invalid(error, "open_checkpoint", "path or json is NULL");
  if (options != nullptr) {
    if (rootspan_status s = check_struct(error, options, "open_checkpoint", "options"); s != ROOTSPAN_OK) return s;
  }
  *json = nullptr;
  return guarded(error, "open_checkpoint", [&]() -> Result<void> {
    rootspan_inspect_options o{};
    o.struct_size = sizeof o;
    if (options != nullptr) o = read_struct(options);
    weights::LoadRequest request;
    request.path = path;
    request.revision = optional_string(o.revision);
    if (o.schema_path == nullptr) {
      // The first step alone: no schema, nothing to resolve.
      auto checkpoint = weights::open_requested_checkpoint(request);
      if (!checkpoint) return checkpoint.error();
      *json = c_string(weights::describe_checkpoint(path, checkpoint.value()).dump());
      return BOOST_OUTCOME_V2_NAMESPACE::success();
    }
    request.schema = o.schema_path;
    auto prepared = weights::prepare_load(request);
    if (!prepared) return prepared.error();
    nlohmann::json document = weights::describe_checkpoint(path, prepared.value().checkpoint);
    document["schema"] = weights::describe_resolved_schema(o.schema_path, prepared.value().resolved);
    *json = c_string(document.dump());
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

rootspan_status rootspan_safetensors_describe(const void *bytes, size_t length, const char *name, char **json,
                                              rootspan_error **error) {
  if (json == nullptr || (bytes == nullptr && length != 0)) {
    return invalid(error, "open_checkpoint", "json is NULL, or bytes is NULL with a non-zero length");
  }
  *json = nullptr;
  return guarded(error, "open_checkpoint", [&]() -> Result<void> {
    const std::span<const std::byte> file(static_cast<const std::byte *>(bytes), length);
    auto parsed = weights::parse_safetensors(file, name == nullptr ? "<memory>" : name);
    if (!parsed) return parsed.error();
    *json = c_string(weights::describe_safetensors_file(parsed.value()));
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

rootspan_status rootspan_safetensors_describe_file(const char *path, char **json, rootspan_error **error) {
  if (path == nullptr || json == nullptr) return invalid(error, "open_checkpoint", "path or json is NULL");
  *json = nullptr;
  return guarded(error, "open_checkpoint", [&]() -> Result<void> {
    auto opened = weights::open_safetensors(std::filesystem::path(path), weights::ParsedDigests::kSkip);
    if (!opened) return opened.error();
    *json = c_string(weights::describe_safetensors_file(opened.value()));
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

rootspan_status rootspan_safetensors_each_tensor(const char *path, rootspan_safetensors_tensor_fn each, void *context,
                                                 char **metadata_json, rootspan_error **error) {
  if (metadata_json != nullptr) *metadata_json = nullptr;
  if (path == nullptr || each == nullptr) return invalid(error, "open_checkpoint", "path or each is NULL");
  return guarded(error, "open_checkpoint", [&]() -> Result<void> {
    auto opened = weights::open_safetensors(std::filesystem::path(path), weights::ParsedDigests::kSkip);
    if (!opened) return opened.error();
    const weights::SafetensorsFile &file = opened.value();
    const auto &tensors = file.header.tensors();
    rootspan_safetensors_tensor tensor{};
    tensor.struct_size = ROOTSPAN_SAFETENSORS_TENSOR_STRUCT_SIZE;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const weights::TensorInfo &t = tensors[i];
      tensor.name = t.name.c_str();
      tensor.dtype = t.dtype.name.data();  // a name of the dtype table: a NUL-terminated literal
      tensor.rank = static_cast<std::uint32_t>(t.shape.size());
      tensor.shape = t.shape.empty() ? nullptr : t.shape.data();
      tensor.offset = file.data_offset() + t.begin;
      tensor.byte_length = t.byte_length();
      if (each(context, &tensor) != 0) {
        return rootspan::make_error(ROOTSPAN_ERR_CANCELLED, "open_checkpoint",
                                    "the caller's function stopped the walk of " + rootspan::quoted_text(path) +
                                        " at tensor " + rootspan::quoted_text(t.name) + " (" + std::to_string(i + 1) +
                                        " of " + std::to_string(tensors.size()) + ")");
      }
    }
    if (metadata_json != nullptr) *metadata_json = c_string(weights::safetensors_metadata_json(file.header));
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

rootspan_status rootspan_checkpoint_read_plan(const char *path, const rootspan_load_options *options, char **json,
                                              rootspan_error **error) {
  if (path == nullptr || json == nullptr) return invalid(error, "plan_reads", "path or json is NULL");
  if (rootspan_status s = check_struct(error, options, "plan_reads", "options"); s != ROOTSPAN_OK) return s;
  *json = nullptr;
  return guarded(error, "plan_reads", [&]() -> Result<void> {
    const rootspan_load_options o = read_struct(options);
    if (o.world_size == 0) {
      return rootspan::make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, "plan_reads",
                                  "options.world_size is 0; a read plan needs at least 1 rank");
    }
    auto request = request_of(path, o, "plan_reads");
    if (!request) return request.error();
    auto prepared = weights::prepare_load(request.value());
    if (!prepared) return prepared.error();
    *json = c_string(weights::read_plan_json(*prepared.value().plan, *request.value().spec));
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

rootspan_status rootspan_weights_digests(const rootspan_weights *weights, char **json, rootspan_error **error) {
  if (weights == nullptr || json == nullptr) return invalid(error, "check_digests", "weights or json is NULL");
  *json = nullptr;
  return guarded(error, "check_digests", [&]() -> Result<void> {
    const auto held = hold<Reading>(weights);
    if (!held) return rootspan::make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, "check_digests", kNotLive);
    const rootspan_weights &w = **held;
    nlohmann::json verified = nlohmann::json::array(), unverifiable = nlohmann::json::array();
    for (const weights::DigestOutcome &d : w.result.digests) {
      verified.push_back(
          {{"kind", d.kind}, {"name", d.name}, {"bytes", d.bytes}, {"sha256", d.sha256}, {"source", d.source}});
    }
    for (const weights::Unverifiable &u : w.unverifiable) {
      unverifiable.push_back({{"file", u.file}, {"reason", u.reason}});
    }
    const nlohmann::json doc = {{"checked", w.checked_digests}, {"verified", verified}, {"unverifiable", unverifiable}};
    *json = c_string(doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

rootspan_status rootspan_weights_read_report(const rootspan_weights *weights, char **json, rootspan_error **error) {
  if (weights == nullptr || json == nullptr) return invalid(error, "read_report", "weights or json is NULL");
  *json = nullptr;
  return guarded(error, "read_report", [&]() -> Result<void> {
    const auto held = hold<Reading>(weights);
    if (!held) return rootspan::make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, "read_report", kNotLive);
    const weights::LoadResult &result = (*held)->result;
    const nlohmann::json doc = {{"requested", weights::strategy_name(result.requested_strategy)},
                                {"strategy", weights::strategy_name(result.strategy)},
                                {"reason", result.strategy_reason},
                                {"warmed_bytes", result.warmed_bytes},
                                {"reads", result.reads ? reads_json(*result.reads) : nlohmann::json(nullptr)}};
    *json = c_string(doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

rootspan_status rootspan_checkpoint_hash(const char *path, const rootspan_load_options *options, int32_t per_component,
                                         char **json, rootspan_error **error) {
  if (path == nullptr || json == nullptr) return invalid(error, "hash_checkpoint", "path or json is NULL");
  if (options != nullptr) {
    if (rootspan_status s = check_struct(error, options, "hash_checkpoint", "options"); s != ROOTSPAN_OK) return s;
  }
  *json = nullptr;
  return guarded(error, "hash_checkpoint", [&]() -> Result<void> {
    rootspan_load_options o{};
    o.struct_size = sizeof o;
    if (options != nullptr) o = read_struct(options);
    auto request = request_of(path, o, "hash_checkpoint");
    if (!request) return request.error();
    request.value().record_digests = true;
    auto prepared = weights::prepare_load(request.value());
    if (!prepared) return prepared.error();
    const std::optional<weights::ShardSpec> &spec = request.value().spec;
    auto manifest = weights::hash_checkpoint(prepared.value().checkpoint, prepared.value().resolved.payloads,
                                             per_component != 0, spec ? &*spec : nullptr);
    if (!manifest) return manifest.error();
    *json = c_string(weights::digest_manifest_json(manifest.value()));
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

rootspan_status rootspan_model_sign(const char *path, const rootspan_sign_options *options, char **json,
                                    rootspan_error **error) {
  if (path == nullptr || json == nullptr) return invalid(error, "sign_model", "path or json is NULL");
  if (rootspan_status s = check_struct(error, options, "sign_model", "options"); s != ROOTSPAN_OK) return s;
  *json = nullptr;
  return guarded(error, "sign_model", [&]() -> Result<void> {
    const rootspan_sign_options o = read_struct(options);
    if (o.private_key_path == nullptr) {
      return rootspan::make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, "sign_model", "options.private_key_path is NULL");
    }
    weights::SignRequest request;
    request.private_key = o.private_key_path;
    if (o.certificate_path != nullptr) request.certificate = o.certificate_path;
    auto chain = string_array(o.certificate_chain_paths, o.certificate_chain_count, "certificate_chain_paths",
                              "certificate_chain_count", "sign_model");
    if (!chain) return chain.error();
    request.certificate_chain.assign(chain.value().begin(), chain.value().end());
    auto ignored = string_array(o.ignore_paths, o.ignore_path_count, "ignore_paths", "ignore_path_count", "sign_model");
    if (!ignored) return ignored.error();
    request.ignore_paths = std::move(ignored).value();
    request.method = o.shards != 0 ? weights::SigningMethod::kShards : weights::SigningMethod::kFiles;
    request.shard_size = o.shard_size == 0 ? weights::kDefaultShardSize : o.shard_size;
    request.allow_symlinks = o.allow_symlinks != 0;
    if (o.signature_path != nullptr) request.signature = o.signature_path;
    auto folder = weights::model_folder(path, optional_string(o.revision));
    if (!folder) return folder.error();
    auto bundle = weights::sign_model(folder.value(), request);
    if (!bundle) return bundle.error();
    *json = c_string(bundle.value());
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  });
}

void rootspan_string_free(char *string) { std::free(string); }

}  // extern "C"
