// Helpers shared by the loader tests: a temporary folder, file writing, and
// checks on a Diagnostic's message (every loader error names its policy).
#pragma once

#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include "core/diagnostic.hpp"
#include "tests/support/sha256.hpp"
#include "tests/support/temp_dir.hpp"

namespace rootspan::testing {

inline std::string read_file(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Whether the dynamic loader currently has an object of that name loaded.
inline bool object_is_loaded(const std::string &name) {
  struct Search {
    const std::string *name;
    bool found = false;
  } search{&name};
  ::dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        auto *s = static_cast<Search *>(data);
        if (info->dlpi_name != nullptr && *s->name == info->dlpi_name) s->found = true;
        return 0;
      },
      &search);
  return search.found;
}

// Every loader error names its policy, its operation and carries the pieces a
// reader needs; these check them in one line.
inline ::testing::AssertionResult HasPolicy(const Diagnostic &d, std::string_view policy, rootspan_status code) {
  const std::string message = d.message();
  if (d.policy != policy) {
    return ::testing::AssertionFailure() << "policy " << d.policy << " != " << policy << ": " << message;
  }
  if (d.code != code) return ::testing::AssertionFailure() << "code " << d.code << " != " << code << ": " << message;
  if (message.find(std::string(policy) + ": ") == std::string::npos) {
    return ::testing::AssertionFailure() << "message does not name " << policy << ": " << message;
  }
  return ::testing::AssertionSuccess() << message;
}

inline ::testing::AssertionResult Mentions(const Diagnostic &d, std::string_view text) {
  const std::string message = d.message();
  if (message.find(text) == std::string::npos) {
    return ::testing::AssertionFailure() << "message lacks \"" << text << "\": " << message;
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult HasValues(const Diagnostic &d, std::uint64_t expected, std::uint64_t actual) {
  if (!d.values) return ::testing::AssertionFailure() << "no values: " << d.message();
  if (d.values->first != expected || d.values->second != actual) {
    return ::testing::AssertionFailure() << "values (" << d.values->first << ", " << d.values->second << ") != ("
                                         << expected << ", " << actual << "): " << d.message();
  }
  return ::testing::AssertionSuccess();
}

}  // namespace rootspan::testing
