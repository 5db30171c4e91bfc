#include "weights/digests/digest_plan.hpp"

#include <map>
#include <set>

#include "core/dtype.hpp"
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
  return {"file", shard.file, std::move(source), std::move(expected), {{shard.input, whole, {}}}, {}, {}};
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
  DigestJob job{"component", payload.component().id, kManifest, "", {}, {}, {}};
  for (const Segment &segment : payload.segments()) {
    const Shard *shard = shard_at(checkpoint, segment.path());
    if (shard != nullptr && segment.length() != 0) {
      job.ranges.push_back(
          {shard->input, {segment.file_offset(), segment.row_length(), segment.rows(), segment.stride()}, {}});
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

// The element type name a load reports for `payload` (rootspan_dtype_name).
std::string dtype_of(const ComponentPayload &payload) { return dtype_name(payload.element_type().dtype); }

// Checks that the manifest names `shard` with its size and, where it gives
// one or `header_required`, the digest of its header as it was parsed.
Result<const FileDigest *> check_file(const Shard &shard, const DigestManifest &manifest, bool header_required) {
  const auto found = manifest.files.find(shard.file);
  if (found == manifest.files.end()) {
    return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, kOperation,
                      "file " + quoted_text(shard.file) + " is not named by the digest manifest");
  }
  const FileDigest &published = found->second;
  if (published.bytes != shard.input->size()) {
    return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, kOperation,
                      "file " + quoted_text(shard.file) + " is " + std::to_string(shard.input->size()) +
                          " bytes, but the digest manifest published " + std::to_string(published.bytes),
                      published.bytes, shard.input->size());
  }
  if (published.header_sha256.empty()) {
    if (!header_required) return &published;
    return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, kOperation,
                      "the digest manifest gives file " + quoted_text(shard.file) +
                          " no \"header_sha256\", which per-component digests are checked with (the header says "
                          "which bytes each component is): write the manifest again with `rootspan hash --per-tensor`");
  }
  if (shard.header_sha256.empty()) {
    return make_error(ROOTSPAN_ERR_UNSUPPORTED, kOperation,
                      "file " + quoted_text(shard.file) +
                          ": the SHA-256 of its header was not taken when it was parsed, so it cannot be checked "
                          "against the digest manifest");
  }
  if (published.header_sha256 != shard.header_sha256) {
    return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, kOperation,
                      "file " + quoted_text(shard.file) +
                          " does not have the published header: the SHA-256 of its bytes 0 to " +
                          std::to_string(shard.data_offset) +
                          " (the names, element types, shapes and offsets of its tensors, and its metadata) is " +
                          shard.header_sha256 + ", but the digest manifest published " + published.header_sha256);
  }
  return &published;
}

