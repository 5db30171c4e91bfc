#include "tests/support/sha256.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace rootspan::testing {

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("OpenSSL SHA-256 failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

std::string sha256_hex(const std::vector<std::byte> &bytes) {
  return sha256_hex(std::string_view(reinterpret_cast<const char *>(bytes.data()), bytes.size()));
}

}  // namespace rootspan::testing
