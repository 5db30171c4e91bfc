// SHA-256 through OpenSSL's EVP interface (which uses the CPU's SHA
// instructions where it has them), fed in pieces: the one home of the digest
// for plugin pins, verified loads and read-backs.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace rootspan {

class Sha256 {
 public:
  // Throws std::bad_alloc when OpenSSL cannot allocate or start a digest.
  Sha256();
  Sha256(Sha256 &&) noexcept;
  Sha256 &operator=(Sha256 &&) noexcept;
  ~Sha256();

  void update(std::span<const std::byte> bytes);
  // The digest of everything fed so far as 64 lowercase hex digits; the
  // object starts over afterwards.
  std::string hex_digest();

 private:
  struct Free {
    void operator()(evp_md_ctx_st *context) const;
  };
  std::unique_ptr<evp_md_ctx_st, Free> context_;
};

// True for 64 lowercase hex digits: the form hex_digest gives and the form a
// Hugging Face cache names its large blobs by.
bool is_sha256_hex(std::string_view text);

}  // namespace rootspan
