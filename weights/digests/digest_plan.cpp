#include "weights/digests/digest_plan.hpp"

#include <map>
#include <set>

#include "core/sha256.hpp"
#include "core/text/quoting.hpp"
#include "weights/checkpoints/hf_cache.hpp"

namespace rootspan::weights {

namespace {

constexpr const char *kOperation = "check_digests";
constexpr const char *kManifest = "digest manifest";
constexpr const char *kCacheBlob = "cache blob name";

const Shard *shard_at(const Checkpoint &checkpoint, const std::filesystem::path &path) {
  for (const Shard &shard : checkpoint.shards()) {
    if (shard.path == path) return &shard;
  }
  return nullptr;
}

DigestJob whole_file(const Shard &shard, std::string source, std::string expected) {
  const StridedRange whole{0, shard.input->size(), 1, shard.input->size()};
  return {"file", shard.file, std::move(source), std::move(expected), {{shard.input, whole}}};
}

// The shards the payloads read from, in checkpoint order.
std::vector<const Shard *> shards_read(const Checkpoint &checkpoint, std::span<const ComponentPayload> payloads) {
  std::set<std::filesystem::path> paths;
  for (const ComponentPayload &payload : payloads) {
    for (const Segment &segment : payload.segments()) paths.insert(segment.path());
  }
  std::vector<const Shard *> out;
  for (const Shard &shard : checkpoint.shards()) {
    if (paths.count(shard.path) != 0) out.push_back(&shard);
  }
  return out;
}

DigestJob component_job(const Checkpoint &checkpoint, const ComponentPayload &payload) {
  DigestJob job{"component", payload.component().id, kManifest, "", {}};
  for (const Segment &segment : payload.segments()) {
    const Shard *shard = shard_at(checkpoint, segment.path());
    if (shard != nullptr && segment.length() != 0) {
      job.ranges.push_back(
          {shard->input, {segment.file_offset(), segment.row_length(), segment.rows(), segment.stride()}});
    }
  }
  return job;
}

// Why a file outside a manifest has no digest to check against.
std::string unverifiable_reason(const std::filesystem::path &real) {
  const std::string blob = real.filename().string();
  if (!is_cache_blob(real)) return "not a blob of a Hugging Face cache, and no digest manifest";
  if (is_git_object_id(blob)) return "its cache blob is named by a git object id (" + blob + "), not by a SHA-256";
  return "its cache blob name " + quoted_text(blob) + " is not a SHA-256";
}

Diagnostic index_mismatch(const IndexFile &index, const std::string &expected, const char *source) {
  return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, kOperation,
                    "file " + quoted_text(index.file) + " is not the published one: its SHA-256 is " + index.sha256 +
                        ", expected " + expected + " (from the " + source + ")");
}

Result<DigestPlan> from_manifest(const Checkpoint &checkpoint, std::span<const ComponentPayload> payloads,
                                 const ShardSpec *spec, const DigestManifest &manifest) {
  std::set<std::string> names;
  for (const Shard &shard : checkpoint.shards()) names.insert(shard.file);
  const std::optional<IndexFile> &index = checkpoint.index_file();
  if (index) names.insert(index->file);
  for (const auto &[file, entry] : manifest.files) {
    if (names.count(file) == 0) {
      std::string have;
      for (const std::string &name : names) have += (have.empty() ? "" : ", ") + quoted_text(name);
      return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, kOperation,
                        "the digest manifest names file " + quoted_text(file) + ", which checkpoint " +
                            quoted_text(checkpoint.folder().string()) + " does not have (it has " + have + ")");
    }
  }
  DigestPlan plan;
  if (index) {
    if (const auto found = manifest.files.find(index->file); found != manifest.files.end()) {
      if (found->second.sha256 != index->sha256) return index_mismatch(*index, found->second.sha256, kManifest);
      plan.checked.push_back({"file", index->file, kManifest, index->sha256, index->bytes});
    } else {
      plan.unverifiable.push_back({index->file, "not named by the digest manifest"});
    }
  }
  if (manifest.components && manifest.components->made_for(spec)) {
    const auto &rank = manifest.components->ranks.at(spec == nullptr ? 0 : spec->rank);
    for (const ComponentPayload &payload : payloads) {
      const std::string &id = payload.component().id;
      const auto found = rank.find(id);
      if (found == rank.end()) {
        return make_error(ROOTSPAN_ERR_NOT_FOUND, kOperation,
                          "the digest manifest has no digest for component " + quoted_text(id) + " of rank " +
                              std::to_string(spec == nullptr ? 0 : spec->rank));
      }
      if (found->second.bytes != payload.total_bytes()) {
        return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, kOperation,
                          "component " + quoted_text(id) + " is " + std::to_string(payload.total_bytes()) +
                              " bytes, but the digest manifest published " + std::to_string(found->second.bytes),
                          found->second.bytes, payload.total_bytes());
      }
      DigestJob job = component_job(checkpoint, payload);
      job.expected = found->second.sha256;
      plan.jobs.push_back(std::move(job));
    }
    return plan;
  }
  for (const Shard *shard : shards_read(checkpoint, payloads)) {
    const auto found = manifest.files.find(shard->file);
    if (found == manifest.files.end()) {
      return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, kOperation,
                        "file " + quoted_text(shard->file) + " is not named by the digest manifest");
    }
    if (found->second.bytes != shard->input->size()) {
      return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, kOperation,
                        "file " + quoted_text(shard->file) + " is " + std::to_string(shard->input->size()) +
                            " bytes, but the digest manifest published " + std::to_string(found->second.bytes),
                        found->second.bytes, shard->input->size());
    }
    plan.jobs.push_back(whole_file(*shard, kManifest, found->second.sha256));
  }
  return plan;
}

}  // namespace

