#include "bench_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace rootspan::bench {

namespace {

void write_all(int fd, const char *data, std::size_t length) {
  while (length > 0) {
    const ssize_t n = ::write(fd, data, length);
    if (n < 0) throw std::system_error(errno, std::generic_category(), "write");
    data += n;
    length -= static_cast<std::size_t>(n);
  }
}

std::uint64_t status_field(const char *field) {
  std::ifstream status("/proc/self/status");
  std::string name;
  while (status >> name) {
    if (name == field) {
      std::uint64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 20, '\n');
  }
  return 0;
}

}  // namespace

void write_safetensors(const std::filesystem::path &path, const std::vector<std::uint64_t> &sizes) {
  // Written by hand: an ordered JSON object would take quadratic time here.
  std::string text = "{";
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::string n = std::to_string(sizes[i]);
    text += (i == 0 ? "\"t." : ",\"t.") + std::to_string(i) + "\":{\"dtype\":\"U8\",\"shape\":[" + n +
            "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + sizes[i]) + "]}";
    offset += sizes[i];
  }
  text += "}";
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "open " + path.string());
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(text.size() >> (8 * i));
  write_all(fd, reinterpret_cast<const char *>(length), 8);
  write_all(fd, text.data(), text.size());
  // Non-zero data, so no file system can keep it as a hole.
  std::string block(8 << 20, '\0');
  for (std::size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>(i * 131 + 7);
  for (std::uint64_t left = offset; left > 0;) {
    const std::size_t n = left < block.size() ? static_cast<std::size_t>(left) : block.size();
    write_all(fd, block.data(), n);
    left -= n;
  }
  ::fdatasync(fd);
  ::close(fd);
}

const std::filesystem::path &LazySafetensors::path() {
  if (!written_) {
    write_safetensors(path_, sizes_);
    written_ = true;
  }
  return path_;
}

BenchFolder::BenchFolder() {
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/rootspan-bench-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::system_error(errno, std::generic_category(), "mkdtemp");
  path_ = pattern;
}

BenchFolder::~BenchFolder() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string size_label(std::uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return std::to_string(bytes >> 30) + "GiB";
  return std::to_string(bytes >> 20) + "MiB";
}

std::uint64_t resident_bytes() { return status_field("VmRSS:"); }
std::uint64_t peak_resident_bytes() { return status_field("VmHWM:"); }

bool reset_peak_resident() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

}  // namespace rootspan::bench
