// The SHA-256 the tests compare digests with, computed here with OpenSSL,
// apart from the code under test.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rootspan::testing {

// The lowercase hex SHA-256 of some bytes; throws std::runtime_error when
// OpenSSL fails.
std::string sha256_hex(std::string_view bytes);
std::string sha256_hex(const std::vector<std::byte> &bytes);

}  // namespace rootspan::testing