Result<DigestPlan> plan_digests(const Checkpoint &checkpoint, std::span<const ComponentPayload> payloads,
                                const ShardSpec *spec, const DigestManifest *manifest) {
  if (manifest != nullptr) return from_manifest(checkpoint, payloads, spec, *manifest);
  DigestPlan plan;
  if (const std::optional<IndexFile> &index = checkpoint.index_file()) {
    const std::string blob = index->real_path.filename().string();
    if (is_cache_blob(index->real_path) && is_sha256_hex(blob)) {
      if (blob != index->sha256) return index_mismatch(*index, blob, kCacheBlob);
      plan.checked.push_back({"file", index->file, kCacheBlob, index->sha256, index->bytes});
    } else {
      plan.unverifiable.push_back({index->file, unverifiable_reason(index->real_path)});
    }
  }
  for (const Shard *shard : shards_read(checkpoint, payloads)) {
    const std::filesystem::path real = shard->input->real_path();
    const std::string blob = real.filename().string();
    if (is_cache_blob(real) && is_sha256_hex(blob)) {
      plan.jobs.push_back(whole_file(*shard, kCacheBlob, blob));
    } else {
      plan.unverifiable.push_back({shard->file, unverifiable_reason(real)});
    }
  }
  if (plan.jobs.empty()) {
    std::string why;
    for (const Unverifiable &u : plan.unverifiable) why += "; " + quoted_text(u.file) + ": " + u.reason;
    return make_error(ROOTSPAN_ERR_NOT_FOUND, kOperation,
                      "nothing to check the digests of " + quoted_text(checkpoint.folder().string()) +
                          " against: no file it reads has a published digest (pass a digest manifest made by "
                          "`rootspan hash`)" +
                          why);
  }
  return plan;
}

std::vector<DigestJob> component_jobs(const Checkpoint &checkpoint, std::span<const ComponentPayload> payloads) {
  std::vector<DigestJob> jobs;
  for (const ComponentPayload &payload : payloads) jobs.push_back(component_job(checkpoint, payload));
  return jobs;
}

std::vector<DigestJob> file_jobs(const Checkpoint &checkpoint) {
  std::vector<DigestJob> jobs;
  for (const Shard &shard : checkpoint.shards()) jobs.push_back(whole_file(shard, "", ""));
  return jobs;
}

}  // namespace rootspan::weights
