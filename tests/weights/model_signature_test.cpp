// Model signatures (docs/signed-models.md), white-box: the strict reader of
// Sigstore bundles and in-toto statements (weights/signing/model_signature.hpp),
// each member broken in turn and refused with ROOTSPAN_ERR_SIGNATURE_INVALID
// naming it; and the keys and chains (signature_keys.hpp), with EC keys and
// X.509 certificates made here with OpenSSL's EVP and X509 APIs, independent
// of the code under test: sign and verify on each curve, a wrong key by its
// hint and by its signature, keys on other curves, a statement changed after
// signing, chains to a trusted root and not, and a keyless bundle.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cctype>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.hpp"
#include "weights/checkpoints/checkpoint.hpp"
#include "weights/signing/model_signature.hpp"
#include "weights/signing/signature_keys.hpp"
#include "weights/signing/signed_model.hpp"

namespace rootspan::weights {
namespace {

using nlohmann::json;
using testing::FailsWith;
using testing::TempDir;
namespace fs = std::filesystem;

constexpr const char *kSubject = "model.sig";

std::string sha256_of(const std::string &bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), out, &n, EVP_sha256(), nullptr);
  static const char *hex = "0123456789abcdef";
  std::string text;
  for (unsigned int i = 0; i < n; ++i) {
    text += hex[out[i] >> 4];
    text += hex[out[i] & 15];
  }
  return text;
}

std::string raw_of_hex(const std::string &hex) {
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

std::string base64(const std::string &bytes) {
  std::string out((bytes.size() + 2) / 3 * 4 + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char *>(out.data()),
                                reinterpret_cast<const unsigned char *>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// ---- the statement and the bundle, as JSON to break ------------------------

// A files statement over two files, written here (not by the code under test).
json files_statement() {
  const std::string a = sha256_of("weights"), c = sha256_of("config");
  return json{{"_type", "https://in-toto.io/Statement/v1"},
              {"subject",
               json::array({{{"name", "model"}, {"digest", {{"sha256", sha256_of(raw_of_hex(a) + raw_of_hex(c))}}}}})},
              {"predicateType", "https://model_signing/signature/v1.0"},
              {"predicate",
               {{"serialization",
                 {{"method", "files"},
                  {"hash_type", "sha256"},
                  {"allow_symlinks", false},
                  {"ignore_paths", json::array({".git", ".gitignore"})}}},
                {"resources", json::array({{{"name", "a.safetensors"}, {"algorithm", "sha256"}, {"digest", a}},
                                           {{"name", "config.json"}, {"algorithm", "sha256"}, {"digest", c}}})}}}};
}

// A shards statement: a.safetensors of 2500 bytes in shards of 1000, as the
// reference writes it (shard_size a float).
json shards_statement() {
  std::vector<std::string> digests = {sha256_of("s0"), sha256_of("s1"), sha256_of("s2")};
  json resources = json::array();
  const char *names[] = {"a.safetensors:0:1000", "a.safetensors:1000:2000", "a.safetensors:2000:2500"};
  std::string raw;
  for (int i = 0; i < 3; ++i) {
    resources.push_back({{"name", names[i]}, {"algorithm", "sha256-sharded-1000"}, {"digest", digests[i]}});
    raw += raw_of_hex(digests[i]);
  }
  return json{{"_type", "https://in-toto.io/Statement/v1"},
              {"subject", json::array({{{"name", "model"}, {"digest", {{"sha256", sha256_of(raw)}}}}})},
              {"predicateType", "https://model_signing/signature/v1.0"},
              {"predicate",
               {{"serialization",
                 {{"method", "shards"}, {"hash_type", "sha256"}, {"allow_symlinks", false}, {"shard_size", 1000.0}}},
                {"resources", resources}}}};
}

// Recomputes the subject digest of a statement whose resources were changed
// on purpose, so that only the change is refused.
void resign_subject(json &statement) {
  std::string raw;
  for (const json &r : statement["predicate"]["resources"]) raw += raw_of_hex(r["digest"].get<std::string>());
  statement["subject"][0]["digest"]["sha256"] = sha256_of(raw);
}

json key_bundle(const std::string &payload) {
  return json{
      {"mediaType", "application/vnd.dev.sigstore.bundle.v0.3+json"},
      {"verificationMaterial", {{"publicKey", {{"hint", std::string(64, 'a')}}}, {"tlogEntries", json::array()}}},
      {"dsseEnvelope",
       {{"payload", base64(payload)},
        {"payloadType", "application/vnd.in-toto+json"},
        {"signatures", json::array({{{"sig", base64("not checked here")}, {"keyid", ""}}})}}}};
}

Result<SignatureBundle> parse_bundle(const json &bundle) { return parse_signature_bundle(bundle.dump(), kSubject); }
Result<SignedStatement> parse_statement(const json &statement) {
  return parse_signed_statement(statement.dump(), kSubject);
}

// ---- bundles ---------------------------------------------------------------

TEST(SignatureBundleTest, AWellFormedBundleParses) {
  const std::string payload = files_statement().dump();
  auto parsed = parse_bundle(key_bundle(payload));
  ASSERT_TRUE(parsed) << parsed.error()->message();
  EXPECT_EQ(parsed.value().payload, payload);
  EXPECT_EQ(parsed.value().signature, "not checked here");
  EXPECT_EQ(parsed.value().material.kind, VerificationMaterial::Kind::kPublicKey);
  EXPECT_EQ(parsed.value().material.public_key_hint, std::string(64, 'a'));
}

TEST(SignatureBundleTest, TextThatIsNotABundleIsRefused) {
  EXPECT_TRUE(
      FailsWith(parse_signature_bundle("", kSubject), ROOTSPAN_ERR_SIGNATURE_INVALID, {"model.sig", "not valid JSON"}));
  EXPECT_TRUE(FailsWith(parse_signature_bundle("model signature", kSubject), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"model.sig", "not valid JSON"}));
  const std::string bom = "\xEF\xBB\xBF" + key_bundle("{}").dump();
  EXPECT_TRUE(FailsWith(parse_signature_bundle(bom, kSubject), ROOTSPAN_ERR_SIGNATURE_INVALID, {"byte-order mark"}));
  EXPECT_TRUE(FailsWith(parse_signature_bundle("[]", kSubject), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"the bundle must be an object, not an array"}));
  // Nested far deeper than any bundle: refused while parsing, not by recursion.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_TRUE(FailsWith(parse_signature_bundle(deep, kSubject), ROOTSPAN_ERR_SIGNATURE_INVALID, {"nests deeper"}));
  std::string duplicate = key_bundle("{}").dump();
  duplicate.insert(1, R"("mediaType":"x",)");
  EXPECT_TRUE(FailsWith(parse_signature_bundle(duplicate, kSubject), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"duplicate key", "mediaType"}));
}

