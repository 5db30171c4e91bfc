// Hashing a checkpoint's files (or components' byte ranges): one worker
// thread per job up to the machine's cores, the largest jobs first. A job's
// bytes come either from the files, read with pread from the descriptor the
// checkpoint was opened with (never reopening a name), or, in a verified
// load, from the memory the load placed them in (weights/digests/landing.hpp):
// what is hashed there is exactly what the caller is handed. SHA-256 of one
// job is sequential; separate jobs run in parallel.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <variant>

#include "core/claims.hpp"
#include "core/diagnostic.hpp"
#include "weights/files/input_file.hpp"
#include "weights/files/strided_read.hpp"

namespace rootspan {
class Sha256;
}

namespace rootspan::weights {

// Bytes of one file: a contiguous range, or strided rows (strided_read.hpp).
struct FileRange {
  std::shared_ptr<const InputFile> file;
  StridedRange bytes;
  // When set, the SHA-256 these bytes had when the load parsed them (a
  // header): read again for the job's digest, they must still be those.
  std::string as_parsed_sha256;
};

// Bytes a load placed and hands out: host memory (`host` set), or a device
// root read back through the claim the load holds on it.
struct LandedRange {
  const std::byte *host = nullptr;
  Claim *claim = nullptr;    // when `host` is null
  std::uint64_t offset = 0;  // into the claim
  std::uint64_t length = 0;
};

// One piece of a job's bytes, in the order they are hashed.
using DigestPiece = std::variant<FileRange, LandedRange>;

// Two placements of the same file bytes (two components naming one tensor):
// the hash reads `hashed`, and `again` must hold the same bytes.
struct LandedCopy {
  LandedRange hashed;
  LandedRange again;
  std::string component;  // the component `again` belongs to
};

// One digest to check: the SHA-256 of the concatenation of `ranges`
// (`expected` empty: only to compute it).
struct DigestJob {
  std::string kind;    // "file" or "component"
  std::string name;    // the file's name relative to the checkpoint, or the component id
  std::string source;  // where the expected digest comes from: "cache blob name" or "digest manifest"
  std::string expected;
  std::vector<FileRange> ranges;  // what the digest covers, in order
  // Set by a verified load once its reads are done (landing.hpp): the same
  // bytes as `ranges`, taken from where the load placed them where it did.
  std::vector<DigestPiece> pieces;
  std::vector<LandedCopy> copies;
  std::uint64_t bytes() const;
};

// What a finished job found.
struct DigestOutcome {
  std::string kind, name, source, sha256;
  std::uint64_t bytes = 0;
};

class ParallelHasher {
 public:
  // Starts hashing at once; `threads` 0: one per core. Hashes with the threads
  // that could be started (core/masked_thread.hpp); throws std::system_error
  // (or std::bad_alloc) where none could.
  explicit ParallelHasher(std::vector<DigestJob> jobs, unsigned threads = 0);
  ParallelHasher(const ParallelHasher &) = delete;
  ParallelHasher &operator=(const ParallelHasher &) = delete;
  // Stops the workers (a job in progress ends at its next chunk) and joins them.
  ~ParallelHasher();

  std::uint64_t bytes_total() const { return total_; }
  std::uint64_t bytes_done() const { return done_.load(std::memory_order_relaxed); }

  // Waits for every job, calling `poll` about every 50 ms meanwhile (a poll
  // that fails stops the workers and is returned). Fails with
  // ROOTSPAN_ERR_DIGEST_MISMATCH (operation "check_digests") naming the
  // first finished job whose digest differs, with the expected and the
  // actual digest, or with the read error of a job that could not be read;
  // the other workers are stopped then.
  Result<std::vector<DigestOutcome>> wait(const std::function<Result<void>()> &poll);

 private:
  void work();
  Result<std::string> hash(const DigestJob &job, std::byte *buffer);  // buffer: one chunk
  // Feeds `piece` to `sha`, a chunk at a time.
  Result<void> hash_piece(const DigestJob &job, const DigestPiece &piece, Sha256 &sha, std::byte *buffer);
  // Checks that each copy of the job holds the bytes hashed.
  Result<void> compare_copies(const DigestJob &job, std::byte *buffer);
  // The error of a finished job: its read error, or its digest mismatch.
  std::optional<Diagnostic> failure(std::size_t index) const;

  std::vector<DigestJob> jobs_;
  std::vector<std::optional<Result<std::string>>> results_;  // by job, set when it ends
  std::uint64_t total_ = 0;
  std::atomic<std::uint64_t> done_{0};
  std::atomic<std::size_t> next_{0};
  std::atomic<std::size_t> finished_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::size_t> order_;  // job indices, largest first
  std::mutex results_mutex_;
  std::condition_variable job_ended_;  // with results_mutex_
  std::vector<std::thread> workers_;
};

}  // namespace rootspan::weights
