#include "weights/signing/signed_model.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "core/text/quoting.hpp"
#include "weights/checkpoints/hf_cache.hpp"
#include "weights/files/input_file.hpp"
#include "weights/signing/model_files.hpp"
#include "weights/signing/signature_keys.hpp"

namespace rootspan::weights {

namespace fs = std::filesystem;

namespace {

constexpr const char *kVerify = "verify_signature";
constexpr const char *kSign = "sign_model";
constexpr const char *kSource = "signature";

// The descriptor to hash `file` from: the checkpoint's own where the file is
// one of its shards (so that a load's bytes are hashed where they landed),
// else the file opened now.
Result<std::shared_ptr<const InputFile>> input_for(const ModelFile &file, const Checkpoint *checkpoint,
                                                   const char *operation) {
  if (checkpoint != nullptr) {
    for (const Shard &shard : checkpoint->shards()) {
      std::error_code ec;
      if (fs::equivalent(file.path, shard.path, ec)) return shard.input;
    }
  }
  auto opened = InputFile::open(file.path, operation);
  if (!opened) return opened.error();
  return std::make_shared<const InputFile>(std::move(opened).value());
}

DigestJob job_over(std::shared_ptr<const InputFile> input, const SignedResource &resource, SigningMethod method,
                   std::string expected) {
  const std::uint64_t length = resource.end - resource.start;
  return {method == SigningMethod::kFiles ? "file" : "shard",
          resource.name(method),
          kSource,
          std::move(expected),
          {{std::move(input), {resource.start, length, 1, length}, {}}},
          {},
          {}};
}

// The shards the reference cuts a file of `bytes` into: none for an empty file.
std::vector<SignedResource> shards_of(const std::string &path, std::uint64_t bytes, std::uint64_t shard_size) {
  std::vector<SignedResource> out;
  for (std::uint64_t start = 0; start < bytes; start += std::min(shard_size, bytes - start)) {
    out.push_back({path, start, start + std::min(shard_size, bytes - start), ""});
  }
  return out;
}

// How many file names an error lists before "and N more".
constexpr std::size_t kNamesShown = 5;

// Matches the statement's resources with the folder's files; the jobs that
// check them.
Result<std::vector<DigestJob>> match_files(const Checkpoint &checkpoint, const SignedStatement &statement,
                                           const std::vector<ModelFile> &files, const SignatureRequest &request) {
  const fs::path &folder = checkpoint.folder();
  std::map<std::string, std::vector<const SignedResource *>> signed_files;
  for (const SignedResource &r : statement.resources) signed_files[r.path].push_back(&r);
  std::map<std::string, const ModelFile *> present;
  for (const ModelFile &f : files) present[f.name] = &f;

  std::vector<std::string> missing, unsigned_files;
  for (const auto &[path, resources] : signed_files) {
    if (present.count(path) == 0) missing.push_back(path);
  }
  for (const ModelFile &f : files) {
    const bool no_content = statement.method == SigningMethod::kShards && f.bytes == 0;  // has no shards to sign
    if (signed_files.count(f.name) == 0 && !no_content) unsigned_files.push_back(f.name);
  }
  if (!missing.empty()) {
    return make_error(ROOTSPAN_ERR_SIGNATURE_INVALID, kVerify,
                      "the signature names " + std::to_string(missing.size()) + " file(s) the model folder " +
                          quoted_text(folder.string()) + " does not have: " + quoted_list(missing, kNamesShown));
  }
  if (!unsigned_files.empty() && !request.ignore_unsigned_files) {
    return make_error(ROOTSPAN_ERR_SIGNATURE_INVALID, kVerify,
                      std::to_string(unsigned_files.size()) + " file(s) of the model folder " +
                          quoted_text(folder.string()) +
                          " are not signed: " + quoted_list(unsigned_files, kNamesShown) +
                          " (the signature does not name them; ignore_unsigned_files loads the model without them "
                          "checked)");
  }

  std::vector<DigestJob> jobs;
  for (const auto &[path, resources] : signed_files) {
    const ModelFile &file = *present.at(path);
    auto input = input_for(file, &checkpoint, kVerify);
    if (!input) return input.error();
    const std::uint64_t bytes = input.value()->size();
    if (statement.method == SigningMethod::kFiles) {
      SignedResource whole{path, 0, bytes, resources.front()->sha256};
      jobs.push_back(job_over(input.value(), whole, SigningMethod::kFiles, whole.sha256));
      continue;
    }
    std::vector<const SignedResource *> sorted = resources;
    std::sort(sorted.begin(), sorted.end(), [](auto *a, auto *b) { return a->start < b->start; });
    std::uint64_t covered = 0;
    for (const SignedResource *r : sorted) {
      if (r->start != covered) break;
      covered = r->end;
    }
    const std::vector<SignedResource> expected = shards_of(path, bytes, statement.shard_size);
    if (covered != bytes || sorted.size() != expected.size()) {
      return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, kVerify,
                        "file " + quoted_text(path) + " is " + std::to_string(bytes) + " bytes, but its " +
                            std::to_string(sorted.size()) + " signed shard(s) cover " + std::to_string(covered) +
                            (covered == sorted.back()->end ? "" : " (with a gap)") + " bytes",
                        covered, bytes);
    }
    for (const SignedResource *r : sorted)
      jobs.push_back(job_over(input.value(), *r, SigningMethod::kShards, r->sha256));
  }
  return jobs;
}

}  // namespace