TEST(SignatureBundleTest, AMemberOfTheWrongTypeIsRefusedByName) {
  const json good = key_bundle(files_statement().dump());
  struct Case {
    json::json_pointer at;
    json value;
    std::string words;
  };
  const std::vector<Case> cases = {
      {json::json_pointer("/mediaType"), 3, "the bundle.mediaType must be a string, not a number"},
      {json::json_pointer("/verificationMaterial"), "key",
       "the bundle.verificationMaterial must be an object, not a string"},
      {json::json_pointer("/verificationMaterial/publicKey"), json::array(),
       "verificationMaterial.publicKey must be an object, not an array"},
      {json::json_pointer("/verificationMaterial/publicKey/hint"), 7,
       "verificationMaterial.publicKey.hint must be a string, not a number"},
      {json::json_pointer("/verificationMaterial/tlogEntries"), json::object(),
       "verificationMaterial.tlogEntries must be an array, not an object"},
      {json::json_pointer("/dsseEnvelope"), json::array(), "the bundle.dsseEnvelope must be an object, not an array"},
      {json::json_pointer("/dsseEnvelope/payload"), true, "dsseEnvelope.payload must be a string, not true or false"},
      {json::json_pointer("/dsseEnvelope/payloadType"), nullptr, "dsseEnvelope.payloadType must be a string, not null"},
      {json::json_pointer("/dsseEnvelope/signatures"), json::object(),
       "dsseEnvelope.signatures must be an array, not an object"},
      {json::json_pointer("/dsseEnvelope/signatures/0"), "sig",
       "dsseEnvelope.signatures[0] must be an object, not a string"},
      {json::json_pointer("/dsseEnvelope/signatures/0/sig"), 1,
       "dsseEnvelope.signatures[0].sig must be a string, not a number"},
      {json::json_pointer("/dsseEnvelope/signatures/0/keyid"), json::array(),
       "dsseEnvelope.signatures[0].keyid must be a string, not an array"},
  };
  for (const Case &c : cases) {
    json broken = good;
    broken[c.at] = c.value;
    EXPECT_TRUE(FailsWith(parse_bundle(broken), ROOTSPAN_ERR_SIGNATURE_INVALID, {"model.sig", c.words})) << c.at;
  }
  // A missing member is named too.
  json broken = good;
  broken["dsseEnvelope"].erase("payload");
  EXPECT_TRUE(FailsWith(parse_bundle(broken), ROOTSPAN_ERR_SIGNATURE_INVALID, {"dsseEnvelope has no \"payload\""}));
}

TEST(SignatureBundleTest, AnUnknownMemberIsRefusedByName) {
  const json good = key_bundle(files_statement().dump());
  json top = good;
  top["extra"] = 1;
  EXPECT_TRUE(FailsWith(parse_bundle(top), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"the bundle has the member \"extra\", which the format does not have"}));
  json envelope = good;
  envelope["dsseEnvelope"]["payloadEncoding"] = "base64";
  EXPECT_TRUE(FailsWith(parse_bundle(envelope), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"dsseEnvelope has the member \"payloadEncoding\""}));
  json key = good;
  key["verificationMaterial"]["publicKey"]["pem"] = "x";
  EXPECT_TRUE(FailsWith(parse_bundle(key), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"verificationMaterial.publicKey has the member \"pem\""}));
  json signature = good;
  signature["dsseEnvelope"]["signatures"][0]["cert"] = "x";
  EXPECT_TRUE(FailsWith(parse_bundle(signature), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"dsseEnvelope.signatures[0] has the member \"cert\""}));
}

TEST(SignatureBundleTest, OtherFormsAreRefusedNamingTheValue) {
  const json good = key_bundle(files_statement().dump());
  json media = good;
  media["mediaType"] = "application/vnd.dev.sigstore.bundle+json;version=0.2";
  EXPECT_TRUE(FailsWith(parse_bundle(media), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"mediaType is \"application/vnd.dev.sigstore.bundle+json;version=0.2\""}));
  json type = good;
  type["dsseEnvelope"]["payloadType"] = "application/json";
  EXPECT_TRUE(FailsWith(parse_bundle(type), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"dsseEnvelope.payloadType is \"application/json\""}));
  json message = good;
  message["messageSignature"] = json::object();
  EXPECT_TRUE(
      FailsWith(parse_bundle(message), ROOTSPAN_ERR_SIGNATURE_INVALID, {"messageSignature", "not a model signature"}));
  json two = good;
  two["dsseEnvelope"]["signatures"].push_back(two["dsseEnvelope"]["signatures"][0]);
  EXPECT_TRUE(FailsWith(parse_bundle(two), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"dsseEnvelope.signatures holds 2 signatures: a model signature has exactly one"}));
  json none = good;
  none["dsseEnvelope"]["signatures"] = json::array();
  EXPECT_TRUE(
      FailsWith(parse_bundle(none), ROOTSPAN_ERR_SIGNATURE_INVALID, {"dsseEnvelope.signatures holds 0 signatures"}));
  json both = good;
  both["verificationMaterial"]["x509CertificateChain"] = {{"certificates", json::array()}};
  EXPECT_TRUE(FailsWith(parse_bundle(both), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"verificationMaterial must hold exactly one of publicKey", "it holds 2"}));
  json empty_chain = good;
  empty_chain["verificationMaterial"].erase("publicKey");
  empty_chain["verificationMaterial"]["x509CertificateChain"] = {{"certificates", json::array()}};
  EXPECT_TRUE(FailsWith(parse_bundle(empty_chain), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"verificationMaterial.x509CertificateChain.certificates is empty"}));
}

