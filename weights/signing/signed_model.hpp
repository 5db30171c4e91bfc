// Signed models (docs/signed-models.md): a load checked against an OpenSSF
// model signature, and `rootspan sign`. Verifying is two steps, both before
// any weight is handed out: the bundle's signature is checked with the key or
// chain the caller trusts, and its file list matched with the model folder,
// at once (plan_signature); then every signed file or shard becomes a digest
// job (digest_plan.hpp's jobs, hashed by parallel_hasher.hpp), so that the
// files the load reads are hashed where their bytes landed, in the load's own
// pass, and the others (config, tokenizer) from their files beside it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/diagnostic.hpp"
#include "weights/checkpoints/checkpoint.hpp"
#include "weights/digests/parallel_hasher.hpp"
#include "weights/signing/model_signature.hpp"

namespace rootspan::weights {

// What a load is asked to check a signature with.
struct SignatureRequest {
  std::filesystem::path bundle;                          // the signature file
  std::optional<std::filesystem::path> public_key;       // PEM
  std::vector<std::filesystem::path> certificate_chain;  // PEM files of the certificates to trust
  bool ignore_unsigned_files = false;                    // files the statement does not name are not refused
};

// Reads the bundle (at most kMaxSignatureBytes) and checks its signature
// (signature_keys.hpp), then its statement against the checkpoint's folder
// (list_model_files, the statement's ignore_paths and the bundle itself left
// out): a signed file that is missing, a file the statement does not name
// (unless ignore_unsigned_files), or, with shards, a file whose size is not
// where its shards end, is refused. Returns one job per signed file or shard
// (kind "file" or "shard", source "signature"): over the checkpoint's own
// descriptor for its shards, and over a file opened here for the others.
// Errors: ROOTSPAN_ERR_SIGNATURE_INVALID (the bundle, its signature, the
// file set), ROOTSPAN_ERR_DIGEST_MISMATCH (a size), ROOTSPAN_ERR_UNSUPPORTED
// (keyless), ROOTSPAN_ERR_IO, ROOTSPAN_ERR_INVALID_ARGUMENT (a key or
// certificate file), operation "verify_signature".
Result<std::vector<DigestJob>> plan_signature(const Checkpoint &checkpoint, const SignatureRequest &request);

// What `rootspan sign` is asked for.
struct SignRequest {
  std::filesystem::path private_key;                     // PEM, EC P-256, P-384 or P-521
  std::optional<std::filesystem::path> certificate;      // set: sign with this certificate of the key, and
  std::vector<std::filesystem::path> certificate_chain;  // these above it, in the bundle
  SigningMethod method = SigningMethod::kFiles;
  std::uint64_t shard_size = kDefaultShardSize;
  bool allow_symlinks = false;
  std::vector<std::string> ignore_paths;           // relative to the folder, beside default_ignored_paths()
  std::optional<std::filesystem::path> signature;  // where the bundle goes: left out when it lies in the folder
};

// The model folder `path` names: a Hugging Face cache repository's snapshot
// of `revision`, or the folder itself. Errors: ROOTSPAN_ERR_INVALID_ARGUMENT
// (not a folder), the cache's.
Result<std::filesystem::path> model_folder(const std::filesystem::path &path,
                                           const std::optional<std::string> &revision);

// Hashes every file of `folder` (in parallel, one job per file or shard) and
// signs the statement: the bundle's JSON. Errors: the key's and
// certificates' (ROOTSPAN_ERR_INVALID_ARGUMENT: a certificate that is not
// the key's), list_model_files', a read error; operation "sign_model".
Result<std::string> sign_model(const std::filesystem::path &folder, const SignRequest &request);

}  // namespace rootspan::weights
