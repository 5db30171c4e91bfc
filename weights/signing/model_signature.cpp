#include "weights/signing/model_signature.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>
#include <span>
#include <tuple>

#include "core/sha256.hpp"
#include "core/text/quoting.hpp"
#include "core/text/strict_json.hpp"

namespace rootspan::weights {

namespace {

using nlohmann::json;

constexpr const char *kOperation = "verify_signature";

Diagnostic invalid(const std::string &subject, const std::string &why) {
  return make_error(ROOTSPAN_ERR_SIGNATURE_INVALID, kOperation, subject + ": " + why);
}

const char *type_name(json::value_t type) {
  switch (type) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "true or false";
    case json::value_t::null:
      return "null";
    default:
      return "a number";
  }
}

// One JSON object's members, read by name: each must have its type, and a
// member not named by `allowed` is refused.
class Members {
 public:
  Members(const json &object, std::string where, const std::string &subject)
      : object_(object), where_(std::move(where)), subject_(subject) {}

  // Refuses `object` unless it is an object holding only `allowed` members.
  static Result<Members> of(const json &object, std::string where, const std::string &subject,
                            std::initializer_list<std::string_view> allowed, bool others_ignored = false) {
    if (!object.is_object()) {
      return invalid(subject, where + " must be an object, not " + type_name(object.type()));
    }
    if (!others_ignored) {
      for (const auto &[key, value] : object.items()) {
        if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
          std::string names;
          for (std::string_view a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
          return invalid(subject, where + " has the member " + quoted_text(key) + ", which the format does not have (" +
                                      where + " has " + names + ")");
        }
      }
    }
    return Members(object, std::move(where), subject);
  }

  bool has(std::string_view key) const { return object_.contains(key); }

  // The member `key` of `type` (value_t::number_unsigned also takes an
  // integral float: the reference signer writes 1000000.0).
  Result<const json *> get(std::string_view key, json::value_t type) const {
    const auto found = object_.find(key);
    if (found == object_.end()) return invalid(subject_, where_ + " has no " + quoted_text(std::string(key)));
    const json &value = *found;
    const bool number =
        type == json::value_t::number_unsigned && (value.is_number_unsigned() || value.is_number_float());
    if (!number && value.type() != type) {
      // A negative number asked for a count: "a number, not a number" would say nothing.
      if (type == json::value_t::number_unsigned && value.is_number()) {
        return invalid(subject_,
                       where_ + "." + std::string(key) + " must be a whole number, at least 0, not " + value.dump());
      }
      return invalid(subject_, where_ + "." + std::string(key) + " must be " + type_name(type) + ", not " +
                                   type_name(value.type()));
    }
    return &value;
  }

  Result<std::string> string(std::string_view key) const {
    auto value = get(key, json::value_t::string);
    if (!value) return value.error();
    return value.value()->get<std::string>();
  }

  // A string member that must be `expected`.
  Result<void> expect(std::string_view key, std::string_view expected, const std::string &what) const {
    auto value = string(key);
    if (!value) return value.error();
    if (value.value() != expected) {
      return invalid(subject_, where_ + "." + std::string(key) + " is " + quoted_text(value.value()) + ": " + what +
                                   " is only " + quoted_text(std::string(expected)));
    }
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  }

  const std::string &where() const { return where_; }

 private:
  const json &object_;
  std::string where_;
  const std::string &subject_;
};

// Standard base64 with padding, as protobuf's JSON writes bytes.
Result<std::string> base64_decode(const std::string &text, const std::string &where, const std::string &subject) {
  const bool alphabet = std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' ||
           c == '=';
  });
  const std::size_t pad = text.size() - std::min(text.size(), text.find_last_not_of('=') + 1);
  if (!alphabet || text.size() % 4 != 0 || pad > 2 || text.find('=') < text.size() - pad) {
    return invalid(subject, where + " is not base64 (the standard alphabet, padded to a multiple of 4 characters)");
  }
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char *>(out.data()),
                                reinterpret_cast<const unsigned char *>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return invalid(subject, where + " is not base64");
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

