// ParallelReader: reads many byte ranges of checkpoint files with many
// requests in flight, so that a cold load runs at the speed of the storage
// rather than of one read at a time (docs/cold-start.md).
//
// Engines. A small pool of threads calling pread (the default: measured the
// faster here, see parallel_reader.cpp), or io_uring (liburing) when asked
// for and the kernel allows it; a refused io_uring falls back to the pool,
// and the stats say why. Either way at most
// `queue_depth` requests and `max_bytes_in_flight` bytes are in flight, and
// every completion is handled on the thread that called submit() or drain(),
// so callbacks need no locks.
//
// Small ranges (buffered_range_bytes, 64 KiB) are read buffered in either
// mode, and count in stats().bytes but not direct_bytes. Buffered ranges that
// follow each other in a file are gathered into one request (gather_adjacent):
// a gathered request starts when the next range does not follow it, when it
// is full, or at drain().
//
// Direct reads (ReadMode::kDirect) open each file a second time with O_DIRECT
// through /proc/self/fd (the same open file, never its name again) and read
// whole aligned blocks: offsets rounded down to the file system's direct I/O
// alignment, lengths rounded up. The aligned middle of a range goes straight
// into the destination when the destination's address allows it; the head and
// tail blocks, or the whole range when it does not, go through an aligned
// bounce buffer and only the bytes asked for are copied out. A file that takes
// no direct reads (tmpfs, overlay, a file system without them, a refused
// reopen, EINVAL from the first read) is read buffered instead, and
// stats().fallbacks names it and why.
//
// Failure. A read that fails, or a file that ends early (truncated while the
// reads are in flight), makes submit() or drain() return ROOTSPAN_ERR_IO naming
// the file, offset and label; a completion callback that returns an error
// (a cancelled progress callback) is returned the same way. After the first
// error no read is started; those in flight are waited for, so no read writes
// into a destination after drain() (or the destructor) returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/diagnostic.hpp"
#include "weights/files/input_file.hpp"

namespace rootspan::weights {

enum class ReadMode { kBuffered, kDirect };
enum class ReadEngine { kAuto, kIoUring, kThreads };

struct ParallelReadOptions {
  ReadMode mode = ReadMode::kBuffered;
  // kAuto: pread threads (ROOTSPAN_READ_ENGINE=io_uring or threads in the
  // environment overrides it).
  ReadEngine engine = ReadEngine::kAuto;
  std::size_t queue_depth = 16;  // requests in flight at most (at least 1 is used)
  // The bytes the caller means to read, where it knows them (0: unknown).
  // The pread threads are as many as that keeps busy at a mebibyte each, at
  // most queue_depth and 8: a read of a small file (10,000 tensors, 0.6 MB)
  // starts one thread, not eight, whose start and join cost some 0.3 ms a
  // load here (4 ms for a process's first threads).
  std::uint64_t expected_bytes = 0;
  // A range longer than this is read as several requests. 4 MiB reads keep
  // a device busy while 16 of them stay within a 64 MiB budget.
  std::uint64_t request_bytes = 4ull << 20;
  std::uint64_t max_bytes_in_flight = 64ull << 20;  // a single request may exceed it alone
  // A range of at most this many bytes is read buffered even by a direct
  // reader: a direct read would fetch a whole block for it, and it could not
  // be gathered with its neighbours. 0: none.
  std::uint64_t buffered_range_bytes = 64ull << 10;
  // Buffered ranges that follow each other in one file, submitted one after
  // another, are read as one request of up to request_bytes (preadv into each
  // range's destination): a file of thousands of tensors is then read in
  // large requests, not one small one a tensor handed to a worker each (the
  // hand-offs were 45% of the samples of a read load of 10,000 tensors).
  bool gather_adjacent = true;
  std::string operation;  // names the caller's operation in errors
  // Called on the submitting thread after each request completes, with its
  // byte count; an error stops the reads and is returned by submit()/drain().
  std::function<Result<void>(std::uint64_t bytes)> on_complete;
};

// Names a range in errors ("component \"x\": tensor \"y\""; may be empty):
// its text, or a function that makes the text, called only when a request is
// made for the range (submit() calls it before it returns). Thousands of small
// ranges gathered into one request make one label, not thousands.
class ReadLabel {
 public:
  ReadLabel() = default;
  ReadLabel(std::string text) : text_(std::move(text)) {}  // NOLINT: a string is a label
  ReadLabel(const char *text) : text_(text) {}             // NOLINT: so is a literal
  template <typename MakeText>
  requires std::is_invocable_r_v<std::string, MakeText> ReadLabel(MakeText make)
      : make_(std::move(make)) {}  // NOLINT: so is what makes one
  std::string text() const { return make_ ? make_() : text_; }