TEST(SignatureBundleTest, BadBase64IsRefusedNamingTheMember) {
  const json good = key_bundle(files_statement().dump());
  for (const char *bad : {"abc", "ab!d", "a===", "ab=c", "YWJj\n", "YW Jj"}) {
    json payload = good;
    payload["dsseEnvelope"]["payload"] = bad;
    EXPECT_TRUE(
        FailsWith(parse_bundle(payload), ROOTSPAN_ERR_SIGNATURE_INVALID, {"dsseEnvelope.payload is not base64"}))
        << bad;
    json sig = good;
    sig["dsseEnvelope"]["signatures"][0]["sig"] = bad;
    EXPECT_TRUE(
        FailsWith(parse_bundle(sig), ROOTSPAN_ERR_SIGNATURE_INVALID, {"dsseEnvelope.signatures[0].sig is not base64"}))
        << bad;
  }
  json empty_sig = good;
  empty_sig["dsseEnvelope"]["signatures"][0]["sig"] = "";
  EXPECT_TRUE(
      FailsWith(parse_bundle(empty_sig), ROOTSPAN_ERR_SIGNATURE_INVALID, {"dsseEnvelope.signatures[0].sig is empty"}));
  json chain = good;
  chain["verificationMaterial"].erase("publicKey");
  chain["verificationMaterial"]["x509CertificateChain"] = {{"certificates", json::array({{{"rawBytes", "%%%%"}}})}};
  EXPECT_TRUE(FailsWith(parse_bundle(chain), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"verificationMaterial.x509CertificateChain.certificates[0].rawBytes is not base64"}));
  // Padding decodes to the exact bytes.
  json padded = good;
  padded["dsseEnvelope"]["signatures"][0]["sig"] = "YQ==";
  auto parsed = parse_bundle(padded);
  ASSERT_TRUE(parsed) << parsed.error()->message();
  EXPECT_EQ(parsed.value().signature, "a");
}

TEST(SignatureBundleTest, ABundleLargerThanTheLimitIsRefusedBeforeItIsRead) {
  TempDir dir;
  dir.write("model.safetensors", testing::safetensors_file({{"w", "F32", {2}}}));
  auto checkpoint = Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  const fs::path bundle = dir.path() / "huge.sig";
  { std::ofstream(bundle) << "{"; }
  fs::resize_file(bundle, kMaxSignatureBytes + 1);  // sparse: nothing is written
  SignatureRequest request;
  request.bundle = bundle;
  EXPECT_TRUE(FailsWith(plan_signature(checkpoint.value(), request), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"huge.sig", std::to_string(kMaxSignatureBytes + 1)}));
  request.bundle = dir.path() / "absent.sig";
  auto absent = plan_signature(checkpoint.value(), request);
  ASSERT_FALSE(absent);
  EXPECT_NE(absent.error()->message().find("absent.sig"), std::string::npos) << absent.error()->message();
}

// ---- statements ------------------------------------------------------------

TEST(SignedStatementTest, TheReferenceFormsParse) {
  auto files = parse_statement(files_statement());
  ASSERT_TRUE(files) << files.error()->message();
  EXPECT_EQ(files.value().method, SigningMethod::kFiles);
  EXPECT_EQ(files.value().model_name, "model");
  ASSERT_EQ(files.value().resources.size(), 2u);
  EXPECT_EQ(files.value().resources[1].path, "config.json");
  EXPECT_EQ(files.value().resources[1].sha256, sha256_of("config"));
  EXPECT_EQ(files.value().ignore_paths, (std::vector<std::string>{".git", ".gitignore"}));

  auto shards = parse_statement(shards_statement());  // shard_size 1000.0, as the reference writes it
  ASSERT_TRUE(shards) << shards.error()->message();
  EXPECT_EQ(shards.value().method, SigningMethod::kShards);
  EXPECT_EQ(shards.value().shard_size, 1000u);
  ASSERT_EQ(shards.value().resources.size(), 3u);
  EXPECT_EQ(shards.value().resources[2].path, "a.safetensors");
  EXPECT_EQ(shards.value().resources[2].start, 2000u);
  EXPECT_EQ(shards.value().resources[2].end, 2500u);

  json reference_size = shards_statement();
  reference_size["predicate"]["serialization"]["shard_size"] = 1000000.0;
  for (json &r : reference_size["predicate"]["resources"]) r["algorithm"] = "sha256-sharded-1000000";
  reference_size["predicate"]["resources"] = json::array({reference_size["predicate"]["resources"][0]});
  reference_size["predicate"]["resources"][0]["name"] = "a.safetensors:0:1000000";
  resign_subject(reference_size);
  auto million = parse_statement(reference_size);
  ASSERT_TRUE(million) << million.error()->message();
  EXPECT_EQ(million.value().shard_size, 1000000u);
  // Unknown predicate members are ignored (OMS v1.0).
  json extra = files_statement();
  extra["predicate"]["note"] = "added by a later version";
  EXPECT_TRUE(parse_statement(extra));
}

