// Which digests a verified load checks, and against what: the load's
// payloads (as this rank reads them) matched with the checkpoint's files and
// with the published digests, from a digest manifest or, without one, from
// the blob names of a Hugging Face cache (which names each large file by its
// SHA-256). Made before anything is read; the jobs are hashed while the load
// reads (parallel_hasher.hpp).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/diagnostic.hpp"
#include "weights/checkpoints/checkpoint.hpp"
#include "weights/digests/digest_manifest.hpp"
#include "weights/digests/parallel_hasher.hpp"
#include "weights/schema/payload.hpp"
#include "weights/schema/read_plan.hpp"

namespace rootspan::weights {

// A file the load reads whose digest nobody published.
struct Unverifiable {
  std::string file;
  std::string reason;
};

struct DigestPlan {
  std::vector<DigestJob> jobs;
  std::vector<DigestOutcome> checked;  // already checked: the index, whose text was hashed as it was read
  std::vector<Unverifiable> unverifiable;
};

// With a manifest: when it holds component digests made for this load's
// slicing (`spec`, nullptr: not sliced), one job per loaded component over
// exactly the ranges it reads, once each component's element type, shape
// and size are the published ones, and every file the load reads is named
// with its size and the SHA-256 of its header (Shard::header_sha256: the
// tensors' names, types, shapes and offsets, and the metadata, as parsed);
// otherwise one job per file the load reads, each of which the manifest
// must name with its size (and its header digest, where it gives one). A
// manifest naming a file the checkpoint lacks, a file the load reads that it
// does not name, a size, element type, shape or header digest that differs
// fails with ROOTSPAN_ERR_DIGEST_MISMATCH naming the file or component, the
// published value and the checkpoint's; a loaded component it has no digest
// for, with ROOTSPAN_ERR_NOT_FOUND.
// Without one: a job per file whose real path is a cache blob named by 64 hex
// digits; a blob named by a 40-hex git object id, or a file outside a cache,
// is unverifiable. The index of a sharded checkpoint is checked the same way
// (a cache keeps it in git: usually unverifiable), at once. No job at all fails with ROOTSPAN_ERR_NOT_FOUND: there is
// nothing to check against, and a load is never called verified without a
// check. Operation "check_digests".
Result<DigestPlan> plan_digests(const Checkpoint &checkpoint, std::span<const ComponentPayload> payloads,
                                const ShardSpec *spec, const DigestManifest *manifest);

// A job per component over exactly the ranges its payload reads (sliced
// payloads: one rank's), for `rootspan hash --per-tensor`; nothing expected.
std::vector<DigestJob> component_jobs(const Checkpoint &checkpoint, std::span<const ComponentPayload> payloads);

// A job per file of the checkpoint, for `rootspan hash`; nothing expected.
std::vector<DigestJob> file_jobs(const Checkpoint &checkpoint);

// `rootspan hash`: the manifest of `checkpoint` (format_version
// kDigestManifestVersion): every file's size and SHA-256, a shard's with the
// SHA-256 of its header as it was parsed (read again here, it must still be
// that), the index's as it was read; with `per_component`, each component's
// SHA-256, bytes, element type and shape as each rank of `spec` (its rank
// ignored; nullptr: one rank reading each component whole) reads it.
// `payloads`: the resolved payloads, not sliced. Errors: a read error, a
// header changed since it was parsed (ROOTSPAN_ERR_DIGEST_MISMATCH), a
// read plan's.
Result<DigestManifest> hash_checkpoint(const Checkpoint &checkpoint, std::span<const ComponentPayload> payloads,
                                       bool per_component, const ShardSpec *spec);

}  // namespace rootspan::weights
