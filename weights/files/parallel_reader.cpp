#include "weights/files/parallel_reader.hpp"

#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "core/masked_thread.hpp"
#include "core/text/quoting.hpp"
#include "weights/files/file_system.hpp"

#ifdef ROOTSPAN_HAVE_LIBURING
#include <liburing.h>
#endif

namespace rootspan::weights {

namespace {

constexpr std::size_t kMaximumThreads = 8;
constexpr std::uint64_t kBytesPerThread = 1ull << 20;       // ParallelReadOptions::expected_bytes
constexpr std::uint64_t kMaximumRequestBytes = 1ull << 30;  // io_uring takes 32-bit lengths
constexpr std::uint32_t kMaximumAlignment = 4096;           // the bounce buffers' alignment
constexpr std::size_t kMaximumPieces = 1024;                // ranges gathered into one preadv (IOV_MAX)

std::uint64_t round_down(std::uint64_t value, std::uint64_t unit) { return value / unit * unit; }
std::uint64_t round_up(std::uint64_t value, std::uint64_t unit) { return (value + unit - 1) / unit * unit; }

struct FreeDeleter {
  void operator()(std::byte *p) const { std::free(p); }
};

}  // namespace

const char *read_engine_name(ReadEngine engine) {
  switch (engine) {
    case ReadEngine::kIoUring:
      return "io_uring";
    case ReadEngine::kThreads:
      return "pread threads";
    case ReadEngine::kAuto:
      break;
  }
  return "auto";
}

// One kernel read and what it is for: the caller's bytes [offset, offset +
// length) for `destination`, read as [read_at, read_at + read_length) into
// `read_into` (the destination itself, or the slot's bounce buffer).
struct ParallelReader::Request {
  const InputFile *file = nullptr;  // nullptr: the slot is free
  std::string label;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::byte *destination = nullptr;
  int fd = -1;
  bool direct = false;
  bool bounced = false;
  std::uint64_t read_at = 0;
  std::uint64_t read_length = 0;
  std::uint64_t read_done = 0;
  std::byte *read_into = nullptr;
  std::uint64_t alignment = 1;  // direct: a short read ending off this is the end of the file
  bool copied = false;          // a bounced read's bytes are in the destination already (copied by a worker)
  // Bytes from read_at the caller's range needs: a direct read may end at the
  // file's end inside its last block.
  std::uint64_t needed() const { return offset + length - read_at; }
  // A bounced read's wanted bytes, out of the bounce buffer.
  void copy_out() {
    std::memcpy(destination, read_into + (offset - read_at), length);
    copied = true;
  }
  // The slot's own aligned bounce buffer, grown as needed and kept.
  std::unique_ptr<std::byte, FreeDeleter> bounce;
  std::uint64_t bounce_bytes = 0;
  // A gathered read: adjacent buffered ranges of one file, read as one by
  // preadv, each piece into its own destination (empty: into read_into).
  struct Piece {
    std::byte *destination;
    std::uint64_t length;
  };
  std::vector<Piece> pieces;
  std::vector<iovec> vector;  // the pieces from read_done on, as the kernel takes them
  // Fills `vector` with what is still to read of the pieces.
  void fill_vector() {
    vector.clear();
    std::uint64_t skip = read_done;
    for (const Piece &piece : pieces) {
      if (skip >= piece.length) {
        skip -= piece.length;
        continue;
      }
      vector.push_back({piece.destination + skip, piece.length - skip});
      skip = 0;
    }
  }
  // The rest of the read, on the calling thread: bytes read, or -errno.
  long read_some() {
    long result;
    do {
      if (pieces.empty()) {
        result = ::pread(fd, read_into + read_done, read_length - read_done, static_cast<off_t>(read_at + read_done));
      } else {
        fill_vector();
        result = ::preadv(fd, vector.data(), static_cast<int>(vector.size()), static_cast<off_t>(read_at + read_done));
      }
    } while (result < 0 && errno == EINTR);
    return result < 0 ? -errno : result;
  }
};

// How each file is read: buffered through the checkpoint's descriptor, or
// direct through a second one opened with O_DIRECT.
struct ParallelReader::FileState {
  int direct_fd = -1;
  bool refused = false;  // a direct read was refused: read buffered from then on
  std::uint64_t offset_alignment = 1;
  std::uint64_t memory_alignment = 1;
  ~FileState() {
    if (direct_fd >= 0) ::close(direct_fd);
  }
};

class ParallelReader::Engine {
 public:
  virtual ~Engine() = default;
  // Starts the rest of request's kernel read; false with errno-like `error`.
  virtual bool start(Request &request, int &error) = 0;
  // Waits for one started read: the request and the read's result (bytes,
  // or -errno).
  virtual std::pair<Request *, long> wait() = 0;
};

namespace {

// A pool of threads calling pread, one request at a time each.
class ThreadEngine final : public ParallelReader::Engine {
 public:
  // As many threads as could be started, at most `threads`; throws where none could (start_masked_threads).
  explicit ThreadEngine(std::size_t threads) {
    start_masked_threads(workers_, threads, [this] { work(); });
  }
  ~ThreadEngine() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    queued_cv_.notify_all();
    for (std::thread &worker : workers_) worker.join();
  }
  bool start(ParallelReader::Request &request, int & /*error*/) override {
    {
      std::lock_guard lock(mutex_);
      queued_.push_back(&request);
    }
    queued_cv_.notify_one();
    return true;
  }
  std::size_t threads() const { return workers_.size(); }
  std::pair<ParallelReader::Request *, long> wait() override {
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [this] { return !done_.empty(); });
    auto next = done_.front();
    done_.pop_front();
    return next;
  }

