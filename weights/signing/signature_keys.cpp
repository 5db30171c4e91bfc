#include "weights/signing/signature_keys.hpp"

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>

#include "core/sha256.hpp"
#include "core/text/quoting.hpp"
#include "weights/files/input_file.hpp"

namespace rootspan::weights {

namespace {

constexpr const char *kOperation = "verify_signature";
constexpr std::uint64_t kMaxKeyFileBytes = 1u << 20;

struct BioFree {
  void operator()(BIO *b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509 *x) const { X509_free(x); }
};
struct StoreFree {
  void operator()(X509_STORE *s) const { X509_STORE_free(s); }
};
struct StoreContextFree {
  void operator()(X509_STORE_CTX *c) const { X509_STORE_CTX_free(c); }
};
struct StackFree {
  void operator()(STACK_OF(X509) * s) const { sk_X509_pop_free(s, X509_free); }
};
struct MdContextFree {
  void operator()(EVP_MD_CTX *c) const { EVP_MD_CTX_free(c); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;

// OpenSSL's last error, taken off its queue.
std::string openssl_error() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no reason given";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

Diagnostic bad_signature(const std::string &subject, const std::string &why) {
  return make_error(ROOTSPAN_ERR_SIGNATURE_INVALID, kOperation, subject + ": " + why);
}

// The digest an EC key signs with: the reference's choice by curve size.
const EVP_MD *digest_of(EVP_PKEY *key) {
  switch (EVP_PKEY_get_bits(key)) {
    case 256:
      return EVP_sha256();
    case 384:
      return EVP_sha384();
    case 521:
      return EVP_sha512();
    default:
      return nullptr;
  }
}

// Refuses a key that is not EC on one of the three curves.
Result<void> check_curve(EVP_PKEY *key, const std::string &where) {
  char group[64] = {};
  std::size_t length = 0;
  if (EVP_PKEY_get_base_id(key) != EVP_PKEY_EC ||
      EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &length) != 1) {
    ERR_clear_error();
    return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation,
                      where + " is not an elliptic-curve key: model signatures use ECDSA on P-256, P-384 or P-521");
  }
  const std::string name(group, length);
  if (name != "prime256v1" && name != "secp384r1" && name != "secp521r1") {
    return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation,
                      where + " is a key on curve " + name + ": model signatures use P-256, P-384 or P-521");
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<std::string> read_small_file(const std::filesystem::path &path) {
  return read_whole_file(path, kMaxKeyFileBytes, ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation);
}

std::time_t as_time(const ASN1_TIME *time) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(time, &tm) != 1) return 0;
  return timegm(&tm);
}

}  // namespace

void SigningKey::Free::operator()(evp_pkey_st *key) const { EVP_PKEY_free(key); }

Result<SigningKey> SigningKey::read(const std::filesystem::path &path, bool private_key) {
  auto text = read_small_file(path);
  if (!text) return text.error();
  BioPtr bio(BIO_new_mem_buf(text.value().data(), static_cast<int>(text.value().size())));
  if (!bio) throw std::bad_alloc();
  EVP_PKEY *raw = private_key ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, const_cast<char *>(""))
                              : PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr);
  const std::string what = (private_key ? "private key " : "public key ") + quoted_text(path.string());
  if (raw == nullptr) {
    return make_error(
        ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation,
        what + " is not a PEM " +
            (private_key ? "private key (unencrypted PKCS#8 or SEC1)" : "public key (SubjectPublicKeyInfo)") + ": " +
            openssl_error());
  }
  SigningKey key(std::shared_ptr<evp_pkey_st>(raw, Free{}));
  if (auto curve = check_curve(raw, what); !curve) return curve.error();
  return key;
}

std::string SigningKey::hint() const {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), key_.get()) != 1) throw std::bad_alloc();
  char *data = nullptr;
  const long length = BIO_get_mem_data(bio.get(), &data);
  Sha256 sha;
  sha.update(std::as_bytes(std::span(data, static_cast<std::size_t>(length))));
  return sha.hex_digest();
}