Result<std::vector<DigestJob>> plan_signature(const Checkpoint &checkpoint, const SignatureRequest &request) {
  const std::string subject = request.bundle.string();
  auto text = read_whole_file(request.bundle, kMaxSignatureBytes, ROOTSPAN_ERR_SIGNATURE_INVALID, kVerify);
  if (!text) return text.error();
  auto bundle = parse_signature_bundle(text.value(), subject);
  if (!bundle) return bundle.error();

  std::optional<SigningKey> key;
  if (request.public_key) {
    auto read = SigningKey::read(*request.public_key, false);
    if (!read) return read.error();
    key = std::move(read).value();
  }
  auto trusted = read_certificates(request.certificate_chain);
  if (!trusted) return trusted.error();
  if (auto verified = verify_bundle_signature(bundle.value(), key ? &*key : nullptr, trusted.value(), subject);
      !verified) {
    return verified.error();
  }
  // Only now, signed by whom the caller trusts, is the statement believed.
  auto statement = parse_signed_statement(bundle.value().payload, subject);
  if (!statement) return statement.error();

  ModelFileRules rules{statement.value().allow_symlinks, statement.value().ignore_paths};
  if (std::string self = path_within(checkpoint.folder(), request.bundle); !self.empty())
    rules.ignore_paths.push_back(self);
  auto files = list_model_files(checkpoint.folder(), rules, kVerify);
  if (!files) return files.error();
  return match_files(checkpoint, statement.value(), files.value(), request);
}

Result<fs::path> model_folder(const fs::path &path, const std::optional<std::string> &revision) {
  if (is_cache_repository(path)) return cache_snapshot(path, revision);
  std::error_code ec;
  if (revision) {
    return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, kSign,
                      "a revision names a snapshot of a Hugging Face cache repository, and " +
                          quoted_text(path.string()) + " is not one");
  }
  if (!fs::is_directory(path, ec)) {
    return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, kSign,
                      quoted_text(path.string()) +
                          " is not a folder: a signature covers a model folder, every file "
                          "in it");
  }
  return path;
}

Result<std::string> sign_model(const fs::path &folder, const SignRequest &request) {
  auto key = SigningKey::read(request.private_key, true);
  if (!key) return key.error();
  VerificationMaterial material;
  material.public_key_hint = key.value().hint();
  if (request.certificate) {
    const fs::path one[] = {*request.certificate};
    auto certificate = read_certificates(one);
    if (!certificate) return certificate.error();
    auto certified =
        signing_key_of_certificate(certificate.value().front(), quoted_text(request.certificate->string()));
    if (!certified) return certified.error();
    if (!certified.value().same_public_key(key.value())) {
      return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, kSign,
                        "certificate " + quoted_text(request.certificate->string()) +
                            " is not for the private key given: their public keys differ");
    }
    auto chain = read_certificates(request.certificate_chain);
    if (!chain) return chain.error();
    material.kind = VerificationMaterial::Kind::kCertificateChain;
    material.certificates_der.push_back(certificate.value().front());
    material.certificates_der.insert(material.certificates_der.end(), chain.value().begin(), chain.value().end());
  } else if (!request.certificate_chain.empty()) {
    return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, kSign,
                      "a certificate chain goes with the signing certificate: give the key's certificate too");
  }
  if (request.method == SigningMethod::kShards && request.shard_size == 0) {
    return make_error(ROOTSPAN_ERR_INVALID_ARGUMENT, kSign, "the shard size is 0: it must be at least 1 byte");
  }

  SignedStatement statement;
  statement.method = request.method;
  statement.shard_size = request.method == SigningMethod::kShards ? request.shard_size : 0;
  statement.allow_symlinks = request.allow_symlinks;
  std::set<std::string> ignored;
  for (const std::string &p : default_ignored_paths()) ignored.insert(p);
  for (const std::string &p : request.ignore_paths) ignored.insert(p);
  if (request.signature) {
    if (std::string self = path_within(folder, *request.signature); !self.empty()) ignored.insert(self);
  }
  statement.ignore_paths.assign(ignored.begin(), ignored.end());
  auto files = list_model_files(folder, {request.allow_symlinks, statement.ignore_paths}, kSign);
  if (!files) return files.error();

  std::vector<DigestJob> jobs;
  for (const ModelFile &file : files.value()) {
    auto input = input_for(file, nullptr, kSign);
    if (!input) return input.error();
    const std::uint64_t bytes = input.value()->size();
    std::vector<SignedResource> pieces = request.method == SigningMethod::kFiles
                                             ? std::vector<SignedResource>{{file.name, 0, bytes, ""}}
                                             : shards_of(file.name, bytes, request.shard_size);
    for (SignedResource &piece : pieces) {
      jobs.push_back(job_over(input.value(), piece, request.method, ""));
      statement.resources.push_back(std::move(piece));
    }
  }
  ParallelHasher hasher(jobs);
  auto hashed = hasher.wait([] { return Result<void>(BOOST_OUTCOME_V2_NAMESPACE::success()); });
  if (!hashed) return hashed.error();
  for (std::size_t i = 0; i < jobs.size(); ++i) statement.resources[i].sha256 = hashed.value()[i].sha256;
  sort_resources(statement.resources);

  std::error_code ec;
  statement.model_name = folder.filename().string();
  if (statement.model_name.empty() || statement.model_name == "." || statement.model_name == "..") {
    statement.model_name = fs::canonical(folder, ec).filename().string();
  }
  const std::string payload = signed_statement_json(statement);
  auto signature = key.value().sign(payload);
  if (!signature) return signature.error();
  return signature_bundle_json(payload, signature.value(), material);
}

}  // namespace rootspan::weights
