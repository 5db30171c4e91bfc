// What an OpenSSF model signature says (OMS v1.0, docs/signed-models.md),
// read and written as text: a Sigstore bundle (JSON) holding a DSSE envelope
// whose payload is an in-toto Statement v1, whose predicate lists every file
// of a model (or every fixed-size shard of each file) with its SHA-256. Only
// the form is checked here, strictly, member by member; whether the envelope
// is signed by a key the caller trusts is signature_keys.hpp's, and whether
// the files are the ones listed is signed_model.hpp's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"

namespace rootspan::weights {

// A bundle larger than this is refused before it is parsed: a statement lists
// one entry per file or shard, about 200 bytes each.
inline constexpr std::uint64_t kMaxSignatureBytes = 64ull << 20;

// The only forms accepted; anything else is refused by name.
inline constexpr std::string_view kBundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json";
inline constexpr std::string_view kInTotoPayloadType = "application/vnd.in-toto+json";
inline constexpr std::string_view kStatementType = "https://in-toto.io/Statement/v1";
inline constexpr std::string_view kModelSigningPredicate = "https://model_signing/signature/v1.0";
// The default shard size of `--shards`, the reference's.
inline constexpr std::uint64_t kDefaultShardSize = 1'000'000'000;

// Who the bundle says signed it.
struct VerificationMaterial {
  enum class Kind {
    kPublicKey,         // "publicKey": {"hint": SHA-256 of the key's PEM}, no log entries
    kCertificateChain,  // "x509CertificateChain": the signing certificate first, then its chain
    kKeyless,           // "certificate" with transparency-log entries: Sigstore's keyless signing
  };
  Kind kind = Kind::kPublicKey;
  std::string public_key_hint;                // may be empty (older signers write none)
  std::vector<std::string> certificates_der;  // kCertificateChain: DER bytes, the signing one first
};

// The bundle's parts a verifier uses, decoded from base64.
struct SignatureBundle {
  std::string payload;    // the DSSE payload: the statement's bytes, exactly as signed
  std::string signature;  // the ECDSA signature (DER) over dsse_pae(payload)
  VerificationMaterial material;
};

enum class SigningMethod { kFiles, kShards };

// One entry of the predicate's "resources".
struct SignedResource {
  std::string path;         // the file, relative to the model folder, '/'-separated
  std::uint64_t start = 0;  // the bytes [start, end) of the file: a shard's, or (kFiles) the whole file's
  std::uint64_t end = 0;    // (kFiles, as parsed: 0 and 0, the statement giving no size)
  std::string sha256;       // 64 lowercase hex digits
  // The name the statement gives it: the path, or "path:start:end".
  std::string name(SigningMethod method) const;
};

// The statement's content.
struct SignedStatement {
  std::string model_name;
  SigningMethod method = SigningMethod::kFiles;
  std::uint64_t shard_size = 0;  // kShards only
  bool allow_symlinks = false;
  std::vector<std::string> ignore_paths;  // relative to the model folder, as the signer wrote them
  std::vector<SignedResource> resources;  // in the statement's order
};

// How errors name a signature file: "signature "model.sig"". The parsers
// and verify_bundle_signature take the file's name and say this.
std::string signature_subject(const std::string &name);

// Parses a bundle: mediaType kBundleMediaType; verificationMaterial with
// exactly one of publicKey, x509CertificateChain or certificate; a
// dsseEnvelope of payloadType kInTotoPayloadType with a base64 payload and
// one signature. A member of the wrong type, a missing or unknown one, bad
// base64 and more than one signature are refused, naming the member.
// Errors: ROOTSPAN_ERR_SIGNATURE_INVALID, operation "verify_signature";
// `name` names the bundle in them.
Result<SignatureBundle> parse_signature_bundle(std::string_view text, const std::string &name);

// Parses the statement a bundle carries: _type kStatementType, one subject
// whose sha256 is the SHA-256 of the resources' digests concatenated (as raw
// bytes, in order), predicateType kModelSigningPredicate, a serialization of
// method "files" or "shards", hash_type "sha256", and resources whose
// algorithm matches it ("sha256", or "sha256-sharded-<shard_size>"), with
// names that are relative, '/'-separated, without "." or ".." parts, each
// named once. Errors as parse_signature_bundle's.
Result<SignedStatement> parse_signed_statement(std::string_view payload, const std::string &name);

// The statement as JSON, with the subject digest computed from `statement`'s
// resources (which the signer sorts first: sort_resources).
std::string signed_statement_json(const SignedStatement &statement);

// Sorts resources as the reference signer does: by path, part by part, then
// by start and end.
void sort_resources(std::vector<SignedResource> &resources);

// A bundle as JSON: `payload` and `signature` base64-encoded into the
// envelope, and `material` (kPublicKey or kCertificateChain).
std::string signature_bundle_json(std::string_view payload, std::string_view signature,
                                  const VerificationMaterial &material);

// DSSE's pre-authentication encoding of an in-toto payload: what is signed.
std::string dsse_pae(std::string_view payload);

}  // namespace rootspan::weights