TEST(SignedStatementTest, AShardSizeThatIsNotAWholeNumberIsRefused) {
  for (const json &size : {json(1.5), json(0.0), json(-1000), json(1e300), json("1000"), json(0)}) {
    json s = shards_statement();
    s["predicate"]["serialization"]["shard_size"] = size;
    auto parsed = parse_statement(s);
    ASSERT_FALSE(parsed) << size;
    EXPECT_EQ(parsed.error()->code, ROOTSPAN_ERR_SIGNATURE_INVALID);
    EXPECT_NE(parsed.error()->message().find("predicate.serialization.shard_size"), std::string::npos)
        << parsed.error()->message();
  }
  json half = shards_statement();
  half["predicate"]["serialization"]["shard_size"] = 1.5;
  EXPECT_TRUE(FailsWith(parse_statement(half), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"predicate.serialization.shard_size is 1.5: it must be a whole number of bytes"}));
  json negative = shards_statement();
  negative["predicate"]["serialization"]["shard_size"] = -1000;
  EXPECT_TRUE(FailsWith(parse_statement(negative), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"predicate.serialization.shard_size must be a whole number, at least 0, not -1000"}));
  json zero = shards_statement();
  zero["predicate"]["serialization"]["shard_size"] = 0;
  EXPECT_TRUE(FailsWith(parse_statement(zero), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"predicate.serialization.shard_size is 0: it must be at least 1 byte"}));
  json files = files_statement();
  files["predicate"]["serialization"]["shard_size"] = 1000;
  EXPECT_TRUE(
      FailsWith(parse_statement(files), ROOTSPAN_ERR_SIGNATURE_INVALID, {"shard_size", "its method is \"files\""}));
}

TEST(SignedStatementTest, OtherFormsAreRefusedNamingTheValue) {
  json method = files_statement();
  method["predicate"]["serialization"]["method"] = "digest";
  EXPECT_TRUE(FailsWith(parse_statement(method), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"model.sig", "its signed statement", "predicate.serialization.method is \"digest\""}));
  json hash = files_statement();
  hash["predicate"]["serialization"]["hash_type"] = "blake3";
  EXPECT_TRUE(FailsWith(parse_statement(hash), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"predicate.serialization.hash_type is \"blake3\""}));
  json predicate = files_statement();
  predicate["predicateType"] = "https://model_signing/Digests/v0.1";
  EXPECT_TRUE(FailsWith(parse_statement(predicate), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"predicateType is \"https://model_signing/Digests/v0.1\""}));
  json type = files_statement();
  type["_type"] = "https://in-toto.io/Statement/v0.1";
  EXPECT_TRUE(FailsWith(parse_statement(type), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"_type is \"https://in-toto.io/Statement/v0.1\""}));
  json algorithm = files_statement();
  algorithm["predicate"]["resources"][0]["algorithm"] = "sha256-sharded-1000";
  EXPECT_TRUE(FailsWith(parse_statement(algorithm), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"predicate.resources[0].algorithm is \"sha256-sharded-1000\", expected \"sha256\""}));
  json subjects = files_statement();
  subjects["subject"].push_back(subjects["subject"][0]);
  EXPECT_TRUE(FailsWith(parse_statement(subjects), ROOTSPAN_ERR_SIGNATURE_INVALID, {"subject holds 2 entries"}));
}

TEST(SignedStatementTest, AMemberOfTheWrongTypeOrUnknownIsRefusedByName) {
  struct Case {
    json::json_pointer at;
    json value;
    std::string words;
  };
  const std::vector<Case> cases = {
      {json::json_pointer("/subject"), json::object(), "the statement.subject must be an array, not an object"},
      {json::json_pointer("/subject/0/digest"), "abc", "subject[0].digest must be an object, not a string"},
      {json::json_pointer("/subject/0/digest/sha256"), 1, "subject[0].digest.sha256 must be a string, not a number"},
      {json::json_pointer("/subject/0/name"), nullptr, "subject[0].name must be a string, not null"},
      {json::json_pointer("/predicate"), json::array(), "the statement.predicate must be an object, not an array"},
      {json::json_pointer("/predicate/serialization/allow_symlinks"), "no",
       "predicate.serialization.allow_symlinks must be true or false, not a string"},
      {json::json_pointer("/predicate/serialization/ignore_paths"), ".git",
       "predicate.serialization.ignore_paths must be an array"},
      {json::json_pointer("/predicate/serialization/ignore_paths/0"), 3,
       "predicate.serialization.ignore_paths holds a number"},
      {json::json_pointer("/predicate/resources"), json::object(),
       "predicate.resources must be an array, not an object"},
      {json::json_pointer("/predicate/resources/1"), "config.json",
       "predicate.resources[1] must be an object, not a string"},
      {json::json_pointer("/predicate/resources/0/digest"), json::object(),
       "predicate.resources[0].digest must be a string, not an object"},
      {json::json_pointer("/predicate/resources/0/size"), 7, "predicate.resources[0] has the member \"size\""},
      {json::json_pointer("/predicate/serialization/follow"), true,
       "predicate.serialization has the member \"follow\""},
      {json::json_pointer("/subject/0/digest/sha512"), "ab", "subject[0].digest has the member \"sha512\""},
      {json::json_pointer("/extra"), 1, "the statement has the member \"extra\""},
  };
  for (const Case &c : cases) {
    json broken = files_statement();
    broken[c.at] = c.value;
    EXPECT_TRUE(FailsWith(parse_statement(broken), ROOTSPAN_ERR_SIGNATURE_INVALID, {"its signed statement", c.words}))
        << c.at;
  }
  EXPECT_TRUE(FailsWith(parse_signed_statement("", kSubject), ROOTSPAN_ERR_SIGNATURE_INVALID, {"not valid JSON"}));
}

