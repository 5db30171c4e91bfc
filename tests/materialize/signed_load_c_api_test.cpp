// Signed models through weights.h (docs/signed-models.md): rootspan_model_sign
// signs a sharded safetensors checkpoint written here, with an EC key made
// here, and rootspan_weights_load checks it with signature_path and
// public_key_path, as an attacker who can change the folder would try it: a
// weight byte or config.json changed, two shards of a file swapped, a signed
// file removed, an unsigned one added, a link, another key. Each failure has
// its code, names the file or shard (and both digests), and leaves no root;
// the option errors name the field; a signed load never hands out a mapping.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "c_api_load_fixture.hpp"

namespace rootspan::testing {
namespace {

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

std::string sha256_of_file(const fs::path &path) {
  std::ifstream f(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return sha256_hex(std::vector<std::byte>(reinterpret_cast<const std::byte *>(text.data()),
                                           reinterpret_cast<const std::byte *>(text.data()) + text.size()));
}

std::string base64_decoded(const std::string &text) {
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char *>(out.data()),
                                reinterpret_cast<const unsigned char *>(text.data()), static_cast<int>(text.size()));
  EXPECT_GE(n, 0);
  out.resize(static_cast<std::size_t>(n) - (text.size() - text.find_last_not_of('=') - 1));
  return out;
}

// An EC P-256 key pair, written as PEM files in `dir` as name.pem and name.pub.pem.
void write_key_pair(const TempDir &dir, const std::string &name) {
  EVP_PKEY *key = EVP_EC_gen("P-256");
  ASSERT_NE(key, nullptr);
  FILE *f = std::fopen((dir.path() / (name + ".pem")).c_str(), "w");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr), 1);
  std::fclose(f);
  f = std::fopen((dir.path() / (name + ".pub.pem")).c_str(), "w");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(PEM_write_PUBKEY(f, key), 1);
  std::fclose(f);
  EVP_PKEY_free(key);
}

class SignedLoadTest : public CApiLoadTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(CApiLoadTest::SetUp());
    // Two shards and an index (the model folder: model_), a config beside
    // them; keys and signatures outside it (keys_).
    a_ = write_safetensors(model_, "a.safetensors", {{"up", "F32", {8, 4}}, {"embed", "F32", {4}}}, 5);
    b_ = write_safetensors(model_, "b.safetensors", {{"down", "F32", {4, 6}}, {"norm", "F32", {4}}}, 6);
    write_index(model_, {{"a.safetensors", &a_}, {"b.safetensors", &b_}});
    model_.write_text("config.json", R"({"model_type": "tiny", "hidden_size": 4})");
    write_key_pair(keys_, "signer");
    write_key_pair(keys_, "other");
    private_key_ = (keys_.path() / "signer.pem").string();
    public_key_ = (keys_.path() / "signer.pub.pem").string();
    signature_ = (keys_.path() / "model.sig").string();
  }

  rootspan_sign_options sign_options(bool shards = false) const {
    rootspan_sign_options o{};
    o.struct_size = sizeof o;
    o.private_key_path = private_key_.c_str();
    o.shards = shards ? 1 : 0;
    o.shard_size = shards ? 64 : 0;
    return o;
  }

  // Signs the folder and writes the bundle to signature_; its JSON.
  nlohmann::json sign(const rootspan_sign_options &o) {
    char *json = nullptr;
    rootspan_error *raw = nullptr;
    const rootspan_status status = rootspan_model_sign(model_.path().c_str(), &o, &json, &raw);
    EXPECT_EQ(status, ROOTSPAN_OK) << describe(raw);
    rootspan_error_free(raw);
    if (json == nullptr) return nullptr;
    keys_.write_text("model.sig", json);
    nlohmann::json doc = nlohmann::json::parse(json);
    rootspan_string_free(json);
    return doc;
  }
  nlohmann::json sign(bool shards = false) { return sign(sign_options(shards)); }

  // The statement a bundle carries.
  static nlohmann::json statement_of(const nlohmann::json &bundle) {
    return nlohmann::json::parse(base64_decoded(bundle["dsseEnvelope"]["payload"].get<std::string>()));
  }

  rootspan_load_options options() const {
    rootspan_load_options o = CApiLoadTest::options();
    o.signature_path = signature_.c_str();
    o.public_key_path = public_key_.c_str();
    return o;
  }

  // Loads the model folder; a failure leaves no root.
  rootspan_status load(const rootspan_load_options &o) {
    const rootspan_status status = CApiLoadTest::load(model_.path(), o);
    if (status != ROOTSPAN_OK) {
      EXPECT_EQ(live_roots(), 0u) << "a failed signed load left roots";
    }
    return status;
  }

  nlohmann::json report(rootspan_status (*call)(const rootspan_weights *, char **, rootspan_error **)) const {
    char *json = nullptr;
    EXPECT_EQ(call(weights_, &json, nullptr), ROOTSPAN_OK);
    if (json == nullptr) return nullptr;
    nlohmann::json doc = nlohmann::json::parse(json);
    rootspan_string_free(json);
    return doc;
  }

  static void write_at(const fs::path &file, std::uint64_t offset, const std::string &bytes) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  static std::string read_at(const fs::path &file, std::uint64_t offset, std::size_t length) {
    std::ifstream f(file, std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    std::string out(length, '\0');
    f.read(out.data(), static_cast<std::streamsize>(length));
    return out;
  }

  TempDir model_, keys_;
  WrittenFile a_, b_;
  std::string private_key_, public_key_, signature_;
};

