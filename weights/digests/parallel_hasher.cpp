#include "weights/digests/parallel_hasher.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>

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
  workers_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) workers_.emplace_back([this] { work(); });
}

ParallelHasher::~ParallelHasher() {
  stop_ = true;
  for (std::thread &worker : workers_) worker.join();
}

Result<std::string> ParallelHasher::hash(const DigestJob &job, std::byte *buffer) {
  Sha256 sha;
  for (const FileRange &range : job.ranges) {
    BOOST_OUTCOME_TRY(
        read_strided(*range.file, range.bytes, {buffer, kChunk}, [&](std::span<const std::byte> bytes) -> Result<void> {
          if (stop_) return make_error(ROOTSPAN_ERR_CANCELLED, kOperation, "hashing stopped");
          sha.update(bytes);
          done_.fetch_add(bytes.size(), std::memory_order_relaxed);
          return BOOST_OUTCOME_V2_NAMESPACE::success();
        }));
  }
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
