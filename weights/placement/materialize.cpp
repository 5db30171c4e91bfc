#include "weights/placement/materialize.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "core/claim_ops.hpp"
#include "core/copy.hpp"
#include "core/dtype.hpp"
#include "core/mapping.hpp"
#include "core/sha256.hpp"
#include "core/text/quoting.hpp"
#include "weights/digests/digest_plan.hpp"
#include "weights/digests/landing.hpp"
#include "weights/digests/parallel_hasher.hpp"
#include "weights/files/input_file.hpp"
#include "weights/files/mapped_file.hpp"
#include "weights/files/strided_read.hpp"
#include "weights/placement/available_memory.hpp"
#include "weights/placement/direct_landing.hpp"
#include "weights/placement/staging_ring.hpp"
#include "weights/placement/warm_mapping.hpp"

namespace rootspan::weights {

namespace {

constexpr const char *kOperation = "load_component";
constexpr std::uint64_t kReadChunk = 64ull << 20;  // progress and cancellation granularity

// An error that names a component already (a parallel read's, which may
// complete while a later component is being loaded) keeps its name.
Diagnostic error_in(const ComponentPayload &payload, Diagnostic d) {
  if (d.operation.empty()) d.operation = kOperation;
  const std::string name = "component \"" + payload.component_id() + "\"";
  if (d.cause.find(name) == std::string::npos && d.cause.rfind("component \"", 0) != 0) d.cause = name + ": " + d.cause;
  return d;
}

// Names a read in the parallel reader's errors.
std::string read_label(const ComponentPayload &payload, const Segment &segment) {
  return "component \"" + payload.component_id() + "\": tensor \"" + segment.source() + "\"";
}

// Names the tensor a failed read was for (docs/weight-schema.md: component, tensor, file).
Diagnostic error_in(const Segment &segment, Diagnostic d) {
  d.cause = "tensor \"" + segment.source() + "\": " + d.cause;
  return d;
}

// The element type a component's root carries: its dense type when that has a
// whole-byte size, else untyped bytes (block-quantized and sub-byte types).
rootspan_dtype root_dtype(const ComponentPayload &payload) {
  const rootspan_dtype dtype = payload.element_type().dtype;
  return dtype_size(dtype) == 0 ? ROOTSPAN_DTYPE_NONE : dtype;
}

std::uint64_t address_alignment(const void *p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  const std::uint64_t lowest = address & (~address + 1);
  return address == 0 ? 4096 : std::min<std::uint64_t>(lowest, 4096);
}

// A component mmap cannot map in place, so every strategy copies it: packed
// from several tensors, or strided (one rank's columns).
bool packed(const ComponentPayload &payload) {
  const auto &segments = payload.segments();
  return segments.size() > 1 || (segments.size() == 1 && !segments[0].contiguous());
}

// The file bytes of a segment as a strided range (rows == 1: contiguous).
StridedRange file_range(const Segment &segment) {
  return {segment.file_offset(), segment.row_length(), segment.rows(), segment.stride()};
}

// Bytes of one segment on their way into a root through one staging buffer:
// a contiguous piece, or whole rows of a strided segment.
struct Chunk {
  const Segment *segment;
  StridedRange bytes;
  std::uint64_t root_offset;
};

// A staging buffer's worth at a time: pieces of a contiguous segment (or of
// a row longer than a buffer), or as many whole rows as fit in one.
std::vector<Chunk> chunks_of(const ComponentPayload &payload, std::uint64_t chunk_bytes) {
  std::vector<Chunk> chunks;
  std::uint64_t root_offset = 0;
  for (const Segment &segment : payload.segments()) {
    const StridedRange range = file_range(segment);
    if (range.rows > 1 && range.row_length <= chunk_bytes) {
      const std::uint64_t per_chunk = chunk_bytes / range.row_length;
      for (std::uint64_t row = 0; row < range.rows; row += per_chunk) {
        const std::uint64_t rows = std::min(per_chunk, range.rows - row);
        chunks.push_back({&segment,
                          {range.offset + row * range.stride, range.row_length, rows, range.stride},
                          root_offset + row * range.row_length});
      }
    } else {
      for (std::uint64_t row = 0; row < range.rows; ++row) {
        for (std::uint64_t done = 0; done < range.row_length; done += chunk_bytes) {
          const std::uint64_t n = std::min(chunk_bytes, range.row_length - done);
          chunks.push_back({&segment,
                            {range.offset + row * range.stride + done, n, 1, n},
                            root_offset + row * range.row_length + done});
        }
      }
    }
    root_offset += segment.length();
  }
  return chunks;
}

// Claims and mappings taken for one step, released in order whatever happens.
struct HeldClaim {
  Claim *claim = nullptr;
  Mapping *mapping = nullptr;
  HeldClaim() = default;
  HeldClaim(const HeldClaim &) = delete;
  HeldClaim &operator=(const HeldClaim &) = delete;
  ~HeldClaim() {
    if (mapping != nullptr) unmap(*mapping);
    if (claim != nullptr) (void)claim_release(*claim);
  }
};

// The deleter of a zero-copy root: drops the root's reference to its region.
void release_retained_region(void *region, void * /*data*/) { delete static_cast<RetainedRegion *>(region); }

// A shard file as one load sees it: the descriptor its header was read
// through, its size then, and what the load has made of it so far.
struct LoadFile {
  std::uint64_t header_size = 0;                    // fstat when the header was read
  std::shared_ptr<const InputFile> input;           // nullptr: not opened with the checkpoint
  bool size_checked = false;                        // found header_size again, at its first use
  std::shared_ptr<const StableHostMemory> mapping;  // the whole file mapped, by its first zero-copy component
};

class LoadRun {
 public:
  LoadRun(Context &context, std::shared_ptr<Provider> provider, const LoadOptions &options, std::uint64_t total,
          const Checkpoint &checkpoint)
      : context_(context),
        provider_(std::move(provider)),
        options_(options),
        bytes_(total),
        // Digests hash their bytes once the load has placed them, and source
        // digests every byte loaded once more.
        total_(total + digest_bytes(options.digests) + (options.source_digests ? total : 0)) {
    // Each shard must still be the size its header was read at, and is read
    // through the descriptor its header came from.
    for (const Shard &shard : checkpoint.shards()) {
      LoadFile &file = files_[shard.path.native()];
      file.header_size = shard.file_size;
      if (shard.input && !file.input) file.input = shard.input;
      if (shard.input && !shard.header_sha256.empty()) {
        landings_.note_header(*shard.input, shard.data_offset, shard.header_sha256);
      }
    }
  }