 private:
  void work() {
    std::unique_lock lock(mutex_);
    for (;;) {
      queued_cv_.wait(lock, [this] { return stop_ || !queued_.empty(); });
      if (queued_.empty()) return;  // stopping, nothing left
      ParallelReader::Request *request = queued_.front();
      queued_.pop_front();
      lock.unlock();
      const long result = request->read_some();
      // A bounced read that is complete is copied out here, so that copies
      // (and the destination's first-touch faults) run on every worker.
      if (result > 0 && request->bounced &&
          request->read_done + static_cast<std::uint64_t>(result) >= request->needed()) {
        request->copy_out();
      }
      lock.lock();
      done_.emplace_back(request, result);
      done_cv_.notify_one();
    }
  }

  std::mutex mutex_;
  std::condition_variable queued_cv_;
  std::condition_variable done_cv_;
  std::deque<ParallelReader::Request *> queued_;
  std::deque<std::pair<ParallelReader::Request *, long>> done_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

#ifdef ROOTSPAN_HAVE_LIBURING
// One io_uring of queue_depth entries, submitted to and reaped on the
// calling thread.
class UringEngine final : public ParallelReader::Engine {
 public:
  static std::unique_ptr<UringEngine> create(std::size_t depth, std::string &why) {
    auto engine = std::unique_ptr<UringEngine>(new UringEngine);
    const int rc = ::io_uring_queue_init(static_cast<unsigned>(depth), &engine->ring_, 0);
    if (rc < 0) {
      why = std::string("io_uring is not available (") + std::strerror(-rc) + "): reading with pread threads";
      return nullptr;
    }
    engine->ready_ = true;
    return engine;
  }
  ~UringEngine() override {
    if (ready_) ::io_uring_queue_exit(&ring_);
  }
  bool start(ParallelReader::Request &request, int &error) override {
    io_uring_sqe *sqe = ::io_uring_get_sqe(&ring_);
    if (sqe == nullptr) {
      error = EBUSY;
      return false;
    }
    if (request.pieces.empty()) {
      ::io_uring_prep_read(sqe, request.fd, request.read_into + request.read_done,
                           static_cast<unsigned>(request.read_length - request.read_done),
                           request.read_at + request.read_done);
    } else {  // the vector stays in the request, untouched, until the read completes
      request.fill_vector();
      ::io_uring_prep_readv(sqe, request.fd, request.vector.data(), static_cast<unsigned>(request.vector.size()),
                            request.read_at + request.read_done);
    }
    ::io_uring_sqe_set_data(sqe, &request);
    int rc;
    do {
      rc = ::io_uring_submit(&ring_);
    } while (rc == -EINTR);
    if (rc < 0) {
      error = -rc;
      return false;
    }
    return true;
  }
  std::pair<ParallelReader::Request *, long> wait() override {
    io_uring_cqe *cqe = nullptr;
    int rc;
    do {
      rc = ::io_uring_wait_cqe(&ring_, &cqe);
    } while (rc == -EINTR);
    if (rc < 0 || cqe == nullptr) std::abort();  // only a started read is waited for: the ring holds its completion
    auto *request = static_cast<ParallelReader::Request *>(::io_uring_cqe_get_data(cqe));
    const long result = cqe->res;
    ::io_uring_cqe_seen(&ring_, cqe);
    return {request, result};
  }

