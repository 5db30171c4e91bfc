// The load pipeline: the one sequence every request about a checkpoint runs,
// whichever entry point it came through (weights.h's load, read plan, hash
// and inspect, the CLI's commands, Python). A request is decoded once into a
// LoadRequest, so a malformed one fails before any file is opened (the
// staging ring's bounds too: the C entry point checks them as it decodes,
// with checked_staging_shape, which load_components applies again for its
// callers that come straight to it); then
//
//   open -> schema -> select -> resolve -> plan        (prepare_load)
//   -> the digests a verified load checks (and a signed model's) -> place  (run_load)
//
// with the provider chosen before any file is opened (after the request is
// decoded, which opens nothing), so that a load on a provider or device that
// does not exist fails before any file work.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/diagnostic.hpp"
#include "weights/checkpoints/checkpoint.hpp"
#include "weights/digests/digest_plan.hpp"
#include "weights/placement/materialize.hpp"
#include "weights/schema/read_plan.hpp"
#include "weights/schema/resolve.hpp"
#include "weights/signing/signed_model.hpp"

namespace rootspan::weights {

// What a caller asks of a checkpoint, decoded and checked for form.
struct LoadRequest {
  std::filesystem::path path;                   // what Checkpoint::open takes
  std::optional<std::string> revision;          // of a Hugging Face cache repository
  std::optional<std::filesystem::path> schema;  // a component schema file; none: one component per tensor
  std::vector<std::string> patterns;            // the components selected (select_components); empty: all
  std::optional<ShardSpec> spec;                // set: only this rank's slices are read (read_plan.hpp)
  // A verified load (digest_plan.hpp): check what is published, from this
  // manifest or, without one, from a Hugging Face cache's blob names.
  bool check_digests = false;
  std::optional<std::filesystem::path> digests_manifest;  // implies check_digests
  // A signed model (signed_model.hpp): the signature checked before any
  // file is read, then each signed file hashed as check_digests does.
  std::optional<SignatureRequest> signature;
  // A digest manifest is made of the checkpoint (rootspan_checkpoint_hash):
  // it records the digests of what opening parsed, as a verified load checks them.
  bool record_digests = false;
};

// A request as far as the files' headers take it: nothing read but headers,
// the index and the schema.
struct PreparedLoad {
  Checkpoint checkpoint;
  ResolvedSchema resolved;       // every selected component, whole
  std::optional<ReadPlan> plan;  // this rank's reads, set when the request has a spec
};

// The first step alone: the checkpoint the request names (inspect without a
// schema stops here), its headers and index hashed as parsed only for a
// request that checks or records digests (ParsedDigests).
Result<Checkpoint> open_requested_checkpoint(const LoadRequest &request);

// open -> schema -> select -> resolve -> plan. Errors are those of each
// step, under the step's operation name (open_checkpoint, plan_reads, ...).
Result<PreparedLoad> prepare_load(const LoadRequest &request);

// The payloads a prepared request reads: this rank's slices, or every
// component whole (moved out of `prepared.resolved`).
Result<std::vector<ComponentPayload>> payloads_to_read(PreparedLoad &prepared);

// The ggml type id of each payload's GGUF source tensor: a payload of one
// source tensor (or of slices of one) has that tensor's type; -1 otherwise,
// and for every payload of a safetensors checkpoint.
std::vector<std::int32_t> gguf_source_types(const Checkpoint &checkpoint, std::span<const ComponentPayload> payloads);

// A finished load, and what its digest check found.
struct FinishedLoad {
  LoadResult result;                       // result.digests: the index's first, then the jobs'
  std::vector<Unverifiable> unverifiable;  // files read that had no digest published
  bool checked_digests = false;            // the request asked for a check (digests or a signature)
};

// The whole load. `options.provider` may be "auto" (provider_choice.hpp):
// it is chosen among context's providers first; options.digests is filled
// from the request's digest plan.
Result<FinishedLoad> run_load(Context &context, const LoadRequest &request, LoadOptions options);

}  // namespace rootspan::weights
