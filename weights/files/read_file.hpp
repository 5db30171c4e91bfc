// ReadFile: stable host memory that is a private copy of a whole file, read
// with pread into a buffer it owns (docs/weight-schema.md). For network file systems and
// files the user does not control: once read, a truncated or rewritten file
// cannot fault the process, and the bytes validated are the bytes used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>

#include "core/diagnostic.hpp"
#include "weights/files/stable_host_memory.hpp"

namespace rootspan::weights {

class InputFile;

class ReadFile final : public StableHostMemory {
 public:
  // Reads `path` whole. Its size comes from fstat; with `expected_size`, a file
  // of any other size is refused. A file that shrinks while it is read fails.
  // Errors: ROOTSPAN_ERR_IO (operation "read_file"), or
  // ROOTSPAN_ERR_OUT_OF_MEMORY when the buffer cannot be allocated.
  static Result<std::shared_ptr<ReadFile>> open(const std::filesystem::path &path,
                                                std::optional<std::uint64_t> expected_size = std::nullopt);
  // Reads a file already opened, through its descriptor; the same checks.
  static Result<std::shared_ptr<ReadFile>> open(const InputFile &file,
                                                std::optional<std::uint64_t> expected_size = std::nullopt);

  std::span<const std::byte> stable_bytes() const noexcept override { return {data_.get(), size_}; }
  const std::filesystem::path &path() const noexcept { return path_; }

 private:
  ReadFile(std::filesystem::path path, std::unique_ptr<std::byte[]> data, std::size_t size);

  std::filesystem::path path_;
  std::unique_ptr<std::byte[]> data_;  // never reallocated: the address is stable
  std::size_t size_ = 0;
};

}  // namespace rootspan::weights
