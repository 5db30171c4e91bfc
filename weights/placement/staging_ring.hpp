// The staging ring of an upload to a provider without host access: a few
// host buffers, allocated once per load, that file reads fill while the
// provider copies earlier buffers to the device asynchronously.
//
// The buffers are pinned memory of the provider itself (ROOTSPAN_MEMORY_HOST_PINNED,
// mapped for writing for the whole load), so that the device's copy engine
// reads them directly; allocating pinned memory is slow, which is why it
// happens once per load and never per tensor. A provider that has no
// host-accessible pinned memory (its allocate answers UNSUPPORTED, or the
// memory has no host view) gets ordinary host buffers instead: its copy hook
// then copies from pageable memory, slower but correct, and pinned() and
// fallback_reason() say so. Any other allocation failure fails the load.
//
// Reads are packed: several small chunks share one buffer, each with its own
// copy event. A buffer is reused only after every copy reading from it has
// completed; drain() waits for all of them, and the destructor waits for any
// still in flight (a failed or cancelled load) before it releases the buffers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/copy.hpp"

namespace rootspan::weights {

// How many buffers a load's ring has and how big each is: the defaults, the
// bounds and the floor in one place, whoever asks (the C API, C++ callers).
struct StagingShape {
  // 4 x 16 MiB: 16 MiB copies run at a link's full rate (small copies pay a
  // fixed cost each), and four buffers let one be filled while up to three
  // are being copied, so a slow read does not stall the copy engine; 64 MiB
  // of pinned memory per load is cheap beside the weights it uploads.
  static constexpr std::size_t kDefaultBuffers = 4;
  static constexpr std::uint64_t kDefaultBytes = 16ull << 20;
  // Bounds that keep a wrong value from asking for absurd pinned memory.
  static constexpr std::size_t kMaxBuffers = 64;
  static constexpr std::uint64_t kMaxBytes = 1ull << 30;
  // A buffer smaller than a page gains nothing: a smaller one asked for gets this.
  static constexpr std::uint64_t kMinBytes = 4096;

  std::size_t buffers = kDefaultBuffers;  // 0: the default
  std::uint64_t bytes = kDefaultBytes;    // per buffer; 0: the default
};

// `shape` as a ring is made: 0 taken as the default, a buffer below
// kMinBytes raised to it. More buffers or bytes than the bounds fail with
// ROOTSPAN_ERR_INVALID_ARGUMENT (operation "load_component"), naming the
// option as the C API calls it (staging_buffer_count, staging_buffer_bytes),
// the value and the bound.
Result<StagingShape> checked_staging_shape(StagingShape shape);

class StagingRing {
 public:
  // The buffers of `shape` (checked_staging_shape) for uploads to `device`
  // of `provider`.
  static Result<std::unique_ptr<StagingRing>> create(Context &context, const std::string &provider,
                                                     std::uint32_t device, const StagingShape &shape);
  ~StagingRing();
  StagingRing(const StagingRing &) = delete;
  StagingRing &operator=(const StagingRing &) = delete;

  std::uint64_t buffer_bytes() const { return bytes_; }
  std::size_t buffer_count() const { return buffers_.size(); }
  bool pinned() const { return pinned_; }
  // Why the buffers are not pinned ("" when they are).
  const std::string &fallback_reason() const { return fallback_reason_; }

  // Room for `length` (at most buffer_bytes()) bytes in the current buffer,
  // or in the next one once every copy still reading it has completed.
  Result<std::byte *> reserve(std::uint64_t length);
  // Records the copy that reads the bytes reserve() returned last.
  void commit(std::uint64_t length, CopyEvent copy);
  // Waits for every copy issued so far; the first failure is returned, and
  // every event is waited for regardless.
  Result<void> drain();

 private:
  struct Buffer {
    Root *root = nullptr;  // pinned memory of the provider, or nullptr: `pageable` holds the bytes
    Claim *claim = nullptr;
    Mapping *mapping = nullptr;
    std::vector<std::byte> pageable;
    std::byte *data = nullptr;
    std::uint64_t used = 0;         // bytes handed out since the buffer was last emptied
    std::vector<CopyEvent> copies;  // uploads still reading from this buffer
  };

  StagingRing(Context &context, std::uint64_t bytes) : context_(context), bytes_(bytes) {}
  Result<void> allocate_pinned(const std::string &provider, std::uint32_t device, Buffer &buffer);
  void release_pinned(Buffer &buffer);
  static Result<void> wait(Buffer &buffer);

  Context &context_;
  std::uint64_t bytes_;
  std::vector<Buffer> buffers_;
  std::size_t current_ = 0;
  bool pinned_ = false;
  std::string fallback_reason_;
};

}  // namespace rootspan::weights
