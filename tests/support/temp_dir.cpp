#include "tests/support/temp_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

namespace rootspan::testing {

namespace fs = std::filesystem;

TempDir::TempDir() {
  const char *base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/rootspan-test-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  path_ = fs::canonical(pattern);
}

TempDir::~TempDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

fs::path TempDir::write(const fs::path &name, std::string_view text) const {
  const fs::path file = path_ / name;
  fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  return file;
}

fs::path TempDir::write(const fs::path &name, const std::vector<std::byte> &bytes) const {
  return write(name, std::string_view(reinterpret_cast<const char *>(bytes.data()), bytes.size()));
}

fs::path TempDir::copy(const fs::path &from, std::string_view name, mode_t mode) const {
  const fs::path file = path_ / name;
  fs::create_directories(file.parent_path());
  fs::copy_file(from, file, fs::copy_options::overwrite_existing);
  ::chmod(file.c_str(), mode);
  return file;
}

}  // namespace rootspan::testing