TEST(SignedStatementTest, ADigestThatIsNotLowercaseSha256IsRefused) {
  const std::string good = sha256_of("weights");
  std::string upper = good;
  for (char &c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const std::string &bad : {good.substr(0, 63), good + "0", upper, std::string(64, 'g'), std::string()}) {
    json s = files_statement();
    s["predicate"]["resources"][0]["digest"] = bad;
    EXPECT_TRUE(FailsWith(parse_statement(s), ROOTSPAN_ERR_SIGNATURE_INVALID,
                          {"predicate.resources[0].digest is not a SHA-256 (64 lowercase hex digits)"}))
        << bad;
  }
}

TEST(SignedStatementTest, AShardNameThatIsNotPathStartEndOrNotAlignedIsRefused) {
  for (const char *bad :
       {"a.safetensors", "a.safetensors:0", "a.safetensors:0:", "a.safetensors::1000", "a.safetensors:1:1000",
        "a.safetensors:0:1001", "a.safetensors:500:400", "a.safetensors:1000:1000", "a.safetensors:00:1000",
        "a.safetensors:-0:1000", "a.safetensors:0:+1000", "a.safetensors:0:99999999999999999999999"}) {
    json s = shards_statement();
    s["predicate"]["resources"][0]["name"] = bad;
    EXPECT_TRUE(FailsWith(parse_statement(s), ROOTSPAN_ERR_SIGNATURE_INVALID,
                          {"predicate.resources[0].name \"" + std::string(bad) + "\" is not a shard \"PATH:START:END\"",
                           "shard_size 1000"}))
        << bad;
  }
  // A path may hold ':' itself: the last two parts are the range.
  json colon = shards_statement();
  colon["predicate"]["resources"][0]["name"] = "dir/a:b.bin:0:1000";
  auto parsed = parse_statement(colon);
  ASSERT_TRUE(parsed) << parsed.error()->message();
  EXPECT_EQ(parsed.value().resources[0].path, "dir/a:b.bin");
}

TEST(SignedStatementTest, APathOutsideTheFolderIsRefused) {
  for (const char *bad :
       {"../a.safetensors", "dir/../../etc/passwd", "/etc/passwd", "./a", "a//b", "a/", "", "a/./b"}) {
    json s = files_statement();
    s["predicate"]["resources"][0]["name"] = bad;
    resign_subject(s);
    EXPECT_TRUE(FailsWith(
        parse_statement(s), ROOTSPAN_ERR_SIGNATURE_INVALID,
        {"predicate.resources[0].name \"" + std::string(bad) + "\" is not a relative path inside the model folder"}))
        << bad;
  }
  json shard = shards_statement();
  shard["predicate"]["resources"][1]["name"] = "../a.safetensors:1000:2000";
  EXPECT_TRUE(FailsWith(parse_statement(shard), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"predicate.resources[1].name \"../a.safetensors:1000:2000\" is not a relative path"}));
}

TEST(SignedStatementTest, AResourceNamedTwiceIsRefused) {
  json s = files_statement();
  s["predicate"]["resources"][1]["name"] = "a.safetensors";
  resign_subject(s);
  EXPECT_TRUE(FailsWith(parse_statement(s), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"predicate.resources names \"a.safetensors\" twice"}));
  json shards = shards_statement();
  shards["predicate"]["resources"][2]["name"] = "a.safetensors:1000:2000";
  resign_subject(shards);
  EXPECT_TRUE(FailsWith(parse_statement(shards), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"predicate.resources names \"a.safetensors:1000:2000\" twice"}));
}

TEST(SignedStatementTest, ASubjectDigestThatDoesNotMatchTheResourcesIsRefused) {
  json s = files_statement();
  const std::string signed_root = s["subject"][0]["digest"]["sha256"];
  s["predicate"]["resources"][0]["digest"] = sha256_of("other weights");
  EXPECT_TRUE(FailsWith(parse_statement(s), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"subject[0].digest.sha256 is \"" + signed_root + "\"", "the resources' digests hash to"}));
  // The order of the resources is part of the subject.
  json swapped = files_statement();
  std::swap(swapped["predicate"]["resources"][0], swapped["predicate"]["resources"][1]);
  EXPECT_TRUE(FailsWith(parse_statement(swapped), ROOTSPAN_ERR_SIGNATURE_INVALID, {"subject[0].digest.sha256"}));
}

