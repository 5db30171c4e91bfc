#include "weights/files/read_file.hpp"

#include <new>
#include <utility>

#include "core/text/quoting.hpp"
#include "weights/files/input_file.hpp"

namespace rootspan::weights {

ReadFile::ReadFile(std::filesystem::path path, std::unique_ptr<std::byte[]> data, std::size_t size)
    : path_(std::move(path)), data_(std::move(data)), size_(size) {}

Result<std::shared_ptr<ReadFile>> ReadFile::open(const std::filesystem::path &path,
                                                 std::optional<std::uint64_t> expected_size) {
  auto file = InputFile::open(path, "read_file");
  if (!file) return file.error();
  return open(file.value(), expected_size);
}

Result<std::shared_ptr<ReadFile>> ReadFile::open(const InputFile &file, std::optional<std::uint64_t> expected_size) {
  const std::filesystem::path &path = file.path();
  auto now = file.current_size();  // the descriptor may be older than this call
  if (!now) return now.error();
  const std::uint64_t size = now.value();
  if (expected_size && *expected_size != size) {
    return make_error(ROOTSPAN_ERR_IO, "read_file",
                      quoted_text(path.string()) + ": file size changed since its header was read: expected " +
                          std::to_string(*expected_size) + " bytes, found " + std::to_string(size),
                      *expected_size, size);
  }
  // Uninitialized on purpose: pread fills every byte, and zeroing first would
  // touch every page twice.
  std::unique_ptr<std::byte[]> data(new (std::nothrow) std::byte[size == 0 ? 1 : size]);
  if (!data) {
    return make_error(ROOTSPAN_ERR_OUT_OF_MEMORY, "read_file",
                      quoted_text(path.string()) + ": cannot allocate " + std::to_string(size) + " bytes");
  }
  auto read = file.read_exact({data.get(), static_cast<std::size_t>(size)}, 0);
  if (!read) return read.error();
  return std::shared_ptr<ReadFile>(new ReadFile(path, std::move(data), static_cast<std::size_t>(size)));
}

}  // namespace rootspan::weights
