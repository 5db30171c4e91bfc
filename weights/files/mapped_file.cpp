#include "weights/files/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/text/quoting.hpp"
#include "weights/files/input_file.hpp"

namespace rootspan::weights {

MappedFile::MappedFile(std::filesystem::path path, const std::byte *data, std::size_t size, int fd)
    : path_(std::move(path)), fd_(fd), data_(data), size_(size) {}

MappedFile::~MappedFile() {
  if (size_ != 0) ::munmap(const_cast<std::byte *>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

namespace {
thread_local MappedFile::CoverageBatch *current_batch = nullptr;
}  // namespace

MappedFile::CoverageBatch::CoverageBatch() : outer_(current_batch) { current_batch = this; }
MappedFile::CoverageBatch::~CoverageBatch() { current_batch = outer_; }

Result<std::uint64_t> MappedFile::current_size() const {
  if (current_batch != nullptr) {
    for (const auto &[file, size] : current_batch->sizes_) {
      if (file == this) return size;
    }
  }
  struct stat now {};
  if (fd_ < 0 || ::fstat(fd_, &now) != 0) {
    return make_error(ROOTSPAN_ERR_IO, "map_file", quoted_text(path_.string()) + ": cannot measure the mapped file");
  }
  const auto size = static_cast<std::uint64_t>(now.st_size);
  if (current_batch != nullptr) current_batch->sizes_.emplace_back(this, size);
  return size;
}

Result<void> MappedFile::check_covers(std::uint64_t end) const {
  auto measured = current_size();
  if (!measured) return measured.error();
  const std::uint64_t size = measured.value();
  if (size < end) {
    return make_error(ROOTSPAN_ERR_IO, "map_file",
                      quoted_text(path_.string()) + ": the file was truncated to " + std::to_string(size) +
                          " bytes after it was mapped; reading its bytes up to " + std::to_string(end) + " would fault",
                      end, size);
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<std::shared_ptr<MappedFile>> MappedFile::open(const std::filesystem::path &path,
                                                     std::optional<std::uint64_t> expected_size, Access access) {
  auto file = InputFile::open(path, "map_file");
  if (!file) return file.error();
  return open(file.value(), expected_size, access);
}

Result<std::shared_ptr<MappedFile>> MappedFile::open(const InputFile &file, std::optional<std::uint64_t> expected_size,
                                                     Access access) {
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
  if (size == 0) return std::shared_ptr<MappedFile>(new MappedFile(path, nullptr, 0, -1));
  // The descriptor is read-only; MAP_PRIVATE writes never reach the file.
  const int protection = access == kCopyOnWrite ? PROT_READ | PROT_WRITE : PROT_READ;
  const int flags = access == kCopyOnWrite ? MAP_PRIVATE | MAP_NORESERVE : MAP_PRIVATE;
  void *data = ::mmap(nullptr, size, protection, flags, file.fd(), 0);
  if (data == MAP_FAILED) {
    const int error = errno;
    return make_error(
        ROOTSPAN_ERR_IO, "map_file",
        quoted_text(path.string()) + ": cannot map " + std::to_string(size) + " bytes: " + std::strerror(error));
  }
  // A duplicate descriptor stays open to measure the file later.
  const int kept = ::fcntl(file.fd(), F_DUPFD_CLOEXEC, 0);
  return std::shared_ptr<MappedFile>(new MappedFile(path, static_cast<const std::byte *>(data), size, kept));
}

}  // namespace rootspan::weights
