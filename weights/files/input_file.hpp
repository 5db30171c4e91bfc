// InputFile: a regular file opened read-only, with the size fstat gave when it
// was opened, read with pread at explicit offsets. Every reader of checkpoint
// bytes goes through it, so "is it a regular file", "how big is it" and
// "did a read come up short" are answered in one place.
#pragma once

#include <fcntl.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "core/diagnostic.hpp"

namespace rootspan::weights {

class InputFile {
 public:
  // Opens `path` O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY and fstats the
  // descriptor: non-blocking, so that a FIFO or a device is refused instead
  // of hanging the open (reads of a regular file never block on it). Fails
  // with ROOTSPAN_ERR_IO when it cannot be opened, and with `not_regular`
  // when it is not a regular file (the cause says what it is: a folder, a
  // FIFO, ...). `operation` names the caller's operation in the diagnostic.
  static Result<InputFile> open(const std::filesystem::path &path, std::string operation,
                                rootspan_status not_regular = ROOTSPAN_ERR_IO);
  // Takes ownership of `fd`, opened by the caller (beneath a folder, say),
  // and checks it as open does; the descriptor is closed on failure. `path`
  // only names the file in messages.
  static Result<InputFile> adopt(int fd, const std::filesystem::path &path, std::string operation,
                                 rootspan_status not_regular = ROOTSPAN_ERR_IO);

  InputFile(InputFile &&other) noexcept;
  InputFile &operator=(InputFile &&other) noexcept;
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;
  ~InputFile();

  int fd() const noexcept { return fd_; }
  // The size at open time; the file may change later, which readers detect.
  std::uint64_t size() const noexcept { return size_; }
  const std::filesystem::path &path() const noexcept { return path_; }
  // Where the opened descriptor really lies (every link followed), read back
  // from the kernel, so it names the file that was opened rather than what
  // the name leads to now; `path` when the kernel cannot say.
  std::filesystem::path real_path() const;
  // The size fstat gives now (a file can shrink or grow after it is opened).
  Result<std::uint64_t> current_size() const;

  // Reads exactly into.size() bytes at `offset`, retrying short reads and
  // EINTR. Fails with ROOTSPAN_ERR_IO when the file ends early (it shrank
  // since it was opened) or the read fails.
  Result<void> read_exact(std::span<std::byte> into, std::uint64_t offset) const;

 private:
  InputFile(std::filesystem::path path, int fd, std::uint64_t size, std::string operation);

  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::string operation_;
};

// The flags every checkpoint input is opened with: non-blocking, so a FIFO or
// a device cannot hang the open; never a controlling terminal; closed on exec.
inline constexpr int kInputOpenFlags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

// Reads a whole small file (an index, a schema) from one descriptor.
Result<std::string> read_whole_file(const InputFile &file, std::uint64_t max_bytes, rootspan_status too_large_code,
                                    std::string operation);

// Reads a whole small file (an index, a schema) into a string. A file larger
// than `max_bytes`, or one that is not a regular file, fails with
// `too_large_code` before anything is allocated.
Result<std::string> read_whole_file(const std::filesystem::path &path, std::uint64_t max_bytes,
                                    rootspan_status too_large_code, std::string operation);

}  // namespace rootspan::weights