  // Releases every root still held: a load that did not finish leaves none.
  // Copies still in flight finish first.
  ~LoadRun() {
    (void)settle();
    for (Root *root : made_) (void)context_.release(root);
  }

  Result<LoadedComponent> load(ComponentPayload &payload, std::size_t index, std::size_t count) {
    progress_.component = &payload.component_id();
    progress_.component_index = index;
    progress_.component_count = count;
    const ComponentSpec &spec = payload.component();
    LoadedComponent loaded;  // its id, source and dimensions come last (take_names)
    loaded.bytes = payload.total_bytes();
    loaded.segments = payload.segments().size();
    loaded.role = spec.role;
    loaded.encoding = spec.encoding;
    loaded.dtype = spec.physical_element_type().dtype;
    const bool host = provider_->table().map_write != nullptr && provider_->kind() == "host";
    if (host && options_.strategy == Strategy::kMmap) {
      auto zero_copy = try_zero_copy(payload);
      if (!zero_copy) return zero_copy.error();
      if (zero_copy.value() != nullptr) {
        loaded.root = zero_copy.value();
        loaded.zero_copy = true;
        loaded.read_only = loaded.root->read_only;
        BOOST_OUTCOME_TRY(advance(payload.total_bytes()));
        return loaded;
      }
    }
    auto root = host && options_.strategy == Strategy::kDirect
                    ? allocate_for_direct_reads(payload)
                    : allocate(payload, host ? ROOTSPAN_MEMORY_HOST : ROOTSPAN_MEMORY_DEVICE);
    if (!root) return error_in(payload, root.error());
    loaded.root = root.value();
    auto copied = host_access(*loaded.root) ? read_into_mapping(payload, *loaded.root) : upload(payload, *loaded.root);
    if (!copied) return error_in(payload, copied.error());
    loaded.read_only = loaded.root->read_only;
    return loaded;
  }

  // Proves every upload complete (its copy waited for); then the roots
  // belong to the caller.
  Result<void> finish(LoadResult &result) {
    BOOST_OUTCOME_TRY(settle_reads());
    result.reads = read_stats_;
    if (ring_) {
      result.staging_buffers = ring_->buffer_count();
      result.staging_buffer_bytes = ring_->buffer_bytes();
      result.staging_pinned = ring_->pinned();
      result.staging_note = ring_->fallback_reason();
    }
    BOOST_OUTCOME_TRY(settle());
    made_.clear();
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  }

