#include "weights/placement/staging_ring.hpp"

#include <algorithm>

#include "core/claim_ops.hpp"
#include "core/mapping.hpp"

#include <optional>
#include <utility>

namespace rootspan::weights {

namespace {

// Chunks packed into one buffer start on this boundary: copy engines read
// aligned sources fastest, and every element type fits it.
constexpr std::uint64_t kPackAlignment = 256;

}  // namespace

Result<StagingShape> checked_staging_shape(StagingShape shape) {
  const auto beyond = [](const char *option, std::uint64_t value, std::uint64_t limit, const std::string &what) {
    return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, "load_component",
                      std::string("options.") + option + " is " + std::to_string(value) + "; " + what, limit, value);
  };
  if (shape.buffers > StagingShape::kMaxBuffers) {
    return beyond("staging_buffer_count", shape.buffers, StagingShape::kMaxBuffers,
                  "at most " + std::to_string(StagingShape::kMaxBuffers) + " staging buffers are allowed");
  }
  if (shape.bytes > StagingShape::kMaxBytes) {
    return beyond("staging_buffer_bytes", shape.bytes, StagingShape::kMaxBytes,
                  "a staging buffer may hold at most " + std::to_string(StagingShape::kMaxBytes) + " bytes (1 GiB)");
  }
  if (shape.buffers == 0) shape.buffers = StagingShape::kDefaultBuffers;
  if (shape.bytes == 0) shape.bytes = StagingShape::kDefaultBytes;
  shape.bytes = std::max(shape.bytes, StagingShape::kMinBytes);
  return shape;
}

Result<std::unique_ptr<StagingRing>> StagingRing::create(Context &context, const std::string &provider,
                                                         std::uint32_t device, const StagingShape &shape) {
  std::unique_ptr<StagingRing> ring(new StagingRing(context, shape.bytes));
  ring->buffers_.resize(shape.buffers);
  ring->pinned_ = true;
  for (Buffer &buffer : ring->buffers_) {
    auto made = ring->allocate_pinned(provider, device, buffer);
    if (made) continue;
    // Only a provider that has no host-accessible pinned memory falls back; a
    // failure of the memory it does offer fails the load.
    if (made.error()->code != ROOTSPAN_ERR_UNSUPPORTED) return made.error();  // ~StagingRing frees the rest
    ring->fallback_reason_ = made.error()->message();
    ring->pinned_ = false;
    break;
  }
  if (!ring->pinned_) {
    // All or nothing: ordinary host buffers for the whole ring.
    for (Buffer &buffer : ring->buffers_) {
      ring->release_pinned(buffer);
      try {
        buffer.pageable.resize(shape.bytes);
      } catch (const std::bad_alloc &) {
        return make_error(ROOTSPAN_ERR_OUT_OF_MEMORY, "load_component",
                          "cannot allocate a staging buffer of " + std::to_string(shape.bytes) + " bytes", shape.bytes,
                          0);
      }
      buffer.data = buffer.pageable.data();
    }
  }
  return ring;
}

Result<void> StagingRing::allocate_pinned(const std::string &provider, std::uint32_t device, Buffer &buffer) {
  AllocateOptions options;
  options.provider = provider;
  options.device = device;
  options.memory_kind = ROOTSPAN_MEMORY_HOST_PINNED;
  options.byte_length = bytes_;
  options.alignment = 4096;
  ROOTSPAN_ASSIGN_OR_RETURN(buffer.root, context_.allocate(options));
  if (!buffer.root->host_accessible()) {
    return make_error(ROOTSPAN_ERR_UNSUPPORTED, "load_component",
                      "provider '" + provider + "' returned pinned memory without host access");
  }
  ROOTSPAN_ASSIGN_OR_RETURN(buffer.claim, claim_acquire(*buffer.root, 0, bytes_, ROOTSPAN_CLAIM_EXCLUSIVE));
  ROOTSPAN_ASSIGN_OR_RETURN(buffer.mapping, map_range(*buffer.claim, ROOTSPAN_DTYPE_NONE, 0, bytes_, true));
  buffer.data = static_cast<std::byte *>(buffer.mapping->provider.data);
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

void StagingRing::release_pinned(Buffer &buffer) {
  if (buffer.mapping != nullptr) unmap(*std::exchange(buffer.mapping, nullptr));
  if (buffer.claim != nullptr) (void)claim_release(*std::exchange(buffer.claim, nullptr));
  if (buffer.root != nullptr) (void)context_.release(std::exchange(buffer.root, nullptr));
  buffer.data = nullptr;
}

StagingRing::~StagingRing() {
  // A copy still reading a buffer must finish before its memory goes.
  (void)drain();
  for (Buffer &buffer : buffers_) release_pinned(buffer);
}

Result<void> StagingRing::wait(Buffer &buffer) {
  std::optional<Diagnostic> first;
  for (CopyEvent &copy : buffer.copies) {
    auto waited = copy_wait(copy);
    if (!waited && !first) first = waited.error();
  }
  buffer.copies.clear();
  buffer.used = 0;
  if (first) return *first;
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<std::byte *> StagingRing::reserve(std::uint64_t length) {
  Buffer *buffer = &buffers_[current_];
  const std::uint64_t start = (buffer->used + kPackAlignment - 1) / kPackAlignment * kPackAlignment;
  if (buffer->used != 0 && (start > bytes_ || length > bytes_ - start)) {
    current_ = (current_ + 1) % buffers_.size();
    buffer = &buffers_[current_];
    BOOST_OUTCOME_TRY(wait(*buffer));
    return buffer->data;
  }
  return buffer->data + (buffer->used == 0 ? 0 : start);
}

void StagingRing::commit(std::uint64_t length, CopyEvent copy) {
  Buffer &buffer = buffers_[current_];
  const std::uint64_t start =
      buffer.used == 0 ? 0 : (buffer.used + kPackAlignment - 1) / kPackAlignment * kPackAlignment;
  buffer.used = start + length;
  if (copy.event != nullptr) buffer.copies.push_back(std::move(copy));
}

Result<void> StagingRing::drain() {
  std::optional<Diagnostic> first;
  for (Buffer &buffer : buffers_) {
    auto waited = wait(buffer);
    if (!waited && !first) first = waited.error();
  }
  if (first) return *first;
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace rootspan::weights