TEST_F(SignedLoadTest, AFilesSignatureLoadsAndListsEveryFile) {
  sign();
  ASSERT_EQ(load(options()), ROOTSPAN_OK) << message();
  const nlohmann::json d = report(rootspan_weights_digests);
  ASSERT_EQ(d["verified"].size(), 4u) << d.dump();
  const char *names[] = {"a.safetensors", "b.safetensors", "config.json", "model.safetensors.index.json"};
  for (std::size_t i = 0; i < 4; ++i) {
    const nlohmann::json &job = d["verified"][i];
    EXPECT_EQ(job["kind"], "file") << job.dump();
    EXPECT_EQ(job["name"], names[i]) << job.dump();
    EXPECT_EQ(job["source"], "signature") << job.dump();
    EXPECT_EQ(job["sha256"], sha256_of_file(model_.path() / names[i])) << job.dump();
    EXPECT_EQ(job["bytes"], fs::file_size(model_.path() / names[i])) << job.dump();
  }
  std::size_t count = 0;
  ASSERT_EQ(rootspan_weights_component_count(weights_, &count), ROOTSPAN_OK);
  EXPECT_EQ(count, 4u);
}

TEST_F(SignedLoadTest, AShardsSignatureLoadsAndListsEveryShard) {
  sign(true);
  ASSERT_EQ(load(options()), ROOTSPAN_OK) << message();
  const nlohmann::json d = report(rootspan_weights_digests);
  std::vector<std::string> expected;
  for (const char *name : {"a.safetensors", "b.safetensors", "config.json", "model.safetensors.index.json"}) {
    const std::uint64_t size = fs::file_size(model_.path() / name);
    for (std::uint64_t start = 0; start < size; start += 64) {
      expected.push_back(std::string(name) + ":" + std::to_string(start) + ":" +
                         std::to_string(std::min(size, start + 64)));
    }
  }
  ASSERT_EQ(d["verified"].size(), expected.size()) << d.dump();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(d["verified"][i]["kind"], "shard") << d["verified"][i].dump();
    EXPECT_EQ(d["verified"][i]["name"], expected[i]);
    EXPECT_EQ(d["verified"][i]["source"], "signature");
  }
  // The first shard of a.safetensors: its first 64 bytes.
  const std::string first = read_at(model_.path() / "a.safetensors", 0, 64);
  EXPECT_EQ(d["verified"][0]["sha256"],
            sha256_hex(std::vector<std::byte>(reinterpret_cast<const std::byte *>(first.data()),
                                              reinterpret_cast<const std::byte *>(first.data()) + 64)));
}