Result<std::string> SigningKey::sign(std::string_view payload) const {
  const std::string message = dsse_pae(payload);
  std::unique_ptr<EVP_MD_CTX, MdContextFree> ctx(EVP_MD_CTX_new());
  std::size_t length = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, digest_of(key_.get()), nullptr, key_.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &length, reinterpret_cast<const unsigned char *>(message.data()),
                     message.size()) != 1) {
    return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, "sign_model", "the key cannot sign: " + openssl_error());
  }
  std::string signature(length, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char *>(signature.data()), &length,
                     reinterpret_cast<const unsigned char *>(message.data()), message.size()) != 1) {
    return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, "sign_model", "the key cannot sign: " + openssl_error());
  }
  signature.resize(length);
  return signature;
}

bool SigningKey::verifies(std::string_view payload, std::string_view signature) const {
  const std::string message = dsse_pae(payload);
  std::unique_ptr<EVP_MD_CTX, MdContextFree> ctx(EVP_MD_CTX_new());
  if (!ctx) throw std::bad_alloc();
  const bool ok =
      EVP_DigestVerifyInit(ctx.get(), nullptr, digest_of(key_.get()), nullptr, key_.get()) == 1 &&
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char *>(signature.data()), signature.size(),
                       reinterpret_cast<const unsigned char *>(message.data()), message.size()) == 1;
  ERR_clear_error();
  return ok;
}

bool SigningKey::same_public_key(const SigningKey &other) const {
  return EVP_PKEY_eq(key_.get(), other.key_.get()) == 1;
}

Result<SigningKey> signing_key_of_certificate(std::string_view der, const std::string &where) {
  const auto *bytes = reinterpret_cast<const unsigned char *>(der.data());
  X509Ptr certificate(d2i_X509(nullptr, &bytes, static_cast<long>(der.size())));
  if (!certificate) return bad_signature(where, "is not a DER X.509 certificate: " + openssl_error());
  EVP_PKEY *key = X509_get_pubkey(certificate.get());  // a new reference
  if (key == nullptr) return bad_signature(where, "has no public key OpenSSL can read: " + openssl_error());
  SigningKey out(std::shared_ptr<evp_pkey_st>(key, SigningKey::Free{}));
  if (auto curve = check_curve(key, where + "'s key"); !curve) {
    return bad_signature(where, curve.error()->cause);
  }
  return out;
}

Result<std::vector<std::string>> read_certificates(std::span<const std::filesystem::path> paths) {
  std::vector<std::string> out;
  for (const std::filesystem::path &path : paths) {
    auto text = read_small_file(path);
    if (!text) return text.error();
    BioPtr bio(BIO_new_mem_buf(text.value().data(), static_cast<int>(text.value().size())));
    if (!bio) throw std::bad_alloc();
    std::size_t found = 0;
    while (X509 *raw = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      X509Ptr certificate(raw);
      unsigned char *der = nullptr;
      const int length = i2d_X509(raw, &der);
      if (length <= 0) throw std::bad_alloc();
      out.emplace_back(reinterpret_cast<char *>(der), static_cast<std::size_t>(length));
      OPENSSL_free(der);
      ++found;
    }
    ERR_clear_error();  // the end of the file reads as an error
    if (found == 0) {
      return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, kOperation,
                        "certificate file " + quoted_text(path.string()) +
                            " holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\")");
    }
  }
  return out;
}

