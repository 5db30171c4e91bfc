// StableHostMemory: an owner of host bytes whose address, length and contents
// stay fixed for the owner's whole life (docs/weight-schema.md). Retained regions and
// zero-copy host roots point straight into these bytes after everything else
// that knew about them is gone, so an implementation must never move, resize
// or write them while it lives.
#pragma once

#include <cstddef>
#include <span>

namespace rootspan::weights {

class StableHostMemory {
 public:
  StableHostMemory() = default;
  StableHostMemory(const StableHostMemory &) = delete;
  StableHostMemory &operator=(const StableHostMemory &) = delete;
  virtual ~StableHostMemory() = default;

  // The same readable bytes on every call, for the owner's whole life. Empty
  // for an empty file (which is never mapped).
  virtual std::span<const std::byte> stable_bytes() const noexcept = 0;
};

}  // namespace rootspan::weights
