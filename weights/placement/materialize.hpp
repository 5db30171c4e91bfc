// Materialization (docs/weight-schema.md): validated component payloads become roots of
// one provider. On the host, a single-segment component whose bytes meet the
// required alignment becomes a root over its retained file region (zero-copy:
// read-only, or writable over a private copy-on-write mapping); otherwise one root is allocated and its segments are
// read straight from the file into it, many reads in flight across components (weights/files/parallel_reader.hpp),
// buffered or direct as the strategy says. A provider without host access gets its segments read into
// a ring of staging buffers (pinned memory of that provider, allocated once per load;
// weights/placement/staging_ring.hpp) and uploaded with asynchronous copies, the next file reads overlapping the
// uploads in flight; the load succeeds only after every copy has completed. A
// failed or cancelled load waits for its reads and copies, then releases every
// root it made.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "weights/checkpoints/checkpoint.hpp"
#include "weights/digests/parallel_hasher.hpp"
#include "weights/files/parallel_reader.hpp"
#include "weights/placement/read_strategy.hpp"
#include "weights/placement/staging_ring.hpp"
#include "weights/schema/resolve.hpp"

namespace rootspan::weights {

struct LoadProgress {
  const std::string *component = nullptr;  // the component being loaded
  std::size_t component_index = 0;
  std::size_t component_count = 0;
  std::uint64_t bytes_done = 0;
  std::uint64_t bytes_total = 0;
};
// Returns false to cancel the load.
using ProgressCallback = std::function<bool(const LoadProgress &)>;

struct LoadOptions {
  std::string provider = "host";  // a loaded provider's name
  std::uint32_t device = 0;
  Strategy strategy = Strategy::kMmap;  // kAuto: chosen by choose_strategy
  // kMmap: files are mapped privately and writable, so zero-copy roots are
  // writable; a write copies the page it touches and never reaches the file.
  bool copy_on_write = false;
  // kMmap: zero-copy roots are read in before the load returns
  // (weights/placement/warm_mapping.hpp), for callers that touch every byte.
  bool populate = false;
  // kMmap: populated as kAuto would populate a mapping: when the files are
  // mostly cold on a local block device and fit in the memory available
  // (read_strategy.hpp). For callers that touch every byte, as populate, but
  // paying nothing when the files are in the page cache already.
  bool populate_when_cold = false;
  // The parallel reads of the copying strategies.
  ReadEngine read_engine = ReadEngine::kAuto;
  std::size_t queue_depth = 16;
  std::uint64_t read_request_bytes = 4ull << 20;
  std::uint64_t max_bytes_in_flight = 64ull << 20;
  ProgressCallback progress;
  // The staging ring, for providers without host access (its defaults and
  // bounds: StagingShape).
  StagingShape staging;
  // Verified loads: digests hashed once the reads settle, from where the
  // bytes landed (weights/digests/landing.hpp);
  // a mismatch fails the load before any root reaches the caller.
  std::vector<DigestJob> digests;
  // Each component's source bytes hashed once every component is placed,
  // from the descriptors the load opened, nothing compared
  // (LoadedComponent::source_sha256), so a caller can check provider memory
  // against the files without opening them again.
  bool source_digests = false;
};

// One component as loaded: its root and what an embedder needs to read it
// (role, encoding, element type and dimensions as the schema gives them).
struct LoadedComponent {
  std::string id;
  std::string source;    // the checkpoint's name of the first source tensor
  Root *root = nullptr;  // nullptr once released on its own (rootspan_weights_release_component)
  std::uint64_t bytes = 0;
  std::size_t segments = 0;
  bool zero_copy = false;
  bool read_only = false;  // the root's memory must not be written (a read-only file region)
  ComponentRole role = ComponentRole::kValues;
  Encoding encoding = DenseEncoding{};
  rootspan_dtype dtype = ROOTSPAN_DTYPE_NONE;  // the physical element type: U8 for block-quantized bytes
  std::vector<std::uint64_t> dimensions;       // for block-quantized bytes, the block grid
  std::int32_t gguf_type = -1;                 // the ggml type id of its one GGUF source tensor, or -1
  // Where its bytes lie: its first segment's file (an index into
  // LoadResult::source_files; kNoSourceFile: no segment) and offset, and
  // whether that one range is all of it.
  static constexpr std::uint32_t kNoSourceFile = UINT32_MAX;
  std::uint32_t source_file = kNoSourceFile;
  std::uint64_t source_offset = 0;
  bool source_contiguous = false;
  std::string source_sha256;  // of the source bytes, hashed after placing (LoadOptions::source_digests); or empty
};

struct LoadResult {
  std::string provider;
  std::vector<LoadedComponent> components;
  std::vector<SkippedComponent> skipped;
  std::uint64_t total_bytes = 0;
  // The staging ring an upload used (staging_buffers 0: none was needed).
  std::size_t staging_buffers = 0;
  std::uint64_t staging_buffer_bytes = 0;
  bool staging_pinned = false;  // false: ordinary host memory; staging_note says why
  std::string staging_note;
  std::vector<DigestOutcome> digests;     // the digests checked, in job order
  std::vector<std::string> source_files;  // the files components lie in, relative to the checkpoint
  // How the files were read: the strategy asked for, the one used and why.
  Strategy requested_strategy = Strategy::kMmap;
  Strategy strategy = Strategy::kMmap;
  std::string strategy_reason;
  std::optional<ParallelReadStats> reads;  // set when bytes were copied by reads
  std::uint64_t warmed_bytes = 0;          // populate: mapped bytes read in before the load returned
};

// Loads every payload of `schema` into roots of options.provider. On failure
// or cancellation no root made here is left.
Result<LoadResult> load_components(Context &context, const Checkpoint &checkpoint, ResolvedSchema schema,
                                   const LoadOptions &options);

// Releases the roots of a load (Busy if one is still claimed; the others are
// released regardless).
Result<void> release_components(Context &context, LoadResult &result);

// The lowercase hex SHA-256 of a root's bytes, read back through its provider
// under a shared claim.
Result<std::string> root_sha256(Root &root);

}  // namespace rootspan::weights
