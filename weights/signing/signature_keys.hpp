// The keys and certificates of model signatures (docs/signed-models.md), with
// OpenSSL's libcrypto: ECDSA on P-256, P-384 or P-521, each with the hash of
// its size (SHA-256, SHA-384, SHA-512), as the reference signer uses them.
// Verification is offline: a public key the caller trusts, or an X.509 chain
// checked against certificates the caller trusts.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "weights/signing/model_signature.hpp"

struct evp_pkey_st;

namespace rootspan::weights {

// An EC key, public or private.
class SigningKey {
 public:
  // Reads a PEM public key (SubjectPublicKeyInfo), or with `private_key` a
  // PEM private key (PKCS#8 or SEC1, unencrypted). Errors:
  // ROOTSPAN_ERR_IO (cannot be read), ROOTSPAN_ERR_INVALID_ARGUMENT (not
  // such a key, or not on P-256, P-384 or P-521), naming the file.
  static Result<SigningKey> read(const std::filesystem::path &path, bool private_key);

  // The SHA-256 of the public key's PEM: the "hint" a bundle names it by.
  std::string hint() const;
  // Signs dsse_pae(payload) (private keys only); the DER signature.
  Result<std::string> sign(std::string_view payload) const;
  // True when `signature` is this key's over dsse_pae(payload).
  bool verifies(std::string_view payload, std::string_view signature) const;
  // Whether `other` holds the same public key.
  bool same_public_key(const SigningKey &other) const;

  struct Free {
    void operator()(evp_pkey_st *key) const;
  };

 private:
  explicit SigningKey(std::shared_ptr<evp_pkey_st> key) : key_(std::move(key)) {}
  friend Result<SigningKey> signing_key_of_certificate(std::string_view, const std::string &);
  std::shared_ptr<evp_pkey_st> key_;
};

// The public key of a DER certificate.
Result<SigningKey> signing_key_of_certificate(std::string_view der, const std::string &where);

// Reads every certificate of PEM files (a file may hold several), as DER.
// Errors: ROOTSPAN_ERR_IO, ROOTSPAN_ERR_INVALID_ARGUMENT (no certificate in a
// file, or one that does not parse), naming the file.
Result<std::vector<std::string>> read_certificates(std::span<const std::filesystem::path> paths);

// Checks a bundle's signature before anything else is believed of it:
//   - a public key: the bundle's hint, where it has one, must be the key's,
//     and the key must verify the envelope;
//   - certificates (`trusted`, DER): the bundle's chain must lead from its
//     signing certificate to one of them (checked at the signing
//     certificate's notBefore, as the reference does: the signature was made
//     while it was valid), the signing certificate must allow digital
//     signatures or code signing, and its key must verify the envelope.
// A keyless bundle (Sigstore's Fulcio certificate and Rekor log) is refused:
// it needs Sigstore's trust root and its log. Errors:
// ROOTSPAN_ERR_SIGNATURE_INVALID, ROOTSPAN_ERR_UNSUPPORTED (keyless), with
// operation "verify_signature", naming the bundle's file `name`.
Result<void> verify_bundle_signature(const SignatureBundle &bundle, const SigningKey *public_key,
                                     std::span<const std::string> trusted, const std::string &name);

}  // namespace rootspan::weights
