// Hashing a load's files (or components' byte ranges) while the load reads
// them: one worker thread per job up to the machine's cores, the largest
// jobs first, each reading its ranges with pread from the descriptor the
// checkpoint was opened with (never reopening a name), so that what is hashed
// is what is loaded. Pages a worker reads are the ones the load maps or
// reads, so a cold file comes from storage once. SHA-256 of one job is
// sequential; separate jobs run in parallel.
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

#include "core/diagnostic.hpp"
#include "weights/files/input_file.hpp"
#include "weights/files/strided_read.hpp"

namespace rootspan::weights {

// Bytes of one file: a contiguous range, or strided rows (strided_read.hpp).
struct FileRange {
  std::shared_ptr<const InputFile> file;
  StridedRange bytes;
};

// One digest to check: the SHA-256 of the concatenation of `ranges`
// (`expected` empty: only to compute it).
struct DigestJob {
  std::string kind;    // "file" or "component"
  std::string name;    // the file's name relative to the checkpoint, or the component id
  std::string source;  // where the expected digest comes from: "cache blob name" or "digest manifest"
  std::string expected;
  std::vector<FileRange> ranges;
  std::uint64_t bytes() const;
};

// What a finished job found.
struct DigestOutcome {
  std::string kind, name, source, sha256;
  std::uint64_t bytes = 0;
};

class ParallelHasher {
 public:
  // Starts hashing at once; `threads` 0: one per core.
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