TEST_F(SignedLoadTest, SignWritesTheReferenceForm) {
  const nlohmann::json bundle = sign(true);
  EXPECT_EQ(bundle["mediaType"], "application/vnd.dev.sigstore.bundle.v0.3+json");
  EXPECT_EQ(bundle["dsseEnvelope"]["payloadType"], "application/vnd.in-toto+json");
  EXPECT_TRUE(bundle["verificationMaterial"]["publicKey"]["hint"].is_string());
  const nlohmann::json statement = statement_of(bundle);
  const nlohmann::json &serialization = statement["predicate"]["serialization"];
  EXPECT_EQ(serialization["method"], "shards");
  EXPECT_TRUE(serialization["shard_size"].is_number_integer()) << serialization.dump();
  EXPECT_EQ(serialization["shard_size"], 64);
  EXPECT_EQ(statement["predicateType"], "https://model_signing/signature/v1.0");
  std::vector<std::tuple<std::string, std::uint64_t, std::uint64_t>> order;
  for (const nlohmann::json &r : statement["predicate"]["resources"]) {
    const std::string name = r["name"];
    EXPECT_EQ(r["algorithm"], "sha256-sharded-64");
    const std::size_t second = name.rfind(':'), first = name.rfind(':', second - 1);
    order.emplace_back(name.substr(0, first), std::stoull(name.substr(first + 1, second - first - 1)),
                       std::stoull(name.substr(second + 1)));
  }
  ASSERT_FALSE(order.empty());
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end())) << statement["predicate"]["resources"].dump();
  // Files: sorted by name, whole.
  const nlohmann::json files = statement_of(sign(false));
  EXPECT_FALSE(files["predicate"]["serialization"].contains("shard_size"));
  std::vector<std::string> names;
  for (const nlohmann::json &r : files["predicate"]["resources"]) names.push_back(r["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"a.safetensors", "b.safetensors", "config.json",
                                             "model.safetensors.index.json"}));
}

TEST_F(SignedLoadTest, AChangedWeightByteFailsNamingTheFileOrShardAndBothDigests) {
  for (bool shards : {false, true}) {
    sign(shards);
    const std::string signed_digest = sha256_of_file(model_.path() / "b.safetensors");
    const std::uint64_t at = b_.tensors.at("norm").first + 1;
    const std::string before = read_at(model_.path() / "b.safetensors", at, 1);
    write_at(model_.path() / "b.safetensors", at, std::string(1, static_cast<char>(before[0] ^ 1)));
    EXPECT_EQ(load(options()), ROOTSPAN_ERR_DIGEST_MISMATCH) << shards;
    const std::string actual = sha256_of_file(model_.path() / "b.safetensors");
    if (!shards) {
      EXPECT_TRUE(has(message(), "file \"b.safetensors\" is not the published one: its SHA-256 is " + actual +
                                     ", expected " + signed_digest + " (from the signature)"))
          << message();
    } else {
      const std::uint64_t start = at / 64 * 64;
      const std::uint64_t end = std::min<std::uint64_t>(start + 64, fs::file_size(model_.path() / "b.safetensors"));
      EXPECT_TRUE(has(message(), "shard \"b.safetensors:" + std::to_string(start) + ":" + std::to_string(end) +
                                     "\" is not the published one"))
          << message();
      EXPECT_TRUE(has(message(), "(from the signature)")) << message();
    }
    write_at(model_.path() / "b.safetensors", at, before);
    ASSERT_EQ(load(options()), ROOTSPAN_OK) << message();
  }
}