TEST(SignedStatementTest, AStatementWrittenHereReadsBackTheSame) {
  for (SigningMethod method : {SigningMethod::kFiles, SigningMethod::kShards}) {
    SignedStatement s;
    s.model_name = "tiny-model";
    s.method = method;
    s.shard_size = method == SigningMethod::kShards ? 4 : 0;
    s.allow_symlinks = true;
    s.ignore_paths = {".git", "notes/draft.txt"};
    if (method == SigningMethod::kFiles) {
      s.resources = {
          {"sub/b.bin", 0, 0, sha256_of("b")}, {"a.bin", 0, 0, sha256_of("a")}, {"sub.bin", 0, 0, sha256_of("c")}};
    } else {
      s.resources = {
          {"b.bin", 4, 6, sha256_of("b1")}, {"b.bin", 0, 4, sha256_of("b0")}, {"a.bin", 0, 3, sha256_of("a")}};
    }
    sort_resources(s.resources);
    const std::string text = signed_statement_json(s);
    auto parsed = parse_signed_statement(text, kSubject);
    ASSERT_TRUE(parsed) << parsed.error()->message();
    const SignedStatement &r = parsed.value();
    EXPECT_EQ(r.model_name, "tiny-model");
    EXPECT_EQ(r.method, method);
    EXPECT_EQ(r.shard_size, s.shard_size);
    EXPECT_TRUE(r.allow_symlinks);
    EXPECT_EQ(r.ignore_paths, s.ignore_paths);
    ASSERT_EQ(r.resources.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(r.resources[i].path, s.resources[i].path);
      EXPECT_EQ(r.resources[i].sha256, s.resources[i].sha256);
      if (method == SigningMethod::kShards) {
        EXPECT_EQ(r.resources[i].start, s.resources[i].start);
        EXPECT_EQ(r.resources[i].end, s.resources[i].end);
      }
    }
    const json doc = json::parse(text);
    if (method == SigningMethod::kShards) {
      EXPECT_TRUE(doc["predicate"]["serialization"]["shard_size"].is_number_integer()) << text;
      EXPECT_EQ(doc["predicate"]["resources"][0]["name"], "a.bin:0:3");
      EXPECT_EQ(doc["predicate"]["resources"][1]["name"], "b.bin:0:4");
      EXPECT_EQ(doc["predicate"]["resources"][2]["name"], "b.bin:4:6");
      EXPECT_EQ(doc["predicate"]["resources"][2]["algorithm"], "sha256-sharded-4");
    } else {
      // Sorted part by part, as the reference does: "sub/b.bin" after "sub.bin"
      // would be wrong byte by byte ('.' < '/'), right part by part ("sub" < "sub.bin").
      EXPECT_EQ(doc["predicate"]["resources"][0]["name"], "a.bin");
      EXPECT_EQ(doc["predicate"]["resources"][1]["name"], "sub/b.bin");
      EXPECT_EQ(doc["predicate"]["resources"][2]["name"], "sub.bin");
    }
  }
}

TEST(SignedStatementTest, DssePaeIsTheExactBytesDsseSpecifies) {
  EXPECT_EQ(dsse_pae("hello"), "DSSEv1 28 application/vnd.in-toto+json 5 hello");
  EXPECT_EQ(dsse_pae(""), "DSSEv1 28 application/vnd.in-toto+json 0 ");
  const std::string binary("a\0b", 3);
  EXPECT_EQ(dsse_pae(binary), std::string("DSSEv1 28 application/vnd.in-toto+json 3 a\0b", 44));
}

// ---- keys and certificates -------------------------------------------------

struct PkeyFree {
  void operator()(EVP_PKEY *k) const { EVP_PKEY_free(k); }
};
struct X509Free {
  void operator()(X509 *x) const { X509_free(x); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;

Pkey ec_key(const char *curve) {
  Pkey key(EVP_EC_gen(curve));
  EXPECT_NE(key, nullptr) << curve;
  return key;
}

fs::path write_private(const TempDir &dir, const std::string &name, EVP_PKEY *key) {
  const fs::path path = dir.path() / name;
  FILE *f = std::fopen(path.c_str(), "w");
  EXPECT_EQ(PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr), 1);
  std::fclose(f);
  return path;
}

fs::path write_public(const TempDir &dir, const std::string &name, EVP_PKEY *key) {
  const fs::path path = dir.path() / name;
  FILE *f = std::fopen(path.c_str(), "w");
  EXPECT_EQ(PEM_write_PUBKEY(f, key), 1);
  std::fclose(f);
  return path;
}

std::string der_of(X509 *cert) {
  unsigned char *der = nullptr;
  const int n = i2d_X509(cert, &der);
  std::string out(reinterpret_cast<char *>(der), static_cast<std::size_t>(n));
  OPENSSL_free(der);
  return out;
}

// A certificate for `key`, issued by `issuer` (itself when null) with
// `issuer_key`, with the extensions given ("keyUsage" values etc.).
Cert certificate(const char *cn, EVP_PKEY *key, X509 *issuer, EVP_PKEY *issuer_key,
                 const std::vector<std::pair<int, const char *>> &extensions) {
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  static long serial = 1;
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400);
  X509_NAME *name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char *>(cn), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509_set_pubkey(cert.get(), key);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : cert.get(), cert.get(), nullptr, nullptr, 0);
  for (const auto &[nid, value] : extensions) {
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    EXPECT_NE(ext, nullptr) << value;
    X509_add_ext(cert.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  EXPECT_GT(X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()), 0);
  return cert;
}

class SignatureKeysTest : public ::testing::Test {
 protected:
  // A key pair on `curve` written as PEM files; the private key read back.
  SigningKey private_key(const char *curve, const std::string &name) {
    Pkey key = ec_key(curve);
    write_public(dir_, name + ".pub.pem", key.get());
    auto read = SigningKey::read(write_private(dir_, name + ".pem", key.get()), true);
    EXPECT_TRUE(read) << read.error()->message();
    return std::move(read).value();
  }
  SigningKey public_key(const std::string &name) {
    auto read = SigningKey::read(dir_.path() / (name + ".pub.pem"), false);
    EXPECT_TRUE(read) << read.error()->message();
    return std::move(read).value();
  }
  SignatureBundle bundle_signed_by(const SigningKey &key, bool hint = true) {
    SignatureBundle b;
    b.payload = files_statement().dump(2);
    auto sig = key.sign(b.payload);
    EXPECT_TRUE(sig) << sig.error()->message();
    b.signature = sig.value();
    if (hint) b.material.public_key_hint = key.hint();
    return b;
  }

  TempDir dir_;
};