// Checks a loaded component against its published entry: element type,
// shape (this rank's slice) and size.
Result<void> check_component(const ComponentPayload &payload, const ComponentDigest &published,
                             const std::string &who) {
  const std::string dtype = dtype_of(payload);
  if (published.dtype != dtype) {
    return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, kOperation,
                      who + " has element type " + dtype + ", but the digest manifest published " + published.dtype);
  }
  if (published.shape != payload.dimensions()) {
    return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, kOperation,
                      who + " has shape " + shape_text(payload.dimensions()) + ", but the digest manifest published " +
                          shape_text(published.shape));
  }
  if (published.bytes != payload.total_bytes()) {
    return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, kOperation,
                      who + " is " + std::to_string(payload.total_bytes()) +
                          " bytes, but the digest manifest published " + std::to_string(published.bytes),
                      published.bytes, payload.total_bytes());
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
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
    // A component's digest covers its bytes only: what they are (its
    // element type and shape) and where they lie come from the header, so
    // the components are checked against what was published, then every
    // file they are read from, header and size, before a byte is read.
    const std::uint32_t rank_index = spec == nullptr ? 0 : spec->rank;
    const auto &rank = manifest.components->ranks.at(rank_index);
    const std::string of_rank = spec == nullptr ? "" : " of rank " + std::to_string(rank_index);
    for (const ComponentPayload &payload : payloads) {
      const std::string &id = payload.component().id;
      const auto found = rank.find(id);
      if (found == rank.end()) {
        return make_error(ROOTSPAN_ERR_NOT_FOUND, kOperation,
                          "the digest manifest has no digest for component " + quoted_text(id) + " of rank " +
                              std::to_string(rank_index));
      }
      if (auto checked = check_component(payload, found->second, "component " + quoted_text(id) + of_rank); !checked) {
        return checked.error();
      }
      DigestJob job = component_job(checkpoint, payload);
      job.expected = found->second.sha256;
      plan.jobs.push_back(std::move(job));
    }
    for (const Shard *shard : shards_read(checkpoint, payloads)) {
      if (auto checked = check_file(*shard, manifest, /*header_required=*/true); !checked) return checked.error();
    }
    return plan;
  }
  for (const Shard *shard : shards_read(checkpoint, payloads)) {
    auto published = check_file(*shard, manifest, /*header_required=*/false);
    if (!published) return published.error();
    plan.jobs.push_back(whole_file(*shard, kManifest, published.value()->sha256));
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

Result<DigestManifest> hash_checkpoint(const Checkpoint &checkpoint, std::span<const ComponentPayload> payloads,
                                       bool per_component, const ShardSpec *spec) {
  DigestManifest manifest;
  std::vector<DigestJob> jobs;
  for (const Shard &shard : checkpoint.shards()) {
    DigestJob job = whole_file(shard, "", "");
    if (!shard.header_sha256.empty() && shard.data_offset <= shard.input->size()) {
      // The header and the rest, the header read again against its digest
      // as parsed, so that the manifest's header digest is the one of the
      // bytes its file digest was taken of.
      const std::uint64_t size = shard.input->size();
      job.ranges = {{shard.input, {0, shard.data_offset, 1, shard.data_offset}, shard.header_sha256}};
      if (size > shard.data_offset) {
        job.ranges.push_back(
            {shard.input, {shard.data_offset, size - shard.data_offset, 1, size - shard.data_offset}, {}});
      }
    }
    jobs.push_back(std::move(job));
  }
  const std::size_t file_count = jobs.size();
  // For each component job after the files: its rank, element type and shape.
  struct Made {
    std::uint32_t rank;
    std::string dtype;
    std::vector<std::uint64_t> shape;
  };
  std::vector<Made> made;
  if (per_component) {
    ComponentDigests components;
    if (spec != nullptr) {
      components.world_size = spec->world_size;
      components.convention = spec->convention;
      components.rules = spec->rules;
    }
    components.ranks.resize(components.world_size);
    for (std::uint32_t rank = 0; rank < components.world_size; ++rank) {
      std::vector<ComponentPayload> sliced;
      std::span<const ComponentPayload> read = payloads;
      if (spec != nullptr) {
        ShardSpec each = *spec;
        each.rank = rank;
        auto plan = plan_reads(payloads, each);
        if (!plan) return plan.error();
        auto made_slices = sliced_payloads(payloads, plan.value());
        if (!made_slices) return made_slices.error();
        sliced = std::move(made_slices).value();
        read = sliced;
      }
      for (const ComponentPayload &payload : read) {
        jobs.push_back(component_job(checkpoint, payload));
        made.push_back({rank, dtype_of(payload), payload.dimensions()});
      }
    }
    manifest.components = std::move(components);
  }
  ParallelHasher hasher(std::move(jobs));
  auto hashed = hasher.wait([] { return Result<void>(BOOST_OUTCOME_V2_NAMESPACE::success()); });
  if (!hashed) return hashed.error();
  for (std::size_t i = 0; i < hashed.value().size(); ++i) {
    DigestOutcome &d = hashed.value()[i];
    if (i < file_count) {
      manifest.files[d.name] = {d.bytes, std::move(d.sha256), checkpoint.shards()[i].header_sha256};
    } else {
      Made &m = made[i - file_count];
      manifest.components->ranks[m.rank][d.name] = {d.bytes, std::move(d.sha256), std::move(m.dtype),
                                                    std::move(m.shape)};
    }
  }
  if (const auto &index = checkpoint.index_file()) manifest.files[index->file] = {index->bytes, index->sha256, {}};
  return manifest;
}

}  // namespace rootspan::weights
