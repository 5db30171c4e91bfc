#include "weights/digests/parallel_hasher.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>

#include "core/copy.hpp"
#include "core/masked_thread.hpp"
#include "core/sha256.hpp"
#include "core/text/quoting.hpp"

namespace rootspan::weights {

namespace {

constexpr const char *kOperation = "check_digests";
// Small enough that the chunk a read copies is still in the core's cache
// when SHA-256 reads it (4 MiB chunks hashed 1.5x slower), and that a stop is
// seen within a millisecond; large enough that a read costs little per byte.
constexpr std::uint64_t kChunk = std::uint64_t{256} << 10;
// The kernel copies page-cache pages into a page-aligned buffer at full speed;
// into malloc's 16-byte-aligned large blocks it ran about half as fast here.
constexpr std::size_t kBufferAlignment = 4096;

struct AlignedFree {
  void operator()(std::byte *p) const { ::operator delete[](p, std::align_val_t{kBufferAlignment}); }
};

}  // namespace

std::uint64_t DigestJob::bytes() const {
  std::uint64_t n = 0;
  for (const FileRange &r : ranges) n += r.bytes.bytes();
  return n;
}

ParallelHasher::ParallelHasher(std::vector<DigestJob> jobs, unsigned threads)
    : jobs_(std::move(jobs)), results_(jobs_.size()), order_(jobs_.size()) {
  for (const DigestJob &job : jobs_) total_ += job.bytes();
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  std::stable_sort(order_.begin(), order_.end(),
                   [&](std::size_t a, std::size_t b) { return jobs_[a].bytes() > jobs_[b].bytes(); });
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t count = std::min<std::size_t>(threads, jobs_.size());
  start_masked_threads(workers_, count, [this] { work(); });  // each takes the next job: fewer threads still end
}

ParallelHasher::~ParallelHasher() {
  stop_ = true;
  for (std::thread &worker : workers_) worker.join();
}

Result<void> ParallelHasher::hash_piece(const DigestJob &job, const DigestPiece &piece, Sha256 &sha,
                                        std::byte *buffer) {
  auto take = [&](std::span<const std::byte> bytes) -> Result<void> {
    if (stop_) return make_error(ROOTSPAN_ERR_CANCELLED, kOperation, "hashing stopped");
    sha.update(bytes);
    done_.fetch_add(bytes.size(), std::memory_order_relaxed);
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  };
  if (const auto *landed = std::get_if<LandedRange>(&piece)) {
    for (std::uint64_t done = 0; done < landed->length; done += kChunk) {
      const std::uint64_t n = std::min(kChunk, landed->length - done);
      if (landed->host != nullptr) {
        BOOST_OUTCOME_TRY(take({landed->host + done, n}));
      } else {
        BOOST_OUTCOME_TRY(copy_to_host(*landed->claim, landed->offset + done, buffer, n));
        BOOST_OUTCOME_TRY(take({buffer, n}));
      }
    }
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  }
  const FileRange &range = std::get<FileRange>(piece);
  if (range.as_parsed_sha256.empty()) return read_strided(*range.file, range.bytes, {buffer, kChunk}, take);
  // A header: hashed into the job and on its own, to prove it unchanged.
  Sha256 alone;
  BOOST_OUTCOME_TRY(
      read_strided(*range.file, range.bytes, {buffer, kChunk}, [&](std::span<const std::byte> bytes) -> Result<void> {
        alone.update(bytes);
        return take(bytes);
      }));
  if (const std::string now = alone.hex_digest(); now != range.as_parsed_sha256) {
    return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, kOperation,
                      job.kind + " " + quoted_text(job.name) + " changed while it was loaded: its header (bytes 0 to " +
                          std::to_string(range.bytes.bytes()) + ") had SHA-256 " + range.as_parsed_sha256 +
                          " when it was parsed and " + now + " when it was hashed");
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

// The bytes of `length` bytes of `r` from `skip` on: in place on the host,
// read back into `buffer` from a device.
static Result<const std::byte *> landed_bytes(const LandedRange &r, std::uint64_t skip, std::uint64_t length,
                                              std::byte *buffer) {
  if (r.host != nullptr) return r.host + skip;
  auto copied = copy_to_host(*r.claim, r.offset + skip, buffer, length);
  if (!copied) return copied.error();
  return static_cast<const std::byte *>(buffer);
}

Result<void> ParallelHasher::compare_copies(const DigestJob &job, std::byte *buffer) {
  std::vector<std::byte> other;
  for (const LandedCopy &copy : job.copies) {
    if (other.empty()) other.resize(kChunk);
    for (std::uint64_t done = 0; done < copy.again.length; done += kChunk) {
      const std::uint64_t n = std::min(kChunk, copy.again.length - done);
      auto hashed = landed_bytes(copy.hashed, done, n, buffer);
      if (!hashed) return hashed.error();
      auto again = landed_bytes(copy.again, done, n, other.data());
      if (!again) return again.error();
      if (std::memcmp(hashed.value(), again.value(), n) != 0) {
        return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, kOperation,
                          "component " + quoted_text(copy.component) + " does not hold the bytes of " + job.kind + " " +
                              quoted_text(job.name) + " that were hashed, which another component also holds");
      }
    }
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<std::string> ParallelHasher::hash(const DigestJob &job, std::byte *buffer) {
  Sha256 sha;
  if (job.pieces.empty()) {
    for (const FileRange &range : job.ranges) {
      BOOST_OUTCOME_TRY(hash_piece(job, range, sha, buffer));
    }
  } else {
    for (const DigestPiece &piece : job.pieces) {
      BOOST_OUTCOME_TRY(hash_piece(job, piece, sha, buffer));
    }
  }
  BOOST_OUTCOME_TRY(compare_copies(job, buffer));
  return sha.hex_digest();
}

void ParallelHasher::work() {
  std::unique_ptr<std::byte[], AlignedFree> buffer;
  for (;;) {
    const std::size_t slot = next_.fetch_add(1);
    if (slot >= order_.size()) return;
    const std::size_t index = order_[slot];
    Result<std::string> result = make_error(ROOTSPAN_ERR_CANCELLED, kOperation, "hashing stopped");
    try {
      if (!buffer) {
        buffer.reset(new (std::align_val_t{kBufferAlignment}) std::byte[kChunk]);
      }
      if (!stop_) result = hash(jobs_[index], buffer.get());
    } catch (const std::bad_alloc &) {
      result = make_error(ROOTSPAN_ERR_OUT_OF_MEMORY, kOperation, "cannot allocate a SHA-256 digest or its buffer");
    }
    {
      const std::lock_guard lock(results_mutex_);
      results_[index] = std::move(result);
      finished_.fetch_add(1);
    }
    job_ended_.notify_all();
  }
}

std::optional<Diagnostic> ParallelHasher::failure(std::size_t index) const {
  const DigestJob &job = jobs_[index];
  const Result<std::string> &result = *results_[index];
  if (!result) return result.error();
  if (job.expected.empty() || result.value() == job.expected) return std::nullopt;
  return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, kOperation,
                    job.kind + " " + quoted_text(job.name) + " is not the published one: its SHA-256 is " +
                        result.value() + ", expected " + job.expected + " (from the " + job.source + ")");
}

Result<std::vector<DigestOutcome>> ParallelHasher::wait(const std::function<Result<void>()> &poll) {
  for (;;) {
    {
      std::unique_lock lock(results_mutex_);
      job_ended_.wait_for(lock, std::chrono::milliseconds(50), [this] { return finished_.load() == jobs_.size(); });
      // A job that failed ends the wait at once: the load fails either way.
      for (std::size_t i = 0; i < jobs_.size(); ++i) {
        if (!results_[i]) continue;
        if (auto failed = failure(i)) {
          stop_ = true;
          return *failed;
        }
      }
      if (finished_.load() == jobs_.size()) break;
    }
    if (auto polled = poll(); !polled) {
      stop_ = true;
      return polled.error();
    }
  }
  std::vector<DigestOutcome> outcomes;
  const std::lock_guard lock(results_mutex_);
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    const DigestJob &job = jobs_[i];
    outcomes.push_back({job.kind, job.name, job.source, results_[i]->value(), job.bytes()});
  }
  return outcomes;
}

}  // namespace rootspan::weights
