#include "weights/pipeline/load_pipeline.hpp"

#include <algorithm>
#include <utility>

#include "core/loader/provider_choice.hpp"
#include "weights/schema/component_selection.hpp"
#include "weights/schema/schema.hpp"

namespace rootspan::weights {

namespace {

// The components the request selects of its schema file, or of one component per tensor.
Result<ComponentSchema> selected_schema(const Checkpoint &checkpoint, const LoadRequest &request) {
  if (!request.schema && !request.patterns.empty()) {
    if (auto selected = select_default_components(checkpoint, request.patterns)) return std::move(*selected);
  }
  auto schema = request.schema ? load_component_schema(*request.schema) : default_schema(checkpoint);
  if (!schema) return schema.error();
  return select_components(std::move(schema).value(), request.patterns);
}

bool checks_digests(const LoadRequest &request) {
  return request.check_digests || request.digests_manifest.has_value() || request.signature.has_value();
}

// The digests a verified load checks (none when it asks for no check): the
// signature's first, since its envelope is checked before anything else.
Result<DigestPlan> digest_plan(const LoadRequest &request, const PreparedLoad &prepared,
                               std::span<const ComponentPayload> payloads) {
  DigestPlan plan;
  if (request.signature) {
    auto jobs = plan_signature(prepared.checkpoint, *request.signature);
    if (!jobs) return jobs.error();
    plan.jobs = std::move(jobs).value();
  }
  if (!request.check_digests && !request.digests_manifest) return plan;
  std::optional<DigestManifest> manifest;
  if (request.digests_manifest) {
    auto read = read_digest_manifest(*request.digests_manifest);
    if (!read) return read.error();
    manifest = std::move(read).value();
  }
  auto published = plan_digests(prepared.checkpoint, payloads, request.spec ? &*request.spec : nullptr,
                                manifest ? &*manifest : nullptr);
  if (!published) return published.error();
  plan.jobs.insert(plan.jobs.end(), published.value().jobs.begin(), published.value().jobs.end());
  plan.checked = std::move(published.value().checked);
  plan.unverifiable = std::move(published.value().unverifiable);
  return plan;
}

}  // namespace

Result<Checkpoint> open_requested_checkpoint(const LoadRequest &request) {
  const bool digests = checks_digests(request) || request.record_digests;
  return Checkpoint::open(request.path, request.revision, digests ? ParsedDigests::kTake : ParsedDigests::kSkip);
}

Result<PreparedLoad> prepare_load(const LoadRequest &request) {
  auto checkpoint = open_requested_checkpoint(request);
  if (!checkpoint) return checkpoint.error();
  auto selected = selected_schema(checkpoint.value(), request);
  if (!selected) return selected.error();
  auto resolved = resolve_schema(checkpoint.value(), std::move(selected).value());
  if (!resolved) return resolved.error();
  std::optional<ReadPlan> plan;
  if (request.spec) {
    auto made = plan_reads(resolved.value().payloads, *request.spec);
    if (!made) return made.error();
    plan = std::move(made).value();
  }
  return PreparedLoad{std::move(checkpoint).value(), std::move(resolved).value(), std::move(plan)};
}

Result<std::vector<ComponentPayload>> payloads_to_read(PreparedLoad &prepared) {
  if (!prepared.plan) return std::move(prepared.resolved.payloads);
  return sliced_payloads(prepared.resolved.payloads, *prepared.plan);
}

std::vector<std::int32_t> gguf_source_types(const Checkpoint &checkpoint, std::span<const ComponentPayload> payloads) {
  std::vector<std::int32_t> types(payloads.size(), -1);
  if (!checkpoint.is_gguf()) return types;
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    const std::vector<std::string> &sources = payloads[i].component().sources;
    if (sources.empty() ||
        std::any_of(sources.begin(), sources.end(), [&](const std::string &s) { return s != sources.front(); })) {
      continue;
    }
    for (const Shard &shard : checkpoint.shards()) {
      if (const GgufTensor *t = shard.gguf->find_tensor(sources.front())) {
        types[i] = static_cast<std::int32_t>(t->type->id);
        break;
      }
    }
  }
  return types;
}

Result<FinishedLoad> run_load(Context &context, const LoadRequest &request, LoadOptions options) {
  // The provider first: a load that cannot be placed fails before any file work.
  auto provider = choose_provider(context.reports(), options.provider, options.device);
  if (!provider) return provider.error();
  options.provider = provider.value().provider;
  auto prepared = prepare_load(request);
  if (!prepared) return prepared.error();
  auto payloads = payloads_to_read(prepared.value());
  if (!payloads) return payloads.error();
  auto digests = digest_plan(request, prepared.value(), payloads.value());
  if (!digests) return digests.error();
  options.digests = std::move(digests.value().jobs);

  const std::vector<std::int32_t> types = gguf_source_types(prepared.value().checkpoint, payloads.value());
  ResolvedSchema resolved{std::move(payloads).value(), std::move(prepared.value().resolved.skipped)};
  auto loaded = load_components(context, prepared.value().checkpoint, std::move(resolved), options);
  if (!loaded) return loaded.error();
  FinishedLoad finished{std::move(loaded).value(), std::move(digests.value().unverifiable), checks_digests(request)};
  std::vector<LoadedComponent> &components = finished.result.components;
  for (std::size_t i = 0; i < components.size(); ++i) components[i].gguf_type = types.at(i);  // the payloads, in order
  std::vector<DigestOutcome> &checked = finished.result.digests;
  checked.insert(checked.begin(), digests.value().checked.begin(), digests.value().checked.end());
  return finished;
}

}  // namespace rootspan::weights