  // Waits for the reads of the copies; a failed read fails the load. The
  // roots they filled stay claimed until settle().
  Result<void> settle_reads() {
    if (!reader_) return BOOST_OUTCOME_V2_NAMESPACE::success();
    auto drained = reader_->drain();
    read_stats_ = reader_->stats();
    return drained;
  }

  // Waits for every read and upload, keeping the claims the load holds, so
  // that the bytes can be hashed where they landed.
  Result<void> settle_placement() {
    BOOST_OUTCOME_TRY(settle_reads());
    if (ring_) {
      BOOST_OUTCOME_TRY(ring_->drain());
    }
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  }

  // The digest jobs rewritten to hash the bytes where this load placed them.
  Result<std::vector<DigestJob>> landed(std::vector<DigestJob> jobs) {
    for (DigestJob &job : jobs) {
      BOOST_OUTCOME_TRY(landings_.land(job));
    }
    return jobs;
  }

  // populate: reads in the zero-copy roots made (warm_mapping.hpp), weighed
  // against the memory available when `weigh` (auto weighed the checkpoint
  // already when it chose to populate), the progress callback able to stop it.
  Result<void> warm(LoadResult &result, bool weigh) {
    WarmLimits limits;
    if (weigh) limits.available = available_memory();
    limits.poll = [this] { return poll(); };
    ROOTSPAN_ASSIGN_OR_RETURN(result.warmed_bytes, warm_mapped_ranges(zero_copy_ranges_, limits, kOperation));
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  }

  // Reports progress (cancelling as the callback asks) while the load
  // waits for its digests.
  Result<void> poll() { return advance(0); }
  // Digests hashed once everything is placed: counted in the progress from
  // now on (`hasher` outlives the run).
  void count_hashing(const ParallelHasher *hasher) { hashers_.push_back(hasher); }

 private:
  bool host_access(const Root &root) const { return root.host_accessible(); }

  static std::uint64_t digest_bytes(const std::vector<DigestJob> &jobs) {
    std::uint64_t n = 0;
    for (const DigestJob &job : jobs) n += job.bytes();
    return n;
  }

  Result<void> advance(std::uint64_t bytes) {
    loaded_ += bytes;
    // A verified load's progress counts the bytes hashed beside those loaded.
    progress_.bytes_done = loaded_;
    for (const ParallelHasher *hasher : hashers_) progress_.bytes_done += hasher->bytes_done();
    progress_.bytes_total = total_;
    if (options_.progress && !options_.progress(progress_)) {
      // A checkpoint without components has none to name.
      const std::string where = progress_.component == nullptr ? std::string("before any component")
                                                               : "at component " + quoted_text(*progress_.component);
      return make_error(ROOTSPAN_ERR_CANCELLED, kOperation, "the progress callback cancelled the load " + where, total_,
                        progress_.bytes_done);
    }
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  }

  // Verified loads: where each segment's bytes landed (landing.hpp).
  void record_landing(const ComponentPayload &payload, const Segment &segment, const LandedRange &into) {
    if (options_.digests.empty() || segment.length() == 0) return;
    const auto found = files_.find(segment.path().native());
    if (found != files_.end() && found->second.input) {
      landings_.add(payload.component_id(), *found->second.input, file_range(segment), into);
    }
  }

  // The segment's file mapped whole, once a load.
  Result<std::shared_ptr<const StableHostMemory>> mapped(const Segment &segment) {
    auto checked = checked_file(segment.path());
    if (!checked) return checked.error();
    LoadFile &file = *checked.value();
    if (!file.mapping) {
      auto opened = MappedFile::open(*file.input, file.header_size,
                                     options_.copy_on_write ? MappedFile::kCopyOnWrite : MappedFile::kReadOnly);
      if (!opened) return opened.error();
      file.mapping = std::move(opened).value();
    }
    return file.mapping;
  }

  // The descriptor the shard was opened with (checked_file).
  Result<const InputFile *> file(const std::filesystem::path &path) {
    auto checked = checked_file(path);
    if (!checked) return checked.error();
    return checked.value()->input.get();
  }

  // The shard file at `path`, read through the descriptor it was opened
  // with: a file is never reopened by name, so a link swapped in since the
  // header was read cannot be followed. Its size is checked against the
  // header's once a load, at its first use: every read after that finds a
  // file cut short itself ("file ended early"), and a check a component was a
  // system call a tensor (a copy of 10,000 small tensors spent a third of its
  // time in them).
  Result<LoadFile *> checked_file(const std::filesystem::path &path) {
    auto found = files_.find(path.native());
    if (found == files_.end() || !found->second.input) {
      return make_error(ROOTSPAN_ERR_IO, kOperation,
                        quoted_text(path.string()) + ": not a file opened with the checkpoint");
    }
    LoadFile &file = found->second;
    if (file.size_checked) return &file;
    auto size = file.input->current_size();
    if (!size) return size.error();
    if (size.value() != file.header_size) {
      return make_error(ROOTSPAN_ERR_IO, kOperation,
                        quoted_text(path.string()) + ": file size changed since its header was read: expected " +
                            std::to_string(file.header_size) + " bytes, found " + std::to_string(size.value()),
                        file.header_size, size.value());
    }
    file.size_checked = true;
    return &file;
  }