std::string base64_encode(std::string_view bytes) {
  std::string out((bytes.size() + 2) / 3 * 4 + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char *>(out.data()),
                                reinterpret_cast<const unsigned char *>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string hex_bytes(const std::string &hex) {  // hex: checked is_sha256_hex
  std::string out(hex.size() / 2, '\0');
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

// The subject digest: SHA-256 over the resources' digests as raw bytes.
std::string root_digest(const std::vector<SignedResource> &resources) {
  Sha256 sha;
  for (const SignedResource &r : resources) {
    const std::string raw = hex_bytes(r.sha256);
    sha.update(std::as_bytes(std::span(raw.data(), raw.size())));
  }
  return sha.hex_digest();
}

// A relative, '/'-separated path without empty, "." or ".." parts.
bool portable_relative(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.find('\0') != std::string_view::npos) return false;
  std::size_t at = 0;
  while (at <= path.size()) {
    const std::size_t end = std::min(path.find('/', at), path.size());
    const std::string_view part = path.substr(at, end - at);
    if (part.empty() || part == "." || part == "..") return false;
    at = end + 1;
  }
  return true;
}

std::optional<std::uint64_t> decimal(std::string_view text) {
  std::uint64_t value = 0;
  if (text.empty() || (text.size() > 1 && text.front() == '0')) return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string resource_algorithm(const SignedStatement &s) {
  return s.method == SigningMethod::kFiles ? "sha256" : "sha256-sharded-" + std::to_string(s.shard_size);
}

Result<void> read_serialization(const json &value, SignedStatement &out, const std::string &subject) {
  auto m = Members::of(value, "predicate.serialization", subject,
                       {"method", "hash_type", "allow_symlinks", "ignore_paths", "shard_size"});
  if (!m) return m.error();
  const Members &s = m.value();
  auto method = s.string("method");
  if (!method) return method.error();
  if (method.value() == "files") {
    out.method = SigningMethod::kFiles;
  } else if (method.value() == "shards") {
    out.method = SigningMethod::kShards;
  } else {
    return invalid(subject, "predicate.serialization.method is " + quoted_text(method.value()) +
                                ": the methods are \"files\" and \"shards\"");
  }
  auto hash = s.string("hash_type");
  if (!hash) return hash.error();
  if (hash.value() != "sha256") {
    return invalid(subject, "predicate.serialization.hash_type is " + quoted_text(hash.value()) +
                                ": rootspan checks \"sha256\" only (the SHA-256 its loads compute while they read)");
  }
  auto symlinks = s.get("allow_symlinks", json::value_t::boolean);
  if (!symlinks) return symlinks.error();
  out.allow_symlinks = symlinks.value()->get<bool>();
  if (s.has("ignore_paths")) {
    auto paths = s.get("ignore_paths", json::value_t::array);
    if (!paths) return paths.error();
    for (const json &p : *paths.value()) {
      if (!p.is_string())
        return invalid(subject, "predicate.serialization.ignore_paths holds " + std::string(type_name(p.type())) +
                                    ", not only strings");
      out.ignore_paths.push_back(p.get<std::string>());
    }
  }
  if (out.method == SigningMethod::kFiles) {
    if (s.has("shard_size"))
      return invalid(subject, "predicate.serialization has a shard_size, but its method is \"files\"");
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  }
  auto size = s.get("shard_size", json::value_t::number_unsigned);
  if (!size) return size.error();
  const json &v = *size.value();
  const double as_float = v.is_number_float() ? v.get<double>() : 0.0;
  if (v.is_number_float() && !(as_float >= 1.0 && as_float <= 9007199254740992.0 &&
                               as_float == static_cast<double>(static_cast<std::uint64_t>(as_float)))) {
    return invalid(subject, "predicate.serialization.shard_size is " + v.dump() +
                                ": it must be a whole number of bytes, at least 1");
  }
  out.shard_size = v.is_number_float() ? static_cast<std::uint64_t>(as_float) : v.get<std::uint64_t>();
  if (out.shard_size == 0)
    return invalid(subject, "predicate.serialization.shard_size is 0: it must be at least 1 byte");
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<SignedResource> read_resource(const json &value, std::size_t index, const SignedStatement &statement,
                                     const std::string &subject) {
  const std::string where = "predicate.resources[" + std::to_string(index) + "]";
  auto m = Members::of(value, where, subject, {"name", "algorithm", "digest"});
  if (!m) return m.error();
  auto name = m.value().string("name");
  if (!name) return name.error();
  auto algorithm = m.value().string("algorithm");
  if (!algorithm) return algorithm.error();
  auto digest = m.value().string("digest");
  if (!digest) return digest.error();
  if (algorithm.value() != resource_algorithm(statement)) {
    return invalid(subject, where + ".algorithm is " + quoted_text(algorithm.value()) + ", expected " +
                                quoted_text(resource_algorithm(statement)) + " for this serialization");
  }
  if (!is_sha256_hex(digest.value())) {
    return invalid(subject, where + ".digest is not a SHA-256 (64 lowercase hex digits): " +
                                quoted_text(digest.value().substr(0, 80)));
  }
  SignedResource r;
  r.sha256 = digest.value();
  r.path = name.value();
  if (statement.method == SigningMethod::kShards) {
    // "path:start:end", the path possibly holding ':' itself.
    const std::size_t second = r.path.rfind(':');
    const std::size_t first =
        second == std::string::npos || second == 0 ? std::string::npos : r.path.rfind(':', second - 1);
    const auto start = first == std::string::npos
                           ? std::nullopt
                           : decimal(std::string_view(r.path).substr(first + 1, second - first - 1));
    const auto end = second == std::string::npos ? std::nullopt : decimal(std::string_view(r.path).substr(second + 1));
    if (!start || !end || *start >= *end || *start % statement.shard_size != 0 ||
        *end - *start > statement.shard_size) {
      return invalid(subject, where + ".name " + quoted_text(r.path) +
                                  " is not a shard \"PATH:START:END\" with START a multiple of shard_size " +
                                  std::to_string(statement.shard_size) + " and START < END <= START + shard_size");
    }
    r.start = *start;
    r.end = *end;
    r.path.resize(first);
  }
  if (!portable_relative(r.path)) {
    return invalid(subject, where + ".name " + quoted_text(name.value()) +
                                " is not a relative path inside the model folder ('/'-separated, no empty, \".\" or "
                                "\"..\" parts)");
  }
  return r;
}

}  // namespace

std::string signature_subject(const std::string &name) { return "signature " + quoted_text(name); }

std::string SignedResource::name(SigningMethod method) const {
  if (method == SigningMethod::kFiles) return path;
  return path + ":" + std::to_string(start) + ":" + std::to_string(end);
}

Result<SignatureBundle> parse_signature_bundle(std::string_view text, const std::string &name) {
  const std::string subject = signature_subject(name);
  auto doc = parse_strict_json(text, ROOTSPAN_ERR_SIGNATURE_INVALID, kOperation, name,
                               JsonLimits{1u << 16, 64, "a bundle's arrays and objects are short"});
  if (!doc) return doc.error();
  auto top = Members::of(doc.value(), "the bundle", subject,
                         {"mediaType", "verificationMaterial", "dsseEnvelope", "messageSignature"});
  if (!top) return top.error();
  if (auto media = top.value().expect("mediaType", kBundleMediaType, "a model signature's bundle media type"); !media) {
    return media.error();
  }
  if (top.value().has("messageSignature")) {
    return invalid(subject,
                   "the bundle signs a message digest (messageSignature), not a DSSE envelope: it is not a "
                   "model signature");
  }
  SignatureBundle out;

  auto material_value = top.value().get("verificationMaterial", json::value_t::object);
  if (!material_value) return material_value.error();
  auto material =
      Members::of(*material_value.value(), "verificationMaterial", subject,
                  {"publicKey", "x509CertificateChain", "certificate", "tlogEntries", "timestampVerificationData"});
  if (!material) return material.error();
  const Members &mm = material.value();
  const int kinds = int(mm.has("publicKey")) + int(mm.has("x509CertificateChain")) + int(mm.has("certificate"));
  if (kinds != 1) {
    return invalid(subject,
                   "verificationMaterial must hold exactly one of publicKey, x509CertificateChain and "
                   "certificate; it holds " +
                       std::to_string(kinds));
  }
  if (mm.has("tlogEntries")) {
    if (auto t = mm.get("tlogEntries", json::value_t::array); !t) return t.error();
  }
  if (mm.has("publicKey")) {
    auto key = Members::of((*material_value.value())["publicKey"], "verificationMaterial.publicKey", subject,
                           {"hint", "rawBytes", "keyDetails"});
    if (!key) return key.error();
    out.material.kind = VerificationMaterial::Kind::kPublicKey;
    if (key.value().has("hint") && !(*material_value.value())["publicKey"]["hint"].is_null()) {
      auto hint = key.value().string("hint");
      if (!hint) return hint.error();
      out.material.public_key_hint = hint.value();
    }
  } else if (mm.has("x509CertificateChain")) {
    auto chain = Members::of((*material_value.value())["x509CertificateChain"],
                             "verificationMaterial.x509CertificateChain", subject, {"certificates"});
    if (!chain) return chain.error();
    auto certificates = chain.value().get("certificates", json::value_t::array);
    if (!certificates) return certificates.error();
    if (certificates.value()->empty()) {
      return invalid(subject,
                     "verificationMaterial.x509CertificateChain.certificates is empty: the signing "
                     "certificate comes first");
    }
    out.material.kind = VerificationMaterial::Kind::kCertificateChain;
    std::size_t i = 0;
    for (const json &c : *certificates.value()) {
      const std::string where = "verificationMaterial.x509CertificateChain.certificates[" + std::to_string(i++) + "]";
      auto cert = Members::of(c, where, subject, {"rawBytes"});
      if (!cert) return cert.error();
      auto raw = cert.value().string("rawBytes");
      if (!raw) return raw.error();
      auto der = base64_decode(raw.value(), where + ".rawBytes", subject);
      if (!der) return der.error();
      out.material.certificates_der.push_back(std::move(der).value());
    }
  } else {
    out.material.kind = VerificationMaterial::Kind::kKeyless;
  }

  auto envelope_value = top.value().get("dsseEnvelope", json::value_t::object);
  if (!envelope_value) return envelope_value.error();
  auto envelope =
      Members::of(*envelope_value.value(), "dsseEnvelope", subject, {"payload", "payloadType", "signatures"});
  if (!envelope) return envelope.error();
  if (auto type = envelope.value().expect("payloadType", kInTotoPayloadType, "a model signature's payload type");
      !type) {
    return type.error();
  }
  auto payload = envelope.value().string("payload");
  if (!payload) return payload.error();
  auto decoded = base64_decode(payload.value(), "dsseEnvelope.payload", subject);
  if (!decoded) return decoded.error();
  out.payload = std::move(decoded).value();
  auto signatures = envelope.value().get("signatures", json::value_t::array);
  if (!signatures) return signatures.error();
  if (signatures.value()->size() != 1) {
    return invalid(subject, "dsseEnvelope.signatures holds " + std::to_string(signatures.value()->size()) +
                                " signatures: a model signature has exactly one");
  }
  auto signature = Members::of(signatures.value()->front(), "dsseEnvelope.signatures[0]", subject, {"sig", "keyid"});
  if (!signature) return signature.error();
  if (signature.value().has("keyid")) {
    if (auto id = signature.value().get("keyid", json::value_t::string); !id) return id.error();
  }
  auto sig = signature.value().string("sig");
  if (!sig) return sig.error();
  auto sig_bytes = base64_decode(sig.value(), "dsseEnvelope.signatures[0].sig", subject);
  if (!sig_bytes) return sig_bytes.error();
  if (sig_bytes.value().empty()) return invalid(subject, "dsseEnvelope.signatures[0].sig is empty");
  out.signature = std::move(sig_bytes).value();
  return out;
}

Result<SignedStatement> parse_signed_statement(std::string_view payload, const std::string &name) {
  const std::string where = signature_subject(name) + " (its signed statement)";
  auto doc = parse_strict_json(payload, ROOTSPAN_ERR_SIGNATURE_INVALID, kOperation, name + " (its signed statement)",
                               JsonLimits{1u << 24, 64, "a statement lists at most 16777216 resources"});
  if (!doc) return doc.error();
  auto top = Members::of(doc.value(), "the statement", where, {"_type", "subject", "predicateType", "predicate"});
  if (!top) return top.error();
  if (auto t = top.value().expect("_type", kStatementType, "an in-toto statement's _type"); !t) return t.error();
  auto predicate_type = top.value().string("predicateType");
  if (!predicate_type) return predicate_type.error();
  if (predicate_type.value() != kModelSigningPredicate) {
    return invalid(where, "predicateType is " + quoted_text(predicate_type.value()) + ": rootspan reads " +
                              quoted_text(std::string(kModelSigningPredicate)) +
                              " (OMS v1.0; the pre-1.0 \"https://model_signing/Digests/v0.1\" is not read)");
  }
  SignedStatement out;
  auto subjects = top.value().get("subject", json::value_t::array);
  if (!subjects) return subjects.error();
  if (subjects.value()->size() != 1) {
    return invalid(where,
                   "subject holds " + std::to_string(subjects.value()->size()) + " entries: a model signature has one");
  }
  auto model = Members::of(subjects.value()->front(), "subject[0]", where, {"name", "digest"});
  if (!model) return model.error();
  auto model_name = model.value().string("name");
  if (!model_name) return model_name.error();
  out.model_name = model_name.value();
  auto digest_value = model.value().get("digest", json::value_t::object);
  if (!digest_value) return digest_value.error();
  auto digest = Members::of(*digest_value.value(), "subject[0].digest", where, {"sha256"});
  if (!digest) return digest.error();
  auto root = digest.value().string("sha256");
  if (!root) return root.error();

  auto predicate_value = top.value().get("predicate", json::value_t::object);
  if (!predicate_value) return predicate_value.error();
  // OMS v1.0: a verifier ignores predicate members it does not know.
  auto predicate = Members::of(*predicate_value.value(), "predicate", where, {"serialization", "resources"}, true);
  if (!predicate) return predicate.error();
  auto serialization = predicate.value().get("serialization", json::value_t::object);
  if (!serialization) return serialization.error();
  if (auto read = read_serialization(*serialization.value(), out, where); !read) return read.error();
  auto resources = predicate.value().get("resources", json::value_t::array);
  if (!resources) return resources.error();
  std::set<std::string> names;
  for (std::size_t i = 0; i < resources.value()->size(); ++i) {
    auto r = read_resource((*resources.value())[i], i, out, where);
    if (!r) return r.error();
    if (!names.insert(r.value().name(out.method)).second) {
      return invalid(where, "predicate.resources names " + quoted_text(r.value().name(out.method)) + " twice");
    }
    out.resources.push_back(std::move(r).value());
  }
  const std::string computed = root_digest(out.resources);
  if (root.value() != computed) {
    return invalid(where, "subject[0].digest.sha256 is " + quoted_text(root.value()) +
                              ", but the resources' digests hash to " + computed +
                              ": the statement's resources were changed after its subject was written");
  }
  return out;
}

void sort_resources(std::vector<SignedResource> &resources) {
  const auto parts = [](const std::string &path) {
    std::vector<std::string_view> out;
    std::size_t at = 0;
    while (at <= path.size()) {
      const std::size_t end = std::min(path.find('/', at), path.size());
      out.push_back(std::string_view(path).substr(at, end - at));
      at = end + 1;
    }
    return out;
  };
  std::sort(resources.begin(), resources.end(), [&](const SignedResource &a, const SignedResource &b) {
    const auto pa = parts(a.path), pb = parts(b.path);
    if (pa != pb) return pa < pb;
    return std::tie(a.start, a.end) < std::tie(b.start, b.end);
  });
}

std::string signed_statement_json(const SignedStatement &statement) {
  json serialization = {{"method", statement.method == SigningMethod::kFiles ? "files" : "shards"},
                        {"hash_type", "sha256"},
                        {"allow_symlinks", statement.allow_symlinks}};
  if (statement.method == SigningMethod::kShards) serialization["shard_size"] = statement.shard_size;
  if (!statement.ignore_paths.empty()) serialization["ignore_paths"] = statement.ignore_paths;
  json resources = json::array();
  for (const SignedResource &r : statement.resources) {
    resources.push_back(
        {{"name", r.name(statement.method)}, {"algorithm", resource_algorithm(statement)}, {"digest", r.sha256}});
  }
  const json doc = {
      {"_type", kStatementType},
      {"subject",
       json::array({{{"name", statement.model_name}, {"digest", {{"sha256", root_digest(statement.resources)}}}}})},
      {"predicateType", kModelSigningPredicate},
      {"predicate", {{"serialization", std::move(serialization)}, {"resources", std::move(resources)}}}};
  return doc.dump(2);
}

std::string signature_bundle_json(std::string_view payload, std::string_view signature,
                                  const VerificationMaterial &material) {
  json verification;
  if (material.kind == VerificationMaterial::Kind::kCertificateChain) {
    json certificates = json::array();
    for (const std::string &der : material.certificates_der) certificates.push_back({{"rawBytes", base64_encode(der)}});
    verification["x509CertificateChain"] = {{"certificates", std::move(certificates)}};
  } else {
    verification["publicKey"] = {{"hint", material.public_key_hint}};
  }
  verification["tlogEntries"] = json::array();
  const json doc = {{"mediaType", kBundleMediaType},
                    {"verificationMaterial", std::move(verification)},
                    {"dsseEnvelope",
                     {{"payload", base64_encode(payload)},
                      {"payloadType", kInTotoPayloadType},
                      {"signatures", json::array({{{"sig", base64_encode(signature)}, {"keyid", ""}}})}}}};
  return doc.dump();
}

std::string dsse_pae(std::string_view payload) {
  return "DSSEv1 " + std::to_string(kInTotoPayloadType.size()) + " " + std::string(kInTotoPayloadType) + " " +
         std::to_string(payload.size()) + " " + std::string(payload);
}

}  // namespace rootspan::weights