TEST_F(SignedLoadTest, AChangedFileTheLoadDoesNotReadIsRefusedTheSameWay) {
  sign();
  const std::string signed_digest = sha256_of_file(model_.path() / "config.json");
  model_.write_text("config.json", R"({"model_type": "evil", "hidden_size": 4})");
  EXPECT_EQ(load(options()), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(), "file \"config.json\" is not the published one: its SHA-256 is " +
                                 sha256_of_file(model_.path() / "config.json") + ", expected " + signed_digest))
      << message();
  // Another size: refused as well (shards: by its size, before any hashing).
  model_.write_text("config.json", "{}");
  EXPECT_EQ(load(options()), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(), "file \"config.json\"")) << message();
  model_.write_text("config.json", R"({"model_type": "tiny", "hidden_size": 4})");
  sign(true);
  model_.write_text("config.json", "{}");
  EXPECT_EQ(load(options()), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(), "file \"config.json\" is 2 bytes, but its 1 signed shard(s) cover")) << message();
}

TEST_F(SignedLoadTest, SwappedShardsAreRefused) {
  // Two 64-byte shards of a.safetensors' data section swapped: the file still
  // opens (same header, same size), the shards are not the signed ones.
  sign(true);
  const fs::path a = model_.path() / "a.safetensors";
  const std::uint64_t first = (a_.data_offset + 63) / 64 * 64;
  ASSERT_LE(first + 128, a_.bytes.size());
  const std::string x = read_at(a, first, 64), y = read_at(a, first + 64, 64);
  ASSERT_NE(x, y);
  write_at(a, first, y);
  write_at(a, first + 64, x);
  EXPECT_EQ(load(options()), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(
      has(message(), "shard \"a.safetensors:" + std::to_string(first) + ":" + std::to_string(first + 64) + "\"") ||
      has(message(), "shard \"a.safetensors:" + std::to_string(first + 64) + ":" + std::to_string(first + 128) + "\""))
      << message();
  // Two whole files of the same size swapped under a files signature.
  model_.write_text("config.json", "{\"x\": 1}");
  model_.write_text("generation_config.json", "{\"y\": 2}");
  write_at(a, first, x);
  write_at(a, first + 64, y);
  sign(false);
  fs::rename(model_.path() / "config.json", model_.path() / "swap");
  fs::rename(model_.path() / "generation_config.json", model_.path() / "config.json");
  fs::rename(model_.path() / "swap", model_.path() / "generation_config.json");
  EXPECT_EQ(load(options()), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(), "config.json\" is not the published one")) << message();
}

TEST_F(SignedLoadTest, ASignatureInsideTheFolderIsLeftOutOfIt) {
  const std::string inside = (model_.path() / "model.sig").string();
  rootspan_sign_options o = sign_options();
  o.signature_path = inside.c_str();
  const nlohmann::json bundle = sign(o);
  model_.write_text("model.sig", bundle.dump());
  const nlohmann::json statement = statement_of(bundle);  // kept: a range-for over a temporary's member dangles
  for (const nlohmann::json &r : statement["predicate"]["resources"]) EXPECT_NE(r["name"], "model.sig");
  rootspan_load_options l = options();
  l.signature_path = inside.c_str();
  ASSERT_EQ(load(l), ROOTSPAN_OK) << message();
  EXPECT_EQ(report(rootspan_weights_digests)["verified"].size(), 4u);
  // The statement itself says so, as the reference writes it: the same
  // bundle kept outside (sign() wrote it there too) loads as well.
  const nlohmann::json ignored = statement_of(bundle)["predicate"]["serialization"]["ignore_paths"];
  EXPECT_NE(std::find(ignored.begin(), ignored.end(), "model.sig"), ignored.end()) << ignored.dump();
  ASSERT_EQ(load(options()), ROOTSPAN_OK) << message();
  // Another file of the folder is not excused by it.
  model_.write_text("model.sig.bak", bundle.dump());
  EXPECT_EQ(load(l), ROOTSPAN_ERR_SIGNATURE_INVALID);
  EXPECT_TRUE(has(message(), "are not signed: \"model.sig.bak\"")) << message();
}