TEST_F(SignatureKeysTest, EachCurveSignsAndVerifies) {
  for (const char *curve : {"P-256", "P-384", "P-521"}) {
    const SigningKey key = private_key(curve, curve);
    const SigningKey pub = public_key(curve);
    EXPECT_EQ(key.hint(), pub.hint()) << curve;
    EXPECT_TRUE(key.same_public_key(pub));
    const SignatureBundle b = bundle_signed_by(key);
    EXPECT_TRUE(pub.verifies(b.payload, b.signature)) << curve;
    auto verified = verify_bundle_signature(b, &pub, {}, kSubject);
    EXPECT_TRUE(verified) << curve << ": " << verified.error()->message();
    // Through JSON and back, as a load reads it.
    auto parsed = parse_signature_bundle(signature_bundle_json(b.payload, b.signature, b.material), kSubject);
    ASSERT_TRUE(parsed) << parsed.error()->message();
    EXPECT_TRUE(verify_bundle_signature(parsed.value(), &pub, {}, kSubject)) << curve;
  }
  // The hint is the SHA-256 of the public key's PEM, as the reference computes it.
  std::ifstream pem(dir_.path() / "P-256.pub.pem", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(pem)), std::istreambuf_iterator<char>());
  EXPECT_EQ(public_key("P-256").hint(), sha256_of(text));
}

TEST_F(SignatureKeysTest, AnotherKeyIsRefusedByItsHintOrByTheSignature) {
  const SigningKey signer = private_key("P-256", "signer");
  private_key("P-256", "other");
  const SigningKey other = public_key("other");
  const SignatureBundle hinted = bundle_signed_by(signer);
  EXPECT_TRUE(FailsWith(verify_bundle_signature(hinted, &other, {}, kSubject), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"model.sig", "signed by another key", "its key hint is " + signer.hint(),
                         "the public key given has " + other.hint()}));
  const SignatureBundle unhinted = bundle_signed_by(signer, false);
  EXPECT_TRUE(FailsWith(verify_bundle_signature(unhinted, &other, {}, kSubject), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"model.sig", "the signature does not verify"}));
  // A key on another of the curves, same hint forged: the signature still decides.
  private_key("P-384", "p384");
  const SigningKey p384 = public_key("p384");
  SignatureBundle forged = bundle_signed_by(signer);
  forged.material.public_key_hint = p384.hint();
  EXPECT_TRUE(FailsWith(verify_bundle_signature(forged, &p384, {}, kSubject), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"the signature does not verify"}));
  EXPECT_TRUE(FailsWith(verify_bundle_signature(hinted, nullptr, {}, kSubject), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"signed with a key", "--public-key"}));
}

TEST_F(SignatureKeysTest, AStatementChangedAfterSigningIsRefused) {
  const SigningKey key = private_key("P-384", "key");
  SignatureBundle b = bundle_signed_by(key);
  json changed = json::parse(b.payload);
  changed["predicate"]["resources"][0]["digest"] = sha256_of("evil");
  resign_subject(changed);
  b.payload = changed.dump(2);
  EXPECT_TRUE(FailsWith(verify_bundle_signature(b, &key, {}, kSubject), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"the signature does not verify", "changed after it was signed"}));
  SignatureBundle flipped = bundle_signed_by(key);
  flipped.signature.back() = static_cast<char>(flipped.signature.back() ^ 1);
  EXPECT_TRUE(FailsWith(verify_bundle_signature(flipped, &key, {}, kSubject), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"the signature does not verify"}));
}