  // A root over the segment's retained file region (read-only unless the
  // mapping is copy-on-write), when the
  // component is one non-empty segment whose bytes are aligned for its type;
  // nullptr when it must be copied instead.
  Result<Root *> try_zero_copy(ComponentPayload &payload) {
    if (packed(payload) || payload.total_bytes() == 0) return nullptr;
    const Segment &segment = payload.segments().front();
    auto owner = mapped(segment);
    if (!owner) return error_in(payload, error_in(segment, owner.error()));
    // One segment (not packed): its file's mapping is the owner.
    auto retained = payload.retain_host_memory([&owner](const Segment &) { return owner.value(); });
    if (!retained) return error_in(payload, retained.error());
    const RetainedRegion &region = *payload.segments().front().retained();
    const std::byte *data = region.bytes().data();
    const rootspan_dtype dtype = root_dtype(payload);
    if (reinterpret_cast<std::uintptr_t>(data) % dtype_alignment(dtype) != 0) return nullptr;

    HostImport zero_copy_import;
    zero_copy_import.provider = provider_->name();
    zero_copy_import.dtype = dtype;
    zero_copy_import.read_only = !options_.copy_on_write;
    // A mapping of the root first checks that the file still covers it. The
    // root keeps the file mapping alive through its own region reference (its
    // memory's deleter context), so the check holds the file by a plain
    // pointer: small enough to sit inside the function object, no allocation
    // for each of thousands of components (nor for the root's copy of it).
    if (const auto *file = dynamic_cast<const MappedFile *>(region.owner().get())) {
      zero_copy_import.backing_check = [file, start = region.offset()](std::uint64_t offset, std::uint64_t length) {
        return file->check_covers(start + offset + length);
      };
    }
    zero_copy_import.memory = {sizeof(rootspan_host_memory), const_cast<std::byte *>(data), region.length(),
                               address_alignment(data),      release_retained_region,       new RetainedRegion(region)};
    auto root = context_.import_host(zero_copy_import);
    if (!root) return error_in(payload, root.error());
    made_.push_back(root.value());
    zero_copy_ranges_.emplace_back(data, region.length());
    return root.value();
  }

  Result<Root *> allocate(const ComponentPayload &payload, rootspan_memory_kind kind) {
    AllocateOptions allocation;
    allocation.provider = provider_->name();
    allocation.device = options_.device;
    allocation.memory_kind = kind;
    allocation.byte_length = payload.total_bytes();
    allocation.alignment = 64;
    allocation.dtype = root_dtype(payload);
    auto root = context_.allocate(allocation);
    if (!root) return root.error();
    made_.push_back(root.value());
    return root.value();
  }

  // Host memory for a component read with O_DIRECT: placed as its file
  // offset is (direct_landing.hpp), so that its whole blocks are read in
  // place rather than through a bounce buffer, where the component is one
  // contiguous range large enough, its elements stay aligned, the provider
  // takes host imports and the file is read direct; else the provider's
  // allocation.
  Result<Root *> allocate_for_direct_reads(const ComponentPayload &payload) {
    const rootspan_dtype dtype = root_dtype(payload);
    const std::uint64_t file_offset = payload.segments().empty() ? 0 : payload.segments().front().file_offset();
    const std::uint64_t head = page_offset(file_offset);
    if (packed(payload) || payload.total_bytes() < kDirectLandingMinimumBytes || head == 0 ||
        head % dtype_alignment(dtype) != 0 || provider_->table().import_host_memory == nullptr) {
      return allocate(payload, ROOTSPAN_MEMORY_HOST);
    }
    // Only for a file that is read direct: one read buffered (tmpfs, overlay,
    // no direct I/O) gains nothing from the placement.
    auto in = file(payload.segments().front().path());
    if (!in) return in.error();
    ParallelReader *in_parallel = nullptr;
    ROOTSPAN_ASSIGN_OR_RETURN(in_parallel, reader());
    if (!in_parallel->reads_direct(*in.value())) return allocate(payload, ROOTSPAN_MEMORY_HOST);
    auto memory = map_congruent(payload.total_bytes(), file_offset);
    if (!memory) return allocate(payload, ROOTSPAN_MEMORY_HOST);  // no mapping: the provider may still have memory
    HostImport placed;
    placed.provider = provider_->name();
    placed.dtype = dtype;
    placed.memory = *memory;
    auto root = context_.import_host(placed);  // a failed import has run the deleter
    if (!root) return root.error();
    made_.push_back(root.value());
    return root.value();
  }

