// A temporary folder for a test, shared by every suite.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string_view>
#include <vector>

namespace rootspan::testing {

// A fresh folder under $TMPDIR (or /tmp), its path made canonical, removed
// with everything in it when the object goes. Throws std::runtime_error when
// the folder cannot be made.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::filesystem::path &path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

  // Writes a file at `name` (relative to the folder; missing folders are
  // made), replacing what was there; returns its path.
  std::filesystem::path write(const std::filesystem::path &name, std::string_view text) const;
  std::filesystem::path write(const std::filesystem::path &name, const std::vector<std::byte> &bytes) const;
  std::filesystem::path write_text(const std::filesystem::path &name, std::string_view text) const {
    return write(name, text);
  }

  // A copy of a file at `name`, with the given mode bits.
  std::filesystem::path copy(const std::filesystem::path &from, std::string_view name, mode_t mode = 0755) const;

 private:
  std::filesystem::path path_;
};

}  // namespace rootspan::testing