TEST_F(SignatureKeysTest, KeysOfOtherKindsAreRefusedNamingTheCurve) {
  Pkey rsa(EVP_RSA_gen(1024));
  ASSERT_NE(rsa, nullptr);
  const fs::path rsa_pub = write_public(dir_, "rsa.pub.pem", rsa.get());
  EXPECT_TRUE(FailsWith(SigningKey::read(rsa_pub, false), ROOTSPAN_ERR_INVALID_ARGUMENT,
                        {"rsa.pub.pem", "is not an elliptic-curve key", "P-256, P-384 or P-521"}));
  EXPECT_TRUE(FailsWith(SigningKey::read(write_private(dir_, "rsa.pem", rsa.get()), true),
                        ROOTSPAN_ERR_INVALID_ARGUMENT, {"private key", "rsa.pem", "is not an elliptic-curve key"}));
  Pkey k1 = ec_key("secp256k1");
  EXPECT_TRUE(FailsWith(SigningKey::read(write_public(dir_, "k1.pub.pem", k1.get()), false),
                        ROOTSPAN_ERR_INVALID_ARGUMENT, {"k1.pub.pem", "is a key on curve secp256k1"}));
  Pkey ed(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  ASSERT_NE(ed, nullptr);
  EXPECT_TRUE(FailsWith(SigningKey::read(write_public(dir_, "ed.pub.pem", ed.get()), false),
                        ROOTSPAN_ERR_INVALID_ARGUMENT, {"ed.pub.pem", "is not an elliptic-curve key"}));
  // Not a key at all; a private key where a public one is asked for.
  dir_.write_text("text.pem", "hello");
  EXPECT_TRUE(FailsWith(SigningKey::read(dir_.path() / "text.pem", false), ROOTSPAN_ERR_INVALID_ARGUMENT,
                        {"text.pem", "is not a PEM public key"}));
  Pkey p256 = ec_key("P-256");
  EXPECT_TRUE(FailsWith(SigningKey::read(write_private(dir_, "priv.pem", p256.get()), false),
                        ROOTSPAN_ERR_INVALID_ARGUMENT, {"priv.pem", "is not a PEM public key"}));
  auto absent = SigningKey::read(dir_.path() / "absent.pem", false);
  ASSERT_FALSE(absent);
  EXPECT_NE(absent.error()->message().find("absent.pem"), std::string::npos) << absent.error()->message();
}

class CertificateChainTest : public SignatureKeysTest {
 protected:
  void SetUp() override {
    ca_key_ = ec_key("P-256");
    ca_ = certificate("root", ca_key_.get(), nullptr, nullptr,
                      {{NID_basic_constraints, "critical,CA:TRUE"}, {NID_key_usage, "critical,keyCertSign"}});
  }
  // A leaf for a new key with `extensions`, signed by the CA; the bundle it signs.
  SignatureBundle leaf_bundle(const std::vector<std::pair<int, const char *>> &extensions, bool with_root = false) {
    Pkey leaf_key = ec_key("P-384");
    Cert leaf = certificate("leaf", leaf_key.get(), ca_.get(), ca_key_.get(), extensions);
    auto key = SigningKey::read(write_private(dir_, "leaf.pem", leaf_key.get()), true);
    EXPECT_TRUE(key) << key.error()->message();
    SignatureBundle b;
    b.payload = files_statement().dump(2);
    b.signature = key.value().sign(b.payload).value();
    b.material.kind = VerificationMaterial::Kind::kCertificateChain;
    b.material.certificates_der = {der_of(leaf.get())};
    if (with_root) b.material.certificates_der.push_back(der_of(ca_.get()));
    return b;
  }

  Pkey ca_key_;
  Cert ca_;
};

TEST_F(CertificateChainTest, AChainToTheTrustedRootIsAccepted) {
  const std::vector<std::string> trusted = {der_of(ca_.get())};
  for (bool with_root : {false, true}) {
    const SignatureBundle b = leaf_bundle({{NID_key_usage, "critical,digitalSignature"}}, with_root);
    auto verified = verify_bundle_signature(b, nullptr, trusted, kSubject);
    EXPECT_TRUE(verified) << verified.error()->message();
    // And through the bundle's JSON.
    auto parsed = parse_signature_bundle(signature_bundle_json(b.payload, b.signature, b.material), kSubject);
    ASSERT_TRUE(parsed) << parsed.error()->message();
    EXPECT_EQ(parsed.value().material.certificates_der, b.material.certificates_der);
    EXPECT_TRUE(verify_bundle_signature(parsed.value(), nullptr, trusted, kSubject));
  }
  // Code signing alone (extendedKeyUsage) is enough too.
  EXPECT_TRUE(verify_bundle_signature(leaf_bundle({{NID_ext_key_usage, "codeSigning"}}), nullptr, trusted, kSubject));
  // The trusted certificates read from a PEM file.
  const fs::path pem = dir_.path() / "ca.pem";
  FILE *f = std::fopen(pem.c_str(), "w");
  PEM_write_X509(f, ca_.get());
  std::fclose(f);
  const fs::path paths[] = {pem};
  auto read = read_certificates(paths);
  ASSERT_TRUE(read) << read.error()->message();
  EXPECT_EQ(read.value(), trusted);
}

TEST_F(CertificateChainTest, AnUntrustedRootIsRefused) {
  Pkey other_key = ec_key("P-256");
  Cert other = certificate("other root", other_key.get(), nullptr, nullptr,
                           {{NID_basic_constraints, "critical,CA:TRUE"}, {NID_key_usage, "critical,keyCertSign"}});
  const std::vector<std::string> trusted = {der_of(other.get())};
  // Even with its own root in the bundle: only the caller's certificates are trusted.
  const SignatureBundle b = leaf_bundle({{NID_key_usage, "critical,digitalSignature"}}, true);
  EXPECT_TRUE(FailsWith(verify_bundle_signature(b, nullptr, trusted, kSubject), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"model.sig", "does not lead to a trusted certificate"}));
  EXPECT_TRUE(FailsWith(verify_bundle_signature(b, nullptr, {}, kSubject), ROOTSPAN_ERR_SIGNATURE_INVALID,
                        {"signed with a certificate", "--certificate-chain"}));
  SignatureBundle garbage = b;
  garbage.material.certificates_der[0] = "not a certificate";
  EXPECT_TRUE(
      FailsWith(verify_bundle_signature(garbage, nullptr, std::vector<std::string>{der_of(ca_.get())}, kSubject),
                ROOTSPAN_ERR_SIGNATURE_INVALID,
                {"verificationMaterial.x509CertificateChain.certificates[0] is not a DER X.509 certificate"}));
}

TEST_F(CertificateChainTest, ALeafThatMayNotSignIsRefused) {
  const std::vector<std::string> trusted = {der_of(ca_.get())};
  for (const auto &extensions : std::vector<std::vector<std::pair<int, const char *>>>{
           {{NID_key_usage, "critical,keyAgreement"}}, {{NID_ext_key_usage, "serverAuth"}}, {}}) {
    EXPECT_TRUE(FailsWith(verify_bundle_signature(leaf_bundle(extensions), nullptr, trusted, kSubject),
                          ROOTSPAN_ERR_SIGNATURE_INVALID,
                          {"the signing certificate allows neither digital signatures (keyUsage) nor code signing"}));
  }
}

TEST(KeylessSignatureTest, AKeylessBundleIsUnsupported) {
  json bundle = key_bundle(files_statement().dump());
  bundle["verificationMaterial"] = {{"certificate", {{"rawBytes", base64("fulcio")}}},
                                    {"tlogEntries", json::array({json::object()})}};
  auto parsed = parse_bundle(bundle);
  ASSERT_TRUE(parsed) << parsed.error()->message();
  EXPECT_EQ(parsed.value().material.kind, VerificationMaterial::Kind::kKeyless);
  EXPECT_TRUE(FailsWith(verify_bundle_signature(parsed.value(), nullptr, {}, kSubject), ROOTSPAN_ERR_UNSUPPORTED,
                        {"model.sig", "keyless Sigstore signature", "model_signing verify sigstore"}));
}

}  // namespace
}  // namespace rootspan::weights