  // The load's one parallel reader, made by its first copy.
  Result<ParallelReader *> reader() {
    if (!reader_) {
      ParallelReadOptions read;
      read.mode = options_.strategy == Strategy::kDirect ? ReadMode::kDirect : ReadMode::kBuffered;
      read.engine = options_.read_engine;
      read.queue_depth = options_.queue_depth;
      read.expected_bytes = bytes_;  // at most: some components may be mapped
      read.request_bytes = options_.read_request_bytes;
      read.max_bytes_in_flight = options_.max_bytes_in_flight;
      read.operation = kOperation;
      read.on_complete = [this](std::uint64_t bytes) { return advance(bytes); };
      auto made = ParallelReader::create(std::move(read));
      if (!made) return made.error();
      reader_ = std::move(made).value();
    }
    return reader_.get();
  }

  // Queues the reads of every segment of `payload` into [base, base +
  // total_bytes()), straight from the files.
  Result<void> queue_reads(const ComponentPayload &payload, std::byte *base) {
    ParallelReader *in_parallel = nullptr;
    ROOTSPAN_ASSIGN_OR_RETURN(in_parallel, reader());
    std::uint64_t root_offset = 0;
    for (const Segment &segment : payload.segments()) {
      auto in = file(segment.path());
      if (!in) return error_in(segment, in.error());
      record_landing(payload, segment, {base + root_offset, nullptr, 0, segment.length()});
      if (segment.contiguous()) {
        BOOST_OUTCOME_TRY(in_parallel->submit({in.value(), segment.file_offset(), base + root_offset, segment.length(),
                                               [&payload, &segment] { return read_label(payload, segment); }}));
      } else {
        BOOST_OUTCOME_TRY(read_rows(*in.value(), file_range(segment), base + root_offset, payload, segment));
      }
      root_offset += segment.length();
    }
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  }

  // Strided rows (one rank's columns) are read here, a window of rows at a
  // time through one buffer, and packed into `into`.
  Result<void> read_rows(const InputFile &in, const StridedRange &range, std::byte *into,
                         const ComponentPayload &payload, const Segment &segment) {
    if (row_buffer_.empty()) row_buffer_.resize(std::max<std::uint64_t>(options_.read_request_bytes, 4096));
    std::uint64_t at = 0;
    auto read = read_strided(in, range, row_buffer_, [&](std::span<const std::byte> bytes) -> Result<void> {
      std::memcpy(into + at, bytes.data(), bytes.size());
      at += bytes.size();
      return BOOST_OUTCOME_V2_NAMESPACE::success();
    });
    if (!read) {
      Diagnostic failed = read.error();
      failed.cause = read_label(payload, segment) + ": " + failed.cause;
      return failed;
    }
    return advance(range.bytes());
  }

  // Host memory: the segments are read straight into the root, beside the
  // reads of other components; the root stays claimed until every read has
  // completed (finish() or the destructor).
  Result<void> read_into_mapping(const ComponentPayload &payload, Root &root) {
    if (payload.total_bytes() == 0) return BOOST_OUTCOME_V2_NAMESPACE::success();
    // Held from here on: a claim whose mapping fails is given back with the rest by settle() (finish() or
    // ~LoadRun).
    HeldClaim &held = reading_.emplace_back();
    ROOTSPAN_ASSIGN_OR_RETURN(held.claim, claim_acquire(root, 0, payload.total_bytes(), ROOTSPAN_CLAIM_EXCLUSIVE));
    ROOTSPAN_ASSIGN_OR_RETURN(held.mapping, map_range(*held.claim, root.dtype, 0, payload.total_bytes(), true));
    return queue_reads(payload, static_cast<std::byte *>(held.mapping->provider.data));
  }