TEST_F(SignedLoadTest, AMissingOrAnUnsignedFileIsRefusedNamingIt) {
  sign();
  fs::remove(model_.path() / "config.json");
  EXPECT_EQ(load(options()), ROOTSPAN_ERR_SIGNATURE_INVALID);
  EXPECT_TRUE(has(message(), "the signature names 1 file(s) the model folder")) << message();
  EXPECT_TRUE(has(message(), "does not have: \"config.json\"")) << message();

  model_.write_text("config.json", R"({"model_type": "tiny", "hidden_size": 4})");
  model_.write_text("notes/README.md", "added after signing");
  EXPECT_EQ(load(options()), ROOTSPAN_ERR_SIGNATURE_INVALID);
  EXPECT_TRUE(has(message(), "1 file(s) of the model folder")) << message();
  EXPECT_TRUE(has(message(), "are not signed: \"notes/README.md\"")) << message();
  // ignore_unsigned_files: loaded, the signed files still checked.
  rootspan_load_options o = options();
  o.ignore_unsigned_files = 1;
  ASSERT_EQ(load(o), ROOTSPAN_OK) << message();
  EXPECT_EQ(report(rootspan_weights_digests)["verified"].size(), 4u);
  // ... but it does not excuse a missing one.
  fs::remove(model_.path() / "config.json");
  EXPECT_EQ(load(o), ROOTSPAN_ERR_SIGNATURE_INVALID);
  EXPECT_TRUE(has(message(), "does not have: \"config.json\"")) << message();
}

TEST_F(SignedLoadTest, AnotherKeyIsRefused) {
  sign();
  rootspan_load_options o = options();
  const std::string other = (keys_.path() / "other.pub.pem").string();
  o.public_key_path = other.c_str();
  EXPECT_EQ(load(o), ROOTSPAN_ERR_SIGNATURE_INVALID);
  EXPECT_TRUE(has(message(), "model.sig")) << message();
  EXPECT_TRUE(has(message(), "the bundle was signed by another key")) << message();
  // A signature the other key made is refused by the signer's.
  rootspan_sign_options s = sign_options();
  const std::string other_private = (keys_.path() / "other.pem").string();
  s.private_key_path = other_private.c_str();
  sign(s);
  EXPECT_EQ(load(options()), ROOTSPAN_ERR_SIGNATURE_INVALID);
  EXPECT_TRUE(has(message(), "signed by another key")) << message();
  // A key file that is not a key names the field's file.
  const std::string not_key = keys_.write_text("not-a-key.pem", "hello").string();
  o.public_key_path = not_key.c_str();
  EXPECT_EQ(load(o), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(message(), "not-a-key.pem")) << message();
}

TEST_F(SignedLoadTest, OptionErrorsNameTheField) {
  sign();
  rootspan_load_options no_key = options();
  no_key.public_key_path = nullptr;
  EXPECT_EQ(load(no_key), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(message(), "options.signature_path needs a public key (public_key_path)")) << message();

  rootspan_load_options no_signature = options();
  no_signature.signature_path = nullptr;
  EXPECT_EQ(load(no_signature), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(message(), "options.signature_path is NULL")) << message();
  rootspan_load_options only_ignore{};
  only_ignore.struct_size = sizeof only_ignore;
  only_ignore.provider = "host";
  only_ignore.ignore_unsigned_files = 1;
  EXPECT_EQ(load(only_ignore), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(message(), "ignore_unsigned_files check a signature: options.signature_path is NULL")) << message();

  rootspan_load_options null_chain = options();
  null_chain.certificate_chain_count = 2;
  EXPECT_EQ(load(null_chain), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(message(), "options.certificate_chain_paths is NULL, but options.certificate_chain_count is 2"))
      << message();
  const std::string ca = keys_.write_text("ca.pem", "").string();
  const char *entries[] = {ca.c_str(), nullptr};
  rootspan_load_options null_entry = options();
  null_entry.certificate_chain_paths = entries;
  null_entry.certificate_chain_count = 2;
  EXPECT_EQ(load(null_entry), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(message(), "options.certificate_chain_paths[1] is NULL")) << message();
}

