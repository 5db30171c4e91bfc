#include "weights/mapped_file.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "weights/describe.hpp"
#include "weights/input_file.hpp"

namespace rootspan::weights {

MappedFile::MappedFile(std::filesystem::path path, const std::byte *data, std::size_t size)
    : path_(std::move(path)), data_(data), size_(size) {}

MappedFile::~MappedFile() {
  if (size_ != 0) ::munmap(const_cast<std::byte *>(data_), size_);
}

Result<std::shared_ptr<MappedFile>> MappedFile::open(const std::filesystem::path &path,
                                                     std::optional<std::uint64_t> expected_size) {
  auto file = InputFile::open(path, "map_file");
  if (!file) return file.error();
  return open(file.value(), expected_size);
}

Result<std::shared_ptr<MappedFile>> MappedFile::open(const InputFile &file,
                                                     std::optional<std::uint64_t> expected_size) {
  const std::filesystem::path &path = file.path();
  auto now = file.current_size();  // the descriptor may be older than this call
  if (!now) return now.error();
  const std::uint64_t size = now.value();
  if (expected_size && *expected_size != size) {
    return make_error(ROOTSPAN_ERR_IO, "map_file",
                      quoted_text(path.string()) + ": file size changed since its header was read: expected " +
                          std::to_string(*expected_size) + " bytes, found " + std::to_string(size),
                      *expected_size, size);
  }
  if (size == 0) return std::shared_ptr<MappedFile>(new MappedFile(path, nullptr, 0));
  void *data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file.fd(), 0);
  if (data == MAP_FAILED) {
    const int error = errno;
    return make_error(
        ROOTSPAN_ERR_IO, "map_file",
        quoted_text(path.string()) + ": cannot map " + std::to_string(size) + " bytes: " + std::strerror(error));
  }
  // The mapping keeps the file's pages after the descriptor closes.
  return std::shared_ptr<MappedFile>(new MappedFile(path, static_cast<const std::byte *>(data), size));
}

}  // namespace rootspan::weights