  // No host access: each chunk is read into the staging ring and uploaded
  // asynchronously; the claim stays held until the load has waited for every
  // copy (finish() or the destructor).
  Result<void> upload(const ComponentPayload &payload, Root &root) {
    if (payload.total_bytes() == 0) return BOOST_OUTCOME_V2_NAMESPACE::success();
    if (!ring_) {
      auto ring = StagingRing::create(context_, provider_->name(), options_.device, options_.staging);
      if (!ring) return ring.error();
      ring_ = std::move(ring).value();
    }
    Claim *claim = nullptr;
    ROOTSPAN_ASSIGN_OR_RETURN(claim, claim_acquire(root, 0, payload.total_bytes(), ROOTSPAN_CLAIM_EXCLUSIVE));
    uploading_.push_back(claim);
    std::uint64_t root_offset = 0;
    for (const Segment &segment : payload.segments()) {
      record_landing(payload, segment, {nullptr, claim, root_offset, segment.length()});
      root_offset += segment.length();
    }
    ParallelReader *in_parallel = nullptr;
    ROOTSPAN_ASSIGN_OR_RETURN(in_parallel, reader());
    for (const Chunk &chunk : chunks_of(payload, ring_->buffer_bytes())) {
      auto in = file(chunk.segment->path());
      if (!in) return error_in(*chunk.segment, in.error());
      const std::uint64_t length = chunk.bytes.bytes();
      std::byte *staged = nullptr;
      ROOTSPAN_ASSIGN_OR_RETURN(staged, ring_->reserve(length));
      if (chunk.bytes.rows == 1) {
        // A buffer's reads run in parallel; its copy starts once all are in.
        BOOST_OUTCOME_TRY(
            in_parallel->submit({in.value(), chunk.bytes.offset, staged, length,
                                 [&payload, segment = chunk.segment] { return read_label(payload, *segment); }}));
        BOOST_OUTCOME_TRY(in_parallel->drain());
      } else {
        BOOST_OUTCOME_TRY(read_rows(*in.value(), chunk.bytes, staged, payload, *chunk.segment));
      }
      auto copy = copy_from_host_async(*claim, chunk.root_offset, staged, length);
      if (!copy) return copy.error();
      ring_->commit(length, std::move(copy).value());
    }
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  }

  // Waits for every copy still in flight, then frees the staging ring and
  // the upload claims: after this, no byte of the load is still moving.
  Result<void> settle() {
    // Reads land in roots and staging buffers: they finish first.
    Result<void> drained = settle_reads();
    reader_.reset();
    reading_.clear();  // no read is in flight after the drain
    if (ring_) {
      auto ring_drained = ring_->drain();
      if (drained && !ring_drained) drained = ring_drained;
      ring_.reset();
    }
    for (Claim *claim : uploading_) (void)claim_release(*claim);
    uploading_.clear();
    return drained;
  }

  Context &context_;
  std::shared_ptr<Provider> provider_;
  const LoadOptions &options_;
  std::uint64_t bytes_;                          // the components' bytes
  std::uint64_t total_;                          // the progress's: those, and the bytes digests hash
  std::vector<const ParallelHasher *> hashers_;  // digests being hashed, counted in the progress
  Landings landings_;                            // verified loads: where the bytes landed
  std::uint64_t loaded_ = 0;
  LoadProgress progress_;
  std::vector<Root *> made_;
  std::unordered_map<std::string, LoadFile> files_;  // by the path's text: a path compares element by element
  std::unique_ptr<StagingRing> ring_;                // made by the first upload, once per load
  std::vector<Claim *> uploading_;                   // claims of roots with copies maybe in flight
  std::unique_ptr<ParallelReader> reader_;           // made by the first copy, once per load
  std::deque<HeldClaim> reading_;                    // roots with reads maybe in flight (a deque: never moved)
  std::vector<std::byte> row_buffer_;                // windows of strided rows, made by the first strided read
  std::optional<ParallelReadStats> read_stats_;
  std::vector<std::span<const std::byte>> zero_copy_ranges_;  // the bytes of the zero-copy roots made
};

// Records where each component's bytes lie: its first segment's file (each
// file named once in the result) and offset.
class SourceFiles {
 public:
  explicit SourceFiles(std::vector<std::string> &files) : files_(files) {}

  void locate(LoadedComponent &loaded, const ComponentPayload &payload) {
    const std::vector<Segment> &segments = payload.segments();
    if (segments.empty()) return;
    const Segment &first = segments.front();
    auto [at, added] = index_.try_emplace(first.file(), static_cast<std::uint32_t>(files_.size()));
    if (added) files_.push_back(first.file());
    loaded.source_file = at->second;
    loaded.source_offset = first.file_offset();
    loaded.source_contiguous = segments.size() == 1 && first.contiguous();
  }

