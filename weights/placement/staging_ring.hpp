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

class StagingRing {
 public:
  // `count` buffers of `bytes` each (both at least 1) for uploads to `device`
  // of `provider`.
  static Result<std::unique_ptr<StagingRing>> create(Context &context, const std::string &provider,
                                                     std::uint32_t device, std::size_t count, std::uint64_t bytes);
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