 private:
  UringEngine() = default;
  io_uring ring_{};
  bool ready_ = false;
};
#endif

}  // namespace

ParallelReader::ParallelReader(ParallelReadOptions options) : options_(std::move(options)) {}

Result<std::unique_ptr<ParallelReader>> ParallelReader::create(ParallelReadOptions options) {
  options.queue_depth = std::clamp<std::size_t>(options.queue_depth, 1, 1024);
  options.request_bytes = std::clamp<std::uint64_t>(round_up(std::max<std::uint64_t>(options.request_bytes, 1), 4096),
                                                    4096, kMaximumRequestBytes);
  options.max_bytes_in_flight = std::max<std::uint64_t>(options.max_bytes_in_flight, 1);
  auto reader = std::unique_ptr<ParallelReader>(new ParallelReader(std::move(options)));
  ParallelReadStats &stats = reader->stats_;
  stats.queue_depth = reader->options_.queue_depth;
  stats.max_bytes_in_flight = reader->options_.max_bytes_in_flight;
  // ROOTSPAN_READ_ENGINE=threads (or io_uring) overrides kAuto: for a
  // sandbox whose seccomp filter lets io_uring set up but fails its reads.
  if (const char *forced = std::getenv("ROOTSPAN_READ_ENGINE");
      forced && reader->options_.engine == ReadEngine::kAuto) {
    if (std::strcmp(forced, "threads") == 0) reader->options_.engine = ReadEngine::kThreads;
    if (std::strcmp(forced, "io_uring") == 0) reader->options_.engine = ReadEngine::kIoUring;
  }
  // kAuto reads on pread threads. io_uring completes every read on the one
  // submitting thread, so the destination's first-touch faults and the
  // bounce copies of direct reads (a root's address rarely lines up with the
  // file's blocks) run there one after another, while each pread thread does
  // its own: on a 1 GiB file, cold, buffered 1.6 s against 3.8 s, direct
  // 1.5 s against 2.3 s (medians of five; docs/cold-start.md).
  if (reader->options_.engine == ReadEngine::kAuto) {
    reader->options_.engine = ReadEngine::kThreads;
    stats.engine_note = "pread threads: each faults and copies on its own core (io_uring on request)";
  } else if (reader->options_.engine == ReadEngine::kThreads) {
    stats.engine_note = "pread threads were asked for";
  }
  if (reader->options_.engine != ReadEngine::kThreads) {
#ifdef ROOTSPAN_HAVE_LIBURING
    if (auto uring = UringEngine::create(reader->options_.queue_depth, stats.engine_note)) {
      reader->engine_ = std::move(uring);
      stats.engine = ReadEngine::kIoUring;
    }
#else
    stats.engine_note = "built without liburing: reading with pread threads";
#endif
  }
  if (!reader->engine_) {
    std::size_t threads = std::min(reader->options_.queue_depth, kMaximumThreads);
    if (const std::uint64_t expected = reader->options_.expected_bytes; expected != 0) {
      const std::uint64_t kept_busy = expected / kBytesPerThread + (expected % kBytesPerThread != 0);
      threads = static_cast<std::size_t>(std::min<std::uint64_t>(threads, kept_busy));  // at least 1
    }
    try {
      auto engine = std::make_unique<ThreadEngine>(threads);
      stats.threads = engine->threads();
      reader->engine_ = std::move(engine);
    } catch (const std::system_error &e) {
      return make_error(ROOTSPAN_ERR_OUT_OF_MEMORY, reader->options_.operation,
                        std::string("cannot start the read threads: ") + e.what());
    }
    stats.engine = ReadEngine::kThreads;
  }
  for (std::size_t i = 0; i < reader->options_.queue_depth; ++i) {
    reader->slots_.push_back(std::make_unique<Request>());
    reader->free_.push_back(reader->slots_.back().get());
  }
  return reader;
}