namespace {

// The chain of `bundle` checked against `trusted`; its signing certificate's key.
Result<SigningKey> verify_chain(const VerificationMaterial &material, std::span<const std::string> trusted,
                                const std::string &subject) {
  std::vector<X509Ptr> chain;
  for (std::size_t i = 0; i < material.certificates_der.size(); ++i) {
    const std::string &der = material.certificates_der[i];
    const auto *bytes = reinterpret_cast<const unsigned char *>(der.data());
    X509 *raw = d2i_X509(nullptr, &bytes, static_cast<long>(der.size()));
    if (raw == nullptr) {
      return bad_signature(subject, "verificationMaterial.x509CertificateChain.certificates[" + std::to_string(i) +
                                        "] is not a DER X.509 certificate: " + openssl_error());
    }
    chain.emplace_back(raw);
  }
  std::unique_ptr<X509_STORE, StoreFree> store(X509_STORE_new());
  std::unique_ptr<STACK_OF(X509), StackFree> untrusted(sk_X509_new_null());
  std::unique_ptr<X509_STORE_CTX, StoreContextFree> context(X509_STORE_CTX_new());
  if (!store || !untrusted || !context) throw std::bad_alloc();
  for (const std::string &der : trusted) {
    const auto *bytes = reinterpret_cast<const unsigned char *>(der.data());
    X509Ptr certificate(d2i_X509(nullptr, &bytes, static_cast<long>(der.size())));
    if (!certificate || X509_STORE_add_cert(store.get(), certificate.get()) != 1) throw std::bad_alloc();
  }
  for (std::size_t i = 1; i < chain.size(); ++i) {
    if (sk_X509_push(untrusted.get(), X509_dup(chain[i].get())) == 0) throw std::bad_alloc();
  }
  X509 *leaf = chain.front().get();
  if (X509_STORE_CTX_init(context.get(), store.get(), leaf, untrusted.get()) != 1) throw std::bad_alloc();
  X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(context.get()), as_time(X509_get0_notBefore(leaf)));
  if (X509_verify_cert(context.get()) != 1) {
    const int code = X509_STORE_CTX_get_error(context.get());
    ERR_clear_error();
    return bad_signature(subject, std::string("the signing certificate's chain does not lead to a trusted "
                                              "certificate (--certificate-chain): ") +
                                      X509_verify_cert_error_string(code) + " (at depth " +
                                      std::to_string(X509_STORE_CTX_get_error_depth(context.get())) + ")");
  }
  const std::uint32_t flags = X509_get_extension_flags(leaf);
  const bool signs = ((flags & EXFLAG_KUSAGE) != 0 && (X509_get_key_usage(leaf) & KU_DIGITAL_SIGNATURE) != 0) ||
                     ((flags & EXFLAG_XKUSAGE) != 0 && (X509_get_extended_key_usage(leaf) & XKU_CODE_SIGN) != 0);
  if (!signs) {
    return bad_signature(subject,
                         "the signing certificate allows neither digital signatures (keyUsage) nor code "
                         "signing (extendedKeyUsage)");
  }
  return signing_key_of_certificate(material.certificates_der.front(), subject + "'s signing certificate");
}

}  // namespace

Result<void> verify_bundle_signature(const SignatureBundle &bundle, const SigningKey *public_key,
                                     std::span<const std::string> trusted, const std::string &name) {
  const std::string subject = signature_subject(name);
  using Kind = VerificationMaterial::Kind;
  const VerificationMaterial &material = bundle.material;
  if (material.kind == Kind::kKeyless) {
    return make_error(ROOTSPAN_ERR_UNSUPPORTED, kOperation,
                      subject +
                          ": a keyless Sigstore signature (a Fulcio certificate and Rekor log entries) needs "
                          "Sigstore's trust root and its transparency log, which an offline load does not "
                          "have; verify it with `model_signing verify sigstore`, or sign with a key or a "
                          "certificate chain");
  }
  std::optional<SigningKey> chain_key;
  const SigningKey *key = public_key;
  if (material.kind == Kind::kPublicKey) {
    if (public_key == nullptr) {
      return bad_signature(subject, "the bundle was signed with a key: give its public key (--public-key)");
    }
    if (!material.public_key_hint.empty() && material.public_key_hint != public_key->hint()) {
      return bad_signature(subject, "the bundle was signed by another key: its key hint is " +
                                        material.public_key_hint + ", the public key given has " + public_key->hint());
    }
  } else {
    if (trusted.empty()) {
      return bad_signature(subject,
                           "the bundle was signed with a certificate: give the certificates to trust "
                           "(--certificate-chain)");
    }
    auto verified = verify_chain(material, trusted, subject);
    if (!verified) return verified.error();
    chain_key = std::move(verified).value();
    key = &*chain_key;
  }
  if (!key->verifies(bundle.payload, bundle.signature)) {
    return bad_signature(subject,
                         "the signature does not verify: the statement was changed after it was signed, "
                         "or it was signed with another key");
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace rootspan::weights