 private:
  std::string text_;
  std::function<std::string()> make_;
};

// One range to read. `file` and the destination must stay valid
// until drain() has returned.
struct ReadRange {
  const InputFile *file = nullptr;
  std::uint64_t offset = 0;
  std::byte *destination = nullptr;
  std::uint64_t length = 0;
  ReadLabel label;
};

// What the reader did, for the load report.
struct ParallelReadStats {
  ReadEngine engine = ReadEngine::kThreads;  // the engine used
  std::string engine_note;                   // why io_uring was not used ("" when it was)
  std::size_t queue_depth = 0;
  std::size_t threads = 0;  // pread threads started (0: io_uring)
  std::uint64_t max_bytes_in_flight = 0;
  std::uint64_t requests = 0;               // requests completed
  std::uint64_t bytes = 0;                  // bytes delivered to destinations
  std::uint64_t direct_bytes = 0;           // of them, read with O_DIRECT
  std::uint64_t bounced_bytes = 0;          // of them, copied out of a bounce buffer
  std::size_t peak_requests_in_flight = 0;  // counted, for tests of the budget
  std::uint64_t peak_bytes_in_flight = 0;
  std::map<std::string, std::string> fallbacks;  // file -> why it was read buffered despite kDirect
};

const char *read_engine_name(ReadEngine engine);

class ParallelReader {
 public:
  static Result<std::unique_ptr<ParallelReader>> create(ParallelReadOptions options);
  // Waits for every read in flight.
  ~ParallelReader();
  ParallelReader(const ParallelReader &) = delete;
  ParallelReader &operator=(const ParallelReader &) = delete;

  // Queues a range, split into requests of at most request_bytes (or
  // gathered with the ranges before it); blocks, handling completions, while
  // the budget is full.
  Result<void> submit(const ReadRange &range);
  // Waits for every request queued; returns the first error.
  Result<void> drain();

  const ParallelReadStats &stats() const;

  // Whether ranges of `file` will be read with O_DIRECT: the file's checks
  // are made now, as its first submit() would make them (a file that falls
  // back to buffered reads is named in stats().fallbacks). A direct read
  // can still be refused later (EINVAL on the first one).
  bool reads_direct(const InputFile &file);

  class Engine;
  struct Request;
  struct FileState;

 private:
  explicit ParallelReader(ParallelReadOptions options);
  Result<void> start(Request request);
  Result<void> gather(const ReadRange &range);
  Result<void> start_gathered();
  void handle_one();
  void complete(Request &request, long result);
  FileState &state_of(const InputFile &file);

  ParallelReadOptions options_;
  ParallelReadStats stats_;
  std::unique_ptr<Engine> engine_;
  std::vector<std::unique_ptr<Request>> slots_;  // queue_depth of them; a free one has no file
  std::vector<Request *> free_;
  std::map<const InputFile *, std::unique_ptr<FileState>> files_;
  std::size_t in_flight_ = 0;
  std::uint64_t bytes_in_flight_ = 0;
  std::optional<Diagnostic> error_;
  std::unique_ptr<Request> gathered_;  // buffered ranges gathered, not yet started
};

}  // namespace rootspan::weights