ParallelReader::~ParallelReader() {
  while (in_flight_ > 0) handle_one();
}

const ParallelReadStats &ParallelReader::stats() const { return stats_; }

ParallelReader::FileState &ParallelReader::state_of(const InputFile &file) {
  auto found = files_.find(&file);
  if (found != files_.end()) return *found->second;
  auto state = std::make_unique<FileState>();
  if (options_.mode == ReadMode::kDirect) {
    const FileSystem fs = file_system_of(file.fd());
    const DirectAlignment alignment = direct_alignment_of(file.fd());
    std::string why;
    if (fs.kind == FileSystemKind::kMemory) {
      why = fs.name + " holds its files in memory: a direct read would bypass nothing";
    } else if (fs.kind == FileSystemKind::kOverlay) {
      why = "overlay passes reads to the file system beneath it, which may not take direct reads";
    } else if (!alignment.why.empty()) {
      why = alignment.why + " (" + fs.name + ")";
    } else if (alignment.offset > kMaximumAlignment || alignment.memory > kMaximumAlignment) {
      why = "its direct I/O alignment (" + std::to_string(alignment.offset) + " bytes in the file, " +
            std::to_string(alignment.memory) + " in memory) is more than " + std::to_string(kMaximumAlignment);
    } else {
      // The same open file, reopened through the kernel's link to it: the
      // file is never looked up by name again.
      const std::string self = "/proc/self/fd/" + std::to_string(file.fd());
      const int fd = ::open(self.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
      struct stat opened {};
      struct stat original {};
      if (fd < 0) {
        why = std::string("reopening it with O_DIRECT failed: ") + std::strerror(errno);
      } else if (::fstat(fd, &opened) != 0 || ::fstat(file.fd(), &original) != 0 || opened.st_dev != original.st_dev ||
                 opened.st_ino != original.st_ino) {
        ::close(fd);
        why = "reopening it with O_DIRECT gave another file";
      } else {
        state->direct_fd = fd;
        state->offset_alignment = alignment.offset;
        state->memory_alignment = alignment.memory;
      }
    }
    if (!why.empty()) stats_.fallbacks[file.path().string()] = why;
  }
  return *files_.emplace(&file, std::move(state)).first->second;
}

bool ParallelReader::reads_direct(const InputFile &file) {
  const FileState &state = state_of(file);
  return state.direct_fd >= 0 && !state.refused;
}

Result<void> ParallelReader::submit(const ReadRange &range) {
  if (error_) return *error_;
  if (range.length == 0) return BOOST_OUTCOME_V2_NAMESPACE::success();
  if (range.file == nullptr || range.destination == nullptr) {
    return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, options_.operation, "a read needs a file and a destination");
  }
  FileState &state = state_of(*range.file);
  const bool buffered = state.direct_fd < 0 || state.refused || range.length <= options_.buffered_range_bytes;
  if (buffered && options_.gather_adjacent && range.length <= options_.request_bytes) return gather(range);
  BOOST_OUTCOME_TRY(start_gathered());  // what was gathered before this range starts first
  // Requests of the range, in file order: [offset, offset + length) for
  // destination; direct ones are aligned below.
  std::vector<Request> pieces;
  const std::string label = range.label.text();
  auto add = [&](std::uint64_t offset, std::uint64_t length, bool direct, bool bounced) {
    for (std::uint64_t done = 0; done < length; done += options_.request_bytes) {
      Request r;
      r.file = range.file;
      r.label = label;
      r.offset = offset + done;
      r.length = std::min(options_.request_bytes, length - done);
      r.destination = range.destination + (r.offset - range.offset);
      r.direct = direct;
      r.bounced = bounced;
      pieces.push_back(std::move(r));
    }
  };
  if (buffered) {
    add(range.offset, range.length, false, false);
  } else {
    // The middle starts on a block that both alignments allow: where memory
    // lines up with the file (direct_landing.hpp), its address is then aligned
    // too, even when memory must be aligned more than offsets.
    const std::uint64_t block = std::max(state.offset_alignment, state.memory_alignment);
    const std::uint64_t end = range.offset + range.length;
    const std::uint64_t middle_begin = round_up(range.offset, block);
    const std::uint64_t middle_end = round_down(end, block);
    const auto middle_address = reinterpret_cast<std::uintptr_t>(range.destination + (middle_begin - range.offset));
    if (middle_end > middle_begin && middle_address % state.memory_alignment == 0) {
      // The aligned middle goes straight into the destination; the partial
      // head and tail blocks through the bounce buffer.
      if (middle_begin > range.offset) add(range.offset, middle_begin - range.offset, true, true);
      add(middle_begin, middle_end - middle_begin, true, false);
      if (end > middle_end) add(middle_end, end - middle_end, true, true);
    } else {
      add(range.offset, range.length, true, true);
    }
  }
  for (Request &r : pieces) {
    if (r.direct) {
      r.fd = state.direct_fd;
      r.alignment = state.offset_alignment;
      r.read_at = round_down(r.offset, r.alignment);
      r.read_length = round_up(r.offset + r.length, r.alignment) - r.read_at;
    } else {
      r.fd = range.file->fd();
      r.read_at = r.offset;
      r.read_length = r.length;
    }
    BOOST_OUTCOME_TRY(start(std::move(r)));
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<void> ParallelReader::gather(const ReadRange &range) {
  if (gathered_ &&
      (gathered_->file != range.file || gathered_->offset + gathered_->length != range.offset ||
       gathered_->length + range.length > options_.request_bytes || gathered_->pieces.size() >= kMaximumPieces)) {
    BOOST_OUTCOME_TRY(start_gathered());
  }
  if (!gathered_) {
    gathered_ = std::make_unique<Request>();
    gathered_->file = range.file;
    gathered_->label = range.label.text();  // the first range's names the request
    gathered_->offset = range.offset;
    gathered_->fd = range.file->fd();
    gathered_->read_at = range.offset;
  }
  gathered_->pieces.push_back({range.destination, range.length});
  gathered_->length += range.length;
  gathered_->read_length = gathered_->length;
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<void> ParallelReader::start_gathered() {
  if (!gathered_) return BOOST_OUTCOME_V2_NAMESPACE::success();
  Request request = std::move(*gathered_);
  gathered_.reset();
  if (request.pieces.size() == 1) {  // one range: a plain read
    request.destination = request.pieces.front().destination;
    request.pieces.clear();
  } else {
    request.label += " and the " + std::to_string(request.pieces.size() - 1) + " ranges after it";
  }
  return start(std::move(request));
}

Result<void> ParallelReader::start(Request request) {
  while (!error_ &&
         (free_.empty() || (in_flight_ > 0 && bytes_in_flight_ + request.read_length > options_.max_bytes_in_flight))) {
    handle_one();
  }
  if (error_) return *error_;
  Request &slot = *free_.back();
  free_.pop_back();
  // The slot keeps its bounce buffer; everything else is the request's.
  auto bounce = std::move(slot.bounce);
  const std::uint64_t bounce_bytes = slot.bounce_bytes;
  slot = std::move(request);
  slot.bounce = std::move(bounce);
  slot.bounce_bytes = bounce_bytes;
  if (slot.bounced) {
    if (slot.bounce_bytes < slot.read_length) {
      const std::uint64_t bytes = round_up(slot.read_length, 4096);
      slot.bounce.reset(static_cast<std::byte *>(std::aligned_alloc(4096, bytes)));
      slot.bounce_bytes = slot.bounce ? bytes : 0;
      if (!slot.bounce) {
        slot.file = nullptr;
        free_.push_back(&slot);
        return make_error(ROOTSPAN_ERR_OUT_OF_MEMORY, options_.operation,
                          "cannot allocate a " + std::to_string(bytes) + "-byte bounce buffer for direct reads");
      }
    }
    slot.read_into = slot.bounce.get();
  } else if (slot.pieces.empty()) {
    slot.read_into = slot.destination + (slot.read_at - slot.offset);
  }
  ++in_flight_;
  bytes_in_flight_ += slot.read_length;
  stats_.peak_requests_in_flight = std::max(stats_.peak_requests_in_flight, in_flight_);
  stats_.peak_bytes_in_flight = std::max(stats_.peak_bytes_in_flight, bytes_in_flight_);
  if (int error = 0; !engine_->start(slot, error)) complete(slot, -error);
  if (error_) return *error_;
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

void ParallelReader::handle_one() {
  auto [request, result] = engine_->wait();
  complete(*request, result);
}

void ParallelReader::complete(Request &r, long result) {
  auto finish = [&](std::optional<Diagnostic> failure) {
    --in_flight_;
    bytes_in_flight_ -= r.read_length;
    const std::uint64_t length = r.length;
    const bool direct = r.direct;
    const bool bounced = r.bounced;
    r.file = nullptr;
    free_.push_back(&r);
    if (failure) {
      if (!error_) error_ = std::move(failure);
      return;
    }
    ++stats_.requests;
    stats_.bytes += length;
    if (direct) stats_.direct_bytes += length;
    if (bounced) stats_.bounced_bytes += length;
    if (!error_ && options_.on_complete) {
      auto done = options_.on_complete(length);
      if (!done) error_ = done.error();
    }
  };
  auto where = [&] {
    std::string text = r.label.empty() ? "" : r.label + ": ";
    return text + quoted_text(r.file->path().string());
  };
  if (result == -EINVAL && r.direct) {
    // The file system refused this direct read: read the file buffered from
    // now on, starting with this request.
    stats_.fallbacks[r.file->path().string()] = "a direct read was refused (Invalid argument)";
    files_.at(r.file)->refused = true;  // pieces already queued still read direct, and fall back one by one
    r.direct = false;
    r.bounced = false;
    r.fd = r.file->fd();
    r.read_at = r.offset;
    bytes_in_flight_ -= r.read_length;  // the budget counts what is read now: the unaligned length
    r.read_length = r.length;
    bytes_in_flight_ += r.read_length;
    r.read_done = 0;
    r.read_into = r.destination;
    int error = 0;
    if (!engine_->start(r, error))
      result = -error;
    else
      return;
  }
  if (result < 0) {
    return finish(make_error(ROOTSPAN_ERR_IO, options_.operation,
                             where() + ": read of " + std::to_string(r.length) + " bytes at offset " +
                                 std::to_string(r.offset) + " failed: " + std::strerror(static_cast<int>(-result))));
  }
  r.read_done += static_cast<std::uint64_t>(result);
  const std::uint64_t needed = r.needed();
  const bool at_end_of_file = result == 0 || (r.direct && r.read_done % r.alignment != 0);
  if (r.read_done < needed && !at_end_of_file) {
    int error = 0;
    if (engine_->start(r, error)) return;  // the rest of a short read
    return finish(
        make_error(ROOTSPAN_ERR_IO, options_.operation, where() + ": cannot queue a read: " + std::strerror(error)));
  }
  if (r.read_done < needed) {
    const std::uint64_t got = std::max(r.read_done, r.offset - r.read_at) - (r.offset - r.read_at);
    return finish(make_error(ROOTSPAN_ERR_IO, options_.operation,
                             where() + ": file ended early (truncated while it was read?): read " +
                                 std::to_string(std::min(got, r.length)) + " of " + std::to_string(r.length) +
                                 " bytes at offset " + std::to_string(r.offset),
                             r.length, std::min(got, r.length)));
  }
  if (r.bounced && !r.copied) r.copy_out();
  finish(std::nullopt);
}

Result<void> ParallelReader::drain() {
  auto started = start_gathered();
  while (in_flight_ > 0) handle_one();
  if (!started) return started.error();
  if (error_) return *error_;
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace rootspan::weights