 private:
  std::vector<std::string> &files_;
  std::unordered_map<std::string, std::uint32_t> index_;
};

// The order a load takes the components in: the schema's, or for a load that
// reads, the order of their first bytes in the files (each file's path, then
// offset). A checkpoint's tensors are often stored in model order but listed
// by name; read in file order, the reads of tensors that follow each other
// are gathered into large requests (ParallelReadOptions::gather_adjacent),
// which a cold disk serves far faster than one small request a tensor. Each
// component still lands at its own index of the result.
std::vector<std::size_t> load_order(const std::vector<ComponentPayload> &payloads, bool in_file_order) {
  std::vector<std::size_t> order(payloads.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (!in_file_order) return order;
  auto first_byte = [&](std::size_t i) {
    const std::vector<Segment> &segments = payloads[i].segments();
    return segments.empty() ? std::pair<const std::string *, std::uint64_t>{nullptr, 0}
                            : std::pair{&segments.front().path().native(), segments.front().file_offset()};
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto [path_a, offset_a] = first_byte(a);
    const auto [path_b, offset_b] = first_byte(b);
    if (path_a == nullptr || path_b == nullptr) return path_a == nullptr && path_b != nullptr;
    if (path_a != path_b && *path_a != *path_b) return *path_a < *path_b;  // a shard's segments share one path
    return offset_a < offset_b;
  });
  return order;
}

// The payloads are spent once the load is done: each component takes its id,
// its first source's name and its dimensions from its own, not a copy (a load
// makes thousands).
void take_names(std::vector<LoadedComponent> &components, std::vector<ComponentPayload> &payloads) {
  for (std::size_t i = 0; i < components.size(); ++i) {
    ComponentSpec spec = std::move(payloads[i]).take_component();
    components[i].id = std::move(spec.id);
    if (!spec.sources.empty()) components[i].source = std::move(spec.sources.front());
    components[i].dimensions = std::move(spec.dimensions);
  }
}

}  // namespace

Result<LoadResult> load_components(Context &context, const Checkpoint &checkpoint, ResolvedSchema schema,
                                   const LoadOptions &options) {
  auto provider = context.provider(options.provider);
  if (!provider) return with_request(provider.error(), kOperation, Requested::none());
  if (options.device >= provider.value()->device_count()) {
    return make_error(ROOTSPAN_ERR_NOT_FOUND, kOperation,
                      "provider '" + options.provider + "' has " + std::to_string(provider.value()->device_count()) +
                          " devices; device " + std::to_string(options.device) + " does not exist",
                      provider.value()->device_count(), options.device);
  }
  LoadResult result;
  result.provider = options.provider;
  result.skipped = std::move(schema.skipped);
  for (const ComponentPayload &payload : schema.payloads) result.total_bytes += payload.total_bytes();

  const bool host = provider.value()->kind() == "host";
  // What the load copies into host memory under mmap: the components that
  // cannot be mapped in place (packed from several tensors, or strided).
  std::uint64_t packed_bytes = 0;
  for (const ComponentPayload &payload : schema.payloads) {
    if (packed(payload)) packed_bytes += payload.total_bytes();
  }
  // Only auto, mmap populated when cold, the copying strategies, verified
  // loads (which copy) and packed copies weigh the memory available.
  const std::optional<std::uint64_t> available = options.strategy == Strategy::kMmap && !options.populate_when_cold &&
                                                         options.digests.empty() && (packed_bytes == 0 || !host)
                                                     ? std::nullopt
                                                     : available_memory();
  const StrategyChoice choice = choose_strategy(options.strategy, checkpoint, host, result.total_bytes, available,
                                                options.populate_when_cold && !options.populate);
  result.requested_strategy = options.strategy;
  result.strategy = choice.strategy;
  result.strategy_reason = choice.reason;
  LoadOptions chosen = options;
  chosen.strategy = choice.strategy;
  // auto (or mmap populated when cold) populates a cold checkpoint that fits
  chosen.populate = options.populate || choice.populate;
  // A verified load hands out the bytes it hashed, so never memory that
  // still follows a file someone can change (docs/verified-loads.md).
  if (!options.digests.empty() && host && chosen.strategy == Strategy::kMmap) {
    chosen.strategy = Strategy::kRead;
    result.strategy = Strategy::kRead;
    result.strategy_reason =
        "a verified load copies what it hashes: a mapping would follow later writes to the "
        "file (mmap chosen first: " +
        choice.reason + ")";
  }
  ROOTSPAN_ASSIGN_OR_RETURN(chosen.staging, checked_staging_shape(options.staging));

  // A copy into host memory allocates every byte the files claim, whatever
  // blocks they really hold: refuse one that cannot fit before it starts,
  // whatever the strategy.
  if (host && available) {
    const bool mapped = chosen.strategy == Strategy::kMmap;
    std::map<std::filesystem::path, std::uint64_t> per_file;
    for (const ComponentPayload &payload : schema.payloads) {
      if (mapped && !packed(payload)) continue;
      for (const Segment &segment : payload.segments()) per_file[segment.path()] += segment.length();
    }
    const auto largest = std::max_element(per_file.begin(), per_file.end(),
                                          [](const auto &a, const auto &b) { return a.second < b.second; });
    if (largest != per_file.end()) {
      BOOST_OUTCOME_TRY(check_copy_fits(largest->first.string(), largest->second,
                                        mapped ? packed_bytes : result.total_bytes, *available,
                                        strategy_name(chosen.strategy), kOperation));
    }
  }

  // The hashers outlive the run, so a failed load releases its roots first
  // and then stops the workers.
  std::optional<ParallelHasher> hasher;   // LoadOptions::digests, once every byte is placed
  std::optional<ParallelHasher> sources;  // LoadOptions::source_digests, after that
  LoadRun run(context, provider.value(), chosen, result.total_bytes, checkpoint);
  const std::size_t count = schema.payloads.size();
  result.components.resize(count);
  const std::vector<std::size_t> order = load_order(schema.payloads, chosen.strategy != Strategy::kMmap);
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t i = order[k];
    auto loaded = run.load(schema.payloads[i], k, count);
    if (!loaded) return loaded.error();  // ~LoadRun releases every root made
    result.components[i] = std::move(loaded).value();
  }
  SourceFiles files(result.source_files);
  for (std::size_t i = 0; i < count; ++i) files.locate(result.components[i], schema.payloads[i]);
  BOOST_OUTCOME_TRY(run.settle_placement());
  if (chosen.populate && chosen.strategy == Strategy::kMmap) {
    BOOST_OUTCOME_TRY(run.warm(result, options.populate));
  }
  if (!options.digests.empty()) {
    // Hashed where the bytes landed, so what matched is what the caller
    // gets; no root reaches the caller before every digest matched.
    auto jobs = run.landed(options.digests);
    if (!jobs) return jobs.error();
    hasher.emplace(std::move(jobs).value());
    run.count_hashing(&*hasher);
    auto checked = hasher->wait([&run] { return run.poll(); });
    if (!checked) return checked.error();
    result.digests = std::move(checked).value();
    BOOST_OUTCOME_TRY(run.poll());  // the wait ends without one: report what it hashed
  }
  if (options.source_digests) {
    // After every component is in place, so that the digests are of what the
    // files hold once the load is done (a file changed during the load shows
    // as a mismatch against memory); from the descriptors the load opened.
    sources.emplace(component_jobs(checkpoint, schema.payloads));
    run.count_hashing(&*sources);
    auto hashed = sources->wait([&run] { return run.poll(); });
    if (!hashed) return hashed.error();
    BOOST_OUTCOME_TRY(run.poll());  // the wait ends without one: the last report says all is done
    for (std::size_t i = 0; i < result.components.size(); ++i) {
      result.components[i].source_sha256 = std::move(hashed.value()[i].sha256);
    }
  }
  BOOST_OUTCOME_TRY(run.finish(result));
  take_names(result.components, schema.payloads);
  return result;
}

Result<void> release_components(Context &context, LoadResult &result) {
  std::optional<Diagnostic> first;
  std::vector<LoadedComponent> kept;
  for (LoadedComponent &component : result.components) {
    if (component.root == nullptr) continue;  // released on its own before
    auto released = context.release(component.root);
    if (!released) {
      if (!first) first = released.error();
      kept.push_back(component);
    }
  }
  result.components = std::move(kept);
  if (first) return *first;
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<std::string> root_sha256(Root &root) {
  Sha256 digest;
  const std::uint64_t length = root.extent.length;
  if (length != 0) {
    HeldClaim held;
    ROOTSPAN_ASSIGN_OR_RETURN(held.claim, claim_acquire(root, 0, length, ROOTSPAN_CLAIM_SHARED));
    std::vector<std::byte> buffer(std::min<std::uint64_t>(length, kReadChunk));
    for (std::uint64_t done = 0; done < length; done += buffer.size()) {
      const std::uint64_t n = std::min<std::uint64_t>(buffer.size(), length - done);
      BOOST_OUTCOME_TRY(copy_to_host(*held.claim, done, buffer.data(), n));
      digest.update({buffer.data(), n});
    }
  }
  return digest.hex_digest();
}

}  // namespace rootspan::weights