TEST_F(SignedLoadTest, ALinkInTheFolderIsRefusedWithoutAllowSymlinks) {
  sign();
  fs::create_symlink("config.json", model_.path() / "config-link.json");
  EXPECT_EQ(load(options()), ROOTSPAN_ERR_SIGNATURE_INVALID);
  EXPECT_TRUE(has(message(), "model file \"config-link.json\"")) << message();
  // Signing does not follow it either.
  char *json = nullptr;
  rootspan_error *raw = nullptr;
  const rootspan_sign_options o = sign_options();
  EXPECT_EQ(rootspan_model_sign(model_.path().c_str(), &o, &json, &raw), ROOTSPAN_ERR_SIGNATURE_INVALID);
  EXPECT_EQ(json, nullptr);
  ASSERT_NE(raw, nullptr);
  EXPECT_TRUE(has(rootspan_error_message(raw), "config-link.json")) << rootspan_error_message(raw);
  rootspan_error_free(raw);
  // With allow_symlinks, signed and checked as the file it leads to.
  rootspan_sign_options allow = sign_options();
  allow.allow_symlinks = 1;
  sign(allow);
  ASSERT_EQ(load(options()), ROOTSPAN_OK) << message();
  const nlohmann::json d = report(rootspan_weights_digests);
  ASSERT_EQ(d["verified"].size(), 5u) << d.dump();
  EXPECT_EQ(d["verified"][3]["name"], "config.json");
  EXPECT_EQ(d["verified"][2]["name"], "config-link.json");
  EXPECT_EQ(d["verified"][2]["sha256"], d["verified"][3]["sha256"]);
}

TEST_F(SignedLoadTest, MmapIsTurnedIntoReadAndTheReportSaysWhy) {
  sign();
  rootspan_load_options o = options();
  o.strategy = ROOTSPAN_LOAD_MMAP;
  ASSERT_EQ(load(o), ROOTSPAN_OK) << message();
  const nlohmann::json r = report(rootspan_weights_read_report);
  EXPECT_EQ(r["requested"], "mmap") << r.dump();
  EXPECT_EQ(r["strategy"], "read") << r.dump();
  EXPECT_TRUE(has(r["reason"], "a verified load copies what it hashes")) << r.dump();
}

TEST_F(SignedLoadTest, SignRefusesNullsAndBadStructSizes) {
  rootspan_sign_options o = sign_options();
  char *json = nullptr;
  const auto refused = [&](const char *path, const rootspan_sign_options *options, char **out,
                           const std::string &words) {
    rootspan_error *raw = nullptr;
    EXPECT_EQ(rootspan_model_sign(path, options, out, &raw), ROOTSPAN_ERR_INVALID_ARGUMENT) << words;
    ASSERT_NE(raw, nullptr) << words;
    EXPECT_TRUE(has(rootspan_error_message(raw), words)) << rootspan_error_message(raw);
    rootspan_error_free(raw);
    EXPECT_EQ(json, nullptr);
  };
  refused(nullptr, &o, &json, "path or json is NULL");
  refused(model_.path().c_str(), &o, nullptr, "path or json is NULL");
  refused(model_.path().c_str(), nullptr, &json, "options");
  rootspan_sign_options small = o;
  small.struct_size = 4;
  refused(model_.path().c_str(), &small, &json, "struct_size");
  rootspan_sign_options zero = o;
  zero.struct_size = 0;
  refused(model_.path().c_str(), &zero, &json, "struct_size");
  rootspan_sign_options no_key = o;
  no_key.private_key_path = nullptr;
  refused(model_.path().c_str(), &no_key, &json, "options.private_key_path is NULL");
  rootspan_sign_options public_only = o;
  public_only.private_key_path = public_key_.c_str();
  refused(model_.path().c_str(), &public_only, &json, "signer.pub.pem");
  const std::string file = (model_.path() / "config.json").string();
  refused(file.c_str(), &o, &json, "is not a folder");
  rootspan_sign_options null_chain = o;
  null_chain.certificate_chain_count = 1;
  refused(model_.path().c_str(), &null_chain, &json, "options.certificate_chain_paths is NULL");
  // A null error slot still gets the status.
  EXPECT_EQ(rootspan_model_sign(nullptr, &o, &json, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace rootspan::testing
