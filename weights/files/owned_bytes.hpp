// OwnedBytes: stable host memory held in a buffer the owner allocated itself
// (a program-made source, a test). The vector is const after construction, so
// its address and contents cannot change while a region retains it.
#pragma once

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "weights/files/stable_host_memory.hpp"

namespace rootspan::weights {

class OwnedBytes final : public StableHostMemory {
 public:
  explicit OwnedBytes(std::vector<std::byte> bytes) : bytes_(std::move(bytes)) {}
  std::span<const std::byte> stable_bytes() const noexcept override { return bytes_; }

 private:
  const std::vector<std::byte> bytes_;
};

}  // namespace rootspan::weights
