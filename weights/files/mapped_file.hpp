// MappedFile: stable host memory that is a private mmap of a whole checkpoint
// file (docs/weight-schema.md): read-only, or writable copy-on-write, where a
// write copies the page it touches into this process and never reaches the
// file. Mapping is nearly free and makes zero-copy host
// roots possible; the cost is that a file truncated under the mapping turns a
// read into SIGBUS, so the size is checked at open (against the size seen when
// the header was validated, when given), and the strategies that copy
// (placement/read_strategy.hpp) serve files that are not under the user's
// control.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/diagnostic.hpp"
#include "weights/files/stable_host_memory.hpp"

namespace rootspan::weights {

class InputFile;

class MappedFile final : public StableHostMemory {
 public:
  // kCopyOnWrite maps with PROT_WRITE and MAP_NORESERVE: the pages are the
  // file's until written, so no swap is reserved for a mapping that may be
  // larger than memory.
  enum Access { kReadOnly, kCopyOnWrite };

  // Maps `path` whole. Its size comes from fstat of the opened descriptor; with
  // `expected_size`, a file of any other size is refused (it changed since its
  // header was read). An empty file is not mapped (mmap of length 0 is an
  // error): its stable bytes are empty. Errors: ROOTSPAN_ERR_IO (operation
  // "map_file") naming the file, with expected and actual sizes on a mismatch.
  static Result<std::shared_ptr<MappedFile>> open(const std::filesystem::path &path,
                                                  std::optional<std::uint64_t> expected_size = std::nullopt,
                                                  Access access = kReadOnly);
  // Maps a file already opened, through its descriptor (the file is not
  // reopened by name); the same checks and errors.
  static Result<std::shared_ptr<MappedFile>> open(const InputFile &file,
                                                  std::optional<std::uint64_t> expected_size = std::nullopt,
                                                  Access access = kReadOnly);

  ~MappedFile() override;

  std::span<const std::byte> stable_bytes() const noexcept override { return {data_, size_}; }
  const std::filesystem::path &path() const noexcept { return path_; }

  // ROOTSPAN_ERR_IO (expected: `end`, actual: the file's size now) when the
  // mapped file no longer reaches byte `end`: reading the mapping there would
  // raise SIGBUS. A file rewritten in place (same size) passes: the mapping
  // then shows its new bytes.
  Result<void> check_covers(std::uint64_t end) const;

  // While a CoverageBatch lives on a thread, check_covers there measures each
  // file once and checks every later range of that file against that one
  // measurement: a call that maps thousands of components at once
  // (rootspan_weights_map_components) checks them all as of one instant, with
  // one fstat a file instead of one a component. Batches nest; a failed
  // measurement is not kept.
  class CoverageBatch {
   public:
    CoverageBatch();
    ~CoverageBatch();
    CoverageBatch(const CoverageBatch &) = delete;
    CoverageBatch &operator=(const CoverageBatch &) = delete;

   private:
    friend class MappedFile;
    CoverageBatch *outer_;
    std::vector<std::pair<const MappedFile *, std::uint64_t>> sizes_;  // file, its size when first measured
  };

 private:
  // The file's size now (fstat of the kept descriptor), or the size a live
  // CoverageBatch measured already.
  Result<std::uint64_t> current_size() const;

  MappedFile(std::filesystem::path path, const std::byte *data, std::size_t size, int fd);

  std::filesystem::path path_;
  int fd_ = -1;  // kept open to measure the mapped file, not whatever the path names now
  const std::byte *data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace rootspan::weights
