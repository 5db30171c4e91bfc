// Verified loads through weights.h (check_digests, digests_path,
// rootspan_weights_digests, rootspan_checkpoint_hash), as an attacker who can
// damage or swap a file would try them: a Hugging Face cache built here, its
// blobs named by their SHA-256, with a flipped byte, a blob swapped for
// another of the same size, a truncated blob; digest manifests with a wrong
// per-component digest for one rank only, naming a file that is not there,
// and not JSON. Each failure has the right code, names the file or
// component, and leaves no root; the progress callback still cancels.
// A per-tensor manifest binds each component's element type and shape and
// each file's size and header: a single file rewritten (its dtype, a shape,
// its metadata, a tensor dropped at the same size, a tensor dropped from a
// shorter file) is refused naming what changed, and the manifest reader
// refuses what the format does not have (issue 35 items 4 and 11).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "c_api_load_fixture.hpp"

namespace rootspan::testing {
namespace {

constexpr const char *kCommit = "0123456789abcdef0123456789abcdef01234567";

class VerifiedLoadTest : public CApiLoadTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(CApiLoadTest::SetUp());
    // Two shards and an index, as a cache keeps them: large files in blobs
    // named by their SHA-256, the index (in git) by a 40-hex object id.
    repo_ = dir_.path() / "models--org--name";
    a_ = write_safetensors(dir_, "staging/a.safetensors", {{"up", "F32", {8, 4}}, {"embed", "F32", {4}}}, 5);
    b_ = write_safetensors(dir_, "staging/b.safetensors", {{"down", "F32", {4, 6}}, {"norm", "F32", {4}}}, 6);
    const fs::path index = write_index(dir_, {{"a.safetensors", &a_}, {"b.safetensors", &b_}});
    fs::create_directories(repo_ / "blobs");
    fs::create_directories(repo_ / "snapshots" / kCommit);
    dir_.write_text("models--org--name/refs/main", kCommit);
    blob_a_ = place_blob(a_.path, sha256_hex(a_.bytes), "a.safetensors");
    blob_b_ = place_blob(b_.path, sha256_hex(b_.bytes), "b.safetensors");
    place_blob(index, "3f786850e387550fdab836ed7e6dc881de23001b", "model.safetensors.index.json");
  }

  fs::path place_blob(const fs::path &from, const std::string &blob, const std::string &name) {
    const fs::path to = repo_ / "blobs" / blob;
    fs::rename(from, to);
    fs::create_symlink(fs::path("../../blobs") / blob, repo_ / "snapshots" / kCommit / name);
    return to;
  }

  static rootspan_load_options options() {
    rootspan_load_options o = CApiLoadTest::options();
    o.check_digests = 1;
    return o;
  }

  rootspan_status load(const rootspan_load_options &o) { return load(o, repo_); }
  // A failure leaves no root.
  rootspan_status load(const rootspan_load_options &o, const fs::path &path) {
    const rootspan_status status = CApiLoadTest::load(path, o);
    if (status != ROOTSPAN_OK) {
      EXPECT_EQ(live_roots(), 0u) << "a failed verified load left roots";
    }
    return status;
  }

  nlohmann::json digests() const {
    char *json = nullptr;
    EXPECT_EQ(rootspan_weights_digests(weights_, &json, nullptr), ROOTSPAN_OK);
    nlohmann::json doc = nlohmann::json::parse(json);
    rootspan_string_free(json);
    return doc;
  }

  // `rootspan hash` of the repository (or of `path`).
  nlohmann::json hash(const rootspan_load_options *o, bool per_component) { return hash(o, per_component, repo_); }
  nlohmann::json hash(const rootspan_load_options *o, bool per_component, const fs::path &path) {
    char *json = nullptr;
    rootspan_error *raw = nullptr;
    const rootspan_status status = rootspan_checkpoint_hash(path.c_str(), o, per_component ? 1 : 0, &json, &raw);
    EXPECT_EQ(status, ROOTSPAN_OK) << describe(raw);
    rootspan_error_free(raw);
    if (json == nullptr) return nullptr;
    nlohmann::json doc = nlohmann::json::parse(json);
    rootspan_string_free(json);
    return doc;
  }

  static void flip_byte(const fs::path &file, std::uint64_t offset) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 1);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(&c, 1);
  }

  TempDir dir_;
  fs::path repo_, blob_a_, blob_b_;
  WrittenFile a_, b_;
};

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

TEST_F(VerifiedLoadTest, ACacheLoadChecksEveryShardAgainstItsBlobName) {
  ASSERT_EQ(load(options()), ROOTSPAN_OK) << message();
  const nlohmann::json d = digests();
  EXPECT_TRUE(d["checked"].get<bool>());
  ASSERT_EQ(d["verified"].size(), 2u) << d.dump();
  EXPECT_EQ(d["verified"][0]["name"], "a.safetensors");
  EXPECT_EQ(d["verified"][0]["sha256"], sha256_hex(a_.bytes));
  EXPECT_EQ(d["verified"][0]["source"], "cache blob name");
  EXPECT_EQ(d["verified"][1]["bytes"], b_.bytes.size());
  // The index lives in git: named by a git object id, so it cannot be checked, and says so.
  ASSERT_EQ(d["unverifiable"].size(), 1u) << d.dump();
  EXPECT_EQ(d["unverifiable"][0]["file"], "model.safetensors.index.json");
  EXPECT_TRUE(has(d["unverifiable"][0]["reason"], "git object id")) << d.dump();
  // A load not asked to check says so and lists nothing.
  rootspan_load_options plain = options();
  plain.check_digests = 0;
  ASSERT_EQ(load(plain), ROOTSPAN_OK) << message();
  EXPECT_EQ(digests(), nlohmann::json::parse(R"({"checked": false, "verified": [], "unverifiable": []})"));
}

TEST_F(VerifiedLoadTest, AFlippedByteFailsNamingTheFileAndBothDigests) {
  flip_byte(blob_b_, b_.tensors.at("norm").first + 1);
  EXPECT_EQ(load(options()), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(), "file \"b.safetensors\" is not the published one")) << message();
  EXPECT_TRUE(has(message(), "expected " + sha256_hex(b_.bytes))) << message();
  EXPECT_TRUE(has(message(), "(from the cache blob name)")) << message();
  // Every strategy checks the same bytes.
  rootspan_load_options read = options();
  read.strategy = ROOTSPAN_LOAD_READ;
  EXPECT_EQ(load(read), ROOTSPAN_ERR_DIGEST_MISMATCH) << message();
}

TEST_F(VerifiedLoadTest, ABlobSwappedForAnotherOfTheSameSizeFails) {
  // The same header (so the checkpoint still opens), other data bytes.
  std::vector<std::byte> other = a_.bytes;
  for (std::size_t i = a_.data_offset; i < other.size(); ++i) other[i] = static_cast<std::byte>(0x5a);
  {
    std::ofstream f(blob_a_, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char *>(other.data()), static_cast<std::streamsize>(other.size()));
  }
  EXPECT_EQ(load(options()), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(), "file \"a.safetensors\" is not the published one: its SHA-256 is " + sha256_hex(other)))
      << message();
}

TEST_F(VerifiedLoadTest, ATruncatedBlobFailsBeforeAnythingIsLoaded) {
  fs::resize_file(blob_a_, a_.bytes.size() - 3);
  // The format's own rules see it first: the last tensor runs past the end.
  EXPECT_EQ(load(options()), ROOTSPAN_ERR_INVALID_CHECKPOINT) << message();
  EXPECT_TRUE(has(message(), "a.safetensors")) << message();
}

TEST_F(VerifiedLoadTest, OutsideACacheThereIsNothingToCheckAgainst) {
  free_weights();
  const fs::path single = dir_.path() / "single.safetensors";
  fs::copy_file(blob_a_, single);
  rootspan_load_options o = options();
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_weights_load(context_, single.c_str(), &o, &weights_, &raw), ROOTSPAN_ERR_NOT_FOUND);
  const std::string message = rootspan_error_message(raw);
  rootspan_error_free(raw);
  EXPECT_TRUE(has(message, "nothing to check the digests of")) << message;
  EXPECT_TRUE(has(message, "not a blob of a Hugging Face cache")) << message;
  EXPECT_EQ(live_roots(), 0u);
}

TEST_F(VerifiedLoadTest, AManifestChecksWholeFiles) {
  const nlohmann::json manifest = hash(nullptr, false);
  ASSERT_EQ(manifest["files"].size(), 3u) << manifest.dump();  // both shards and the index
  EXPECT_EQ(manifest["files"]["a.safetensors"]["sha256"], sha256_hex(a_.bytes));
  const fs::path path = dir_.write_text("digests.json", manifest.dump());
  rootspan_load_options o = options();
  o.check_digests = 0;  // a manifest implies the check
  o.digests_path = path.c_str();
  ASSERT_EQ(load(o), ROOTSPAN_OK) << message();
  const nlohmann::json d = digests();
  EXPECT_EQ(d["verified"].size(), 3u) << d.dump();
  EXPECT_EQ(d["verified"][0]["name"], "model.safetensors.index.json");
  EXPECT_EQ(d["verified"][1]["source"], "digest manifest");
  // The manifest names a file the checkpoint does not have.
  nlohmann::json extra = manifest;
  extra["files"]["c.safetensors"] = manifest["files"]["a.safetensors"];
  const fs::path extra_path = dir_.write_text("extra.json", extra.dump());
  o.digests_path = extra_path.c_str();
  EXPECT_EQ(load(o), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(), "names file \"c.safetensors\", which checkpoint")) << message();
  // A file the load reads that the manifest does not name.
  nlohmann::json missing = manifest;
  missing["files"].erase("b.safetensors");
  const fs::path missing_path = dir_.write_text("missing.json", missing.dump());
  o.digests_path = missing_path.c_str();
  EXPECT_EQ(load(o), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(), "file \"b.safetensors\" is not named by the digest manifest")) << message();
}

TEST_F(VerifiedLoadTest, ABadManifestIsRefusedNamingWhatIsWrong) {
  rootspan_load_options o = options();
  const fs::path not_json = dir_.write_text("bad.json", "{\"format_version\": 1,");
  o.digests_path = not_json.c_str();
  EXPECT_EQ(load(o), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(message(), "bad.json")) << message();
  EXPECT_TRUE(has(message(), "not valid JSON")) << message();
  const fs::path bad_digest = dir_.write_text(
      "digest.json",
      R"({"format_version": 1, "algorithm": "sha256", "files": {"a.safetensors": {"bytes": 1, "sha256": "XYZ"}}})");
  o.digests_path = bad_digest.c_str();
  EXPECT_EQ(load(o), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(message(), "files[\"a.safetensors\"] needs \"sha256\", 64 lowercase hex digits")) << message();
  const fs::path md5 = dir_.write_text("md5.json", R"({"format_version": 1, "algorithm": "md5", "files": {}})");
  o.digests_path = md5.c_str();
  EXPECT_EQ(load(o), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(message(), "algorithm is \"md5\", expected \"sha256\"")) << message();
  const fs::path absent = dir_.path() / "absent.json";
  o.digests_path = absent.c_str();
  EXPECT_EQ(load(o), ROOTSPAN_ERR_IO);
  EXPECT_TRUE(has(message(), "absent.json")) << message();
}

TEST_F(VerifiedLoadTest, PerComponentDigestsCheckExactlyWhatEachRankReads) {
  const std::vector<rootspan_split_rule> rules = {{sizeof(rootspan_split_rule), "up", 0},
                                                  {sizeof(rootspan_split_rule), "down", 1}};
  rootspan_load_options o = options();
  o.world_size = 2;
  o.split_rules = rules.data();
  o.split_rule_count = rules.size();
  nlohmann::json manifest = hash(&o, true);
  ASSERT_EQ(manifest["components"]["ranks"].size(), 2u) << manifest.dump();
  // Rank 1's half of "up": rows 4..7, one contiguous range of the file.
  const auto &[up_offset, up_length] = a_.tensors.at("up");
  const std::vector<std::byte> up_rows(a_.bytes.begin() + static_cast<std::ptrdiff_t>(up_offset + up_length / 2),
                                       a_.bytes.begin() + static_cast<std::ptrdiff_t>(up_offset + up_length));
  EXPECT_EQ(manifest["components"]["ranks"][1]["up"]["sha256"], sha256_hex(up_rows));
  // Format 2: each rank's slice with its element type and shape, each shard with its header's digest.
  EXPECT_EQ(manifest["format_version"], 2);
  EXPECT_EQ(manifest["components"]["ranks"][1]["up"]["dtype"], "F32");
  EXPECT_EQ(manifest["components"]["ranks"][1]["up"]["shape"], nlohmann::json::parse("[4, 4]"));
  EXPECT_EQ(manifest["components"]["ranks"][0]["down"]["shape"], nlohmann::json::parse("[4, 3]"));
  EXPECT_EQ(manifest["components"]["ranks"][0]["norm"]["shape"], nlohmann::json::parse("[4]"));
  const std::vector<std::byte> a_header(a_.bytes.begin(),
                                        a_.bytes.begin() + static_cast<std::ptrdiff_t>(a_.data_offset));
  EXPECT_EQ(manifest["files"]["a.safetensors"]["header_sha256"], sha256_hex(a_header));
  EXPECT_FALSE(manifest["files"]["model.safetensors.index.json"].contains("header_sha256")) << "the index is no shard";
  // A wrong digest for rank 1's "down" only.
  manifest["components"]["ranks"][1]["down"]["sha256"] = std::string(64, '0');
  const fs::path path = dir_.write_text("ranks.json", manifest.dump());
  o.digests_path = path.c_str();
  o.rank = 0;
  ASSERT_EQ(load(o), ROOTSPAN_OK) << message();
  const nlohmann::json d = digests();
  // The index (its text, hashed as it was read), then one per component: no shard was hashed whole.
  ASSERT_EQ(d["verified"].size(), 5u) << d.dump();
  EXPECT_EQ(d["verified"][0]["name"], "model.safetensors.index.json");
  std::uint64_t bytes = 0, read = 0;
  for (std::size_t i = 1; i < 5; ++i) {
    EXPECT_EQ(d["verified"][i]["kind"], "component") << d.dump();
    bytes += d["verified"][i]["bytes"].get<std::uint64_t>();
  }
  ASSERT_EQ(rootspan_weights_bytes_read(weights_, &read), ROOTSPAN_OK);
  EXPECT_EQ(bytes, read) << "exactly the bytes the rank read were hashed";
  o.rank = 1;
  EXPECT_EQ(load(o), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(), "component \"down\" is not the published one")) << message();
  // Made for another slicing: the load checks whole files instead.
  o.world_size = 3;
  o.rank = 2;
  ASSERT_EQ(load(o), ROOTSPAN_OK) << message();
  EXPECT_EQ(digests()["verified"][1]["kind"], "file");
  EXPECT_EQ(digests()["verified"].size(), 3u);
}

// One safetensors file, model/model.safetensors, as published and as
// rewritten: "w" (F32 [4, 2]) and "x" (F32 [2]), 40 data bytes, metadata
// {"format": "pt"}; and its per-tensor manifest. Every rewrite leaves the
// bytes of "w" as they were, so that its digest alone would still match.
class PerTensorManifestTest : public VerifiedLoadTest {
 protected:
  static std::vector<TensorSpec> tensors() { return {{"w", "F32", {4, 2}}, {"x", "F32", {2}}}; }
  static std::string header(const std::vector<TensorSpec> &t, const std::string &format = "pt") {
    return header_json(t, {{"format", format}});
  }

  // The file from its header (padded with spaces to `length`) and the first `data` of the 40 data bytes.
  void write_model(std::string text, std::size_t data, std::size_t length = 0) {
    while (text.size() < length) text += ' ';
    std::vector<std::byte> bytes;
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::byte>((text.size() >> (8 * i)) & 0xFF));
    for (char c : text) bytes.push_back(static_cast<std::byte>(c));
    for (std::size_t i = 0; i < data; ++i) bytes.push_back(static_cast<std::byte>(i * 7 + 1));
    model_ = dir_.write("model/model.safetensors", bytes);
    header_bytes_.assign(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(8 + text.size()));
    file_bytes_ = bytes.size();
  }

  // Writes the file as published and its per-tensor manifest; options that check a load against it.
  rootspan_load_options published() {
    write_model(header(tensors()), 40);
    manifest_ = hash(nullptr, true, model_.parent_path());
    manifest_path_ = dir_.write_text("per-tensor.json", manifest_.dump());
    published_header_ = sha256_hex(header_bytes_);
    published_bytes_ = file_bytes_;
    rootspan_load_options o = options();
    o.check_digests = 0;
    o.digests_path = manifest_path_.c_str();
    return o;
  }

  rootspan_status load_model(const rootspan_load_options &o) { return load(o, model_.parent_path()); }

  fs::path model_, manifest_path_;
  nlohmann::json manifest_;
  std::vector<std::byte> header_bytes_;
  std::size_t file_bytes_ = 0, published_bytes_ = 0;
  std::string published_header_;
};

TEST_F(PerTensorManifestTest, ThePublishedFileLoadsAndTheManifestBindsTypesShapesAndHeaders) {
  const rootspan_load_options o = published();
  EXPECT_EQ(manifest_["format_version"], 2) << manifest_.dump();
  EXPECT_EQ(manifest_["files"]["model.safetensors"]["header_sha256"], published_header_) << manifest_.dump();
  EXPECT_EQ(manifest_["files"]["model.safetensors"]["bytes"], published_bytes_);
  EXPECT_EQ(manifest_["components"]["ranks"][0]["w"]["dtype"], "F32");
  EXPECT_EQ(manifest_["components"]["ranks"][0]["w"]["shape"], nlohmann::json::parse("[4, 2]"));
  ASSERT_EQ(load_model(o), ROOTSPAN_OK) << message();
  EXPECT_EQ(digests()["verified"].size(), 2u) << digests().dump();
}

TEST_F(PerTensorManifestTest, AChangedDtypeIsRefused) {
  const rootspan_load_options o = published();
  write_model(header({{"w", "I32", {4, 2}}, {"x", "F32", {2}}}), 40);  // the same bytes, read as integers
  EXPECT_EQ(load_model(o), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(), "component \"w\" has element type I32, but the digest manifest published F32"))
      << message();
}

TEST_F(PerTensorManifestTest, AChangedShapeIsRefused) {
  const rootspan_load_options o = published();
  write_model(header({{"w", "F32", {2, 4}}, {"x", "F32", {2}}}), 40);  // the same bytes, transposed
  EXPECT_EQ(load_model(o), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(), "component \"w\" has shape [2, 4], but the digest manifest published [4, 2]"))
      << message();
}

TEST_F(PerTensorManifestTest, ChangedMetadataIsRefused) {
  const rootspan_load_options o = published();
  write_model(header(tensors(), "np"), 40);  // the same length, the same tensors
  EXPECT_EQ(load_model(o), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(),
                  "file \"model.safetensors\" does not have the published header: the SHA-256 of its "
                  "bytes 0 to " +
                      std::to_string(header_bytes_.size())))
      << message();
  EXPECT_TRUE(
      has(message(), "is " + sha256_hex(header_bytes_) + ", but the digest manifest published " + published_header_))
      << message();
  // A manifest of whole files checks the header too, before hashing the file.
  nlohmann::json files = manifest_;
  files.erase("components");
  const fs::path files_path = dir_.write_text("files.json", files.dump());
  rootspan_load_options whole = o;
  whole.digests_path = files_path.c_str();
  EXPECT_EQ(load_model(whole), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(), "does not have the published header")) << message();
}

TEST_F(PerTensorManifestTest, ATensorDroppedAtTheSameSizeIsRefused) {
  const rootspan_load_options o = published();
  // "x" dropped, its 8 bytes given to the header as padding: the file keeps its size and "w" its bytes.
  write_model(header({{"w", "F32", {4, 2}}}), 32, (header_bytes_.size() - 8) + 8);
  ASSERT_EQ(file_bytes_, published_bytes_);
  EXPECT_EQ(load_model(o), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(), "file \"model.safetensors\" does not have the published header")) << message();
  EXPECT_TRUE(has(message(), "but the digest manifest published " + published_header_)) << message();
}

TEST_F(PerTensorManifestTest, AShorterFileIsRefused) {
  const rootspan_load_options o = published();
  write_model(header({{"w", "F32", {4, 2}}}), 32);  // "x" dropped, and its bytes with it
  EXPECT_EQ(load_model(o), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(), "file \"model.safetensors\" is " + std::to_string(file_bytes_) +
                                 " bytes, but the digest manifest published " + std::to_string(published_bytes_)))
      << message();
}

TEST_F(PerTensorManifestTest, EveryFileTheLoadReadsMustBeNamedWithItsHeaderDigest) {
  rootspan_load_options o = published();
  nlohmann::json unnamed = manifest_;
  unnamed["files"].erase("model.safetensors");
  const fs::path unnamed_path = dir_.write_text("unnamed.json", unnamed.dump());
  o.digests_path = unnamed_path.c_str();
  EXPECT_EQ(load_model(o), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(), "file \"model.safetensors\" is not named by the digest manifest")) << message();
  nlohmann::json headless = manifest_;
  headless["files"]["model.safetensors"].erase("header_sha256");
  const fs::path headless_path = dir_.write_text("headless.json", headless.dump());
  o.digests_path = headless_path.c_str();
  EXPECT_EQ(load_model(o), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message(), "gives file \"model.safetensors\" no \"header_sha256\"")) << message();
}

TEST_F(PerTensorManifestTest, AFormatVersion1ManifestIsReadOnlyWithoutComponents) {
  rootspan_load_options o = published();
  nlohmann::json old = manifest_;
  old["format_version"] = 1;
  for (auto &[name, file] : old["files"].items()) file.erase("header_sha256");
  const fs::path with_components = dir_.write_text("v1-components.json", old.dump());
  o.digests_path = with_components.c_str();
  EXPECT_EQ(load_model(o), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(message(), "format_version is 1, whose per-component digests bind neither")) << message();
  EXPECT_TRUE(has(message(), "write the manifest again with `rootspan hash --per-tensor`")) << message();
  old.erase("components");
  const fs::path files_only = dir_.write_text("v1-files.json", old.dump());
  o.digests_path = files_only.c_str();
  EXPECT_EQ(load_model(o), ROOTSPAN_OK) << message();
  EXPECT_EQ(digests()["verified"][0]["kind"], "file");
}

TEST_F(PerTensorManifestTest, TheReaderRefusesWhatTheFormatDoesNotHave) {
  rootspan_load_options o = published();
  const std::string text = manifest_.dump();
  // Each: a manifest's text, and what the refusal says.
  const auto refused = [&](const std::string &name, const std::string &manifest, const std::string &cause) {
    const fs::path path = dir_.write_text(name, manifest);
    o.digests_path = path.c_str();
    EXPECT_EQ(load_model(o), ROOTSPAN_ERR_INVALID_ARGUMENT) << name;
    EXPECT_TRUE(has(message(), "read_digests")) << message();
    EXPECT_TRUE(has(message(), path.string() + "\": " + cause)) << name << ": " << message();
  };
  const auto replaced = [&](const std::string &from, const std::string &to) {
    std::string out = text;
    const std::size_t at = out.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? out : out.replace(at, from.size(), to);
  };
  refused("bom.json", "\xEF\xBB\xBF" + text, "JSON starts with a UTF-8 byte-order mark");
  refused("nul.json", text + std::string(1, '\0'), "NUL byte at offset");
  refused("twice.json", replaced("{\"algorithm\"", "{\"algorithm\":\"sha256\",\"algorithm\""),
          "the document holds \"algorithm\" twice");
  const std::string zeros(64, '0');
  refused("file-twice.json",
          replaced("\"files\":{\"model.safetensors\":", "\"files\":{\"model.safetensors\":{\"bytes\":1,\"sha256\":\"" +
                                                            zeros + "\"},\"model.safetensors\":"),
          "files holds \"model.safetensors\" twice");
  refused(
      "component-twice.json",
      replaced("[{\"w\":", "[{\"x\":{\"bytes\":8,\"dtype\":\"F32\",\"sha256\":\"" + zeros + "\",\"shape\":[2]},\"w\":"),
      "components.ranks[0] holds \"x\" twice");
  refused("unknown.json", replaced("{\"algorithm\"", "{\"signed_by\":\"me\",\"algorithm\""),
          "the document has a member \"signed_by\", which a digest manifest does not have there");
  refused("unknown-entry.json", replaced("\"bytes\":32,", "\"bytes\":32,\"offset\":0,"),
          "components.ranks[0][\"w\"] has a member \"offset\"");
  refused("negative.json", replaced("\"bytes\":32,", "\"bytes\":-32,"),
          "components.ranks[0][\"w\"] needs \"bytes\", a count of bytes, not a negative number");
  refused("dtype.json", replaced("\"dtype\":\"F32\"", "\"dtype\":\"float\""),
          "components.ranks[0][\"w\"] needs \"dtype\", an element type name");
  refused("no-dtype.json", replaced("\"dtype\":\"F32\",", ""),
          "components.ranks[0][\"w\"] has no \"dtype\": format_version 2 gives each component its");
  refused("rank.json", replaced("\"shape\":[4,2]", "\"shape\":[" + std::string(64, '1') + "]"),
          "components.ranks[0][\"w\"].shape holds a number with a fraction or an exponent (or past 2^64), not a "
          "dimension");
  std::string deep = "[";
  for (int i = 0; i < 64; ++i) deep += "1,";
  refused("rank64.json", replaced("\"shape\":[4,2]", "\"shape\":" + deep + "1]"),
          "components.ranks[0][\"w\"].shape has more than 64 dimensions");
  refused("ranks.json", replaced("\"ranks\":[", "\"ranks\":[{},"),
          "components.ranks holds 2 ranks, expected one per rank of world_size 1");
  refused("version.json", replaced("\"format_version\":2", "\"format_version\":3"),
          "format_version is 3, expected 2 (or 1, for a manifest without per-component digests)");
  refused("trailing.json", text + " {}", "not valid JSON");
  // Bounded before a byte is read: a file past the limit is refused by its size.
  const fs::path huge = dir_.write_text("huge.json", "");
  fs::resize_file(huge, (std::uint64_t{512} << 20) + 1);
  o.digests_path = huge.c_str();
  EXPECT_EQ(load_model(o), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(message(), "more than the limit of " + std::to_string(std::uint64_t{512} << 20))) << message();
}

TEST_F(VerifiedLoadTest, TheProgressCallbackCountsHashingAndCanCancelIt) {
  struct Seen {
    std::uint64_t last_total = 0;
    std::uint64_t last_done = 0;
    int calls = 0;
  } seen;
  rootspan_load_options o = options();
  o.progress_context = &seen;
  o.progress = [](void *context, const rootspan_load_progress *p) {
    auto &s = *static_cast<Seen *>(context);
    s.last_total = p->bytes_total;
    s.last_done = p->bytes_done;
    ++s.calls;
    return 0;
  };
  ASSERT_EQ(load(o), ROOTSPAN_OK) << message();
  const std::uint64_t tensors = (8 * 4 + 4 + 4 * 6 + 4) * 4;
  EXPECT_EQ(seen.last_total, tensors + a_.bytes.size() + b_.bytes.size()) << "the loaded bytes and the hashed ones";
  EXPECT_EQ(seen.last_done, seen.last_total) << "the last report says all is done";
  o.progress = [](void *, const rootspan_load_progress *) { return 1; };
  EXPECT_EQ(load(o), ROOTSPAN_ERR_CANCELLED);
  EXPECT_TRUE(has(message(), "cancelled")) << message();
}

// The SHA-256 of component `id` as it lies in the memory handed out.
std::string component_sha256(rootspan_weights *weights, const char *id) {
  std::size_t index = 0;
  EXPECT_EQ(rootspan_weights_find(weights, id, &index), ROOTSPAN_OK);
  char hex[65] = {};
  EXPECT_EQ(rootspan_weights_component_sha256(weights, index, hex, nullptr), ROOTSPAN_OK);
  return hex;
}

void write_at(const fs::path &file, std::uint64_t offset, const std::vector<std::byte> &bytes) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

TEST_F(VerifiedLoadTest, AVerifiedLoadCopiesWhatItHashedAndNeverMapsTheFile) {
  // mmap asked for, as auto would choose on a local disk: a verified load
  // copies instead, says why, and a later write to the file changes nothing.
  rootspan_load_options o = options();
  o.strategy = ROOTSPAN_LOAD_MMAP;
  ASSERT_EQ(load(o), ROOTSPAN_OK) << message();
  for (std::size_t i = 0; i < 4; ++i) {
    rootspan_component_info info{};
    info.struct_size = sizeof info;
    ASSERT_EQ(rootspan_weights_component(weights_, i, &info), ROOTSPAN_OK);
    EXPECT_EQ(info.zero_copy, 0) << "component " << i << " is a mapping of a file that can still change";
  }
  char *report = nullptr;
  ASSERT_EQ(rootspan_weights_read_report(weights_, &report, nullptr), ROOTSPAN_OK);
  const nlohmann::json r = nlohmann::json::parse(report);
  rootspan_string_free(report);
  EXPECT_EQ(r["strategy"], "read") << r.dump();
  EXPECT_TRUE(has(r["reason"], "a verified load copies what it hashes")) << r.dump();
  const std::string before = component_sha256(weights_, "norm");
  EXPECT_EQ(before, sha256_hex(b_.tensor("norm")));
  std::vector<std::byte> changed = b_.tensor("norm");
  for (std::byte &b : changed) b = ~b;
  write_at(blob_b_, b_.tensors.at("norm").first, changed);
  EXPECT_EQ(component_sha256(weights_, "norm"), before) << "a write to the file reached verified memory";
  EXPECT_TRUE(digests()["checked"].get<bool>());
}

TEST_F(VerifiedLoadTest, AWriterFlippingBytesDuringLoadsNeverGetsThemAcceptedAsVerified) {
  // Each load either fails with a digest mismatch or hands out exactly the
  // published bytes: never a byte the writer put there, whatever the timing.
  const std::uint64_t at = b_.tensors.at("down").first;
  const std::vector<std::byte> published = b_.tensor("down");
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    std::vector<std::byte> flipped = published;
    for (std::byte &b : flipped) b = ~b;
    while (!stop) {
      write_at(blob_b_, at, flipped);
      write_at(blob_b_, at, published);
    }
  });
  int verified = 0, refused = 0;
  for (int i = 0; i < 150; ++i) {
    rootspan_load_options o = options();
    o.strategy = (i % 3 == 0) ? ROOTSPAN_LOAD_MMAP : (i % 3 == 1 ? ROOTSPAN_LOAD_READ : ROOTSPAN_LOAD_DIRECT);
    const rootspan_status status = load(o);
    if (status == ROOTSPAN_OK) {
      ++verified;
      EXPECT_EQ(component_sha256(weights_, "down"), sha256_hex(published))
          << "load " << i << " verified bytes that were not hashed";
    } else {
      ++refused;
      EXPECT_EQ(status, ROOTSPAN_ERR_DIGEST_MISMATCH) << message();
    }
  }
  stop = true;
  writer.join();
  std::printf("verified %d, refused %d of 150 loads under a concurrent writer\n", verified, refused);
}

TEST_F(VerifiedLoadTest, HashRefusesNullsAndABadStructSize) {
  char *json = nullptr;
  EXPECT_EQ(rootspan_checkpoint_hash(nullptr, nullptr, 0, &json, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rootspan_checkpoint_hash(repo_.c_str(), nullptr, 0, nullptr, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
  rootspan_load_options o{};
  o.struct_size = 3;
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_checkpoint_hash(repo_.c_str(), &o, 0, &json, &raw), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(rootspan_error_message(raw), "hash_checkpoint")) << rootspan_error_message(raw);
  rootspan_error_free(raw);
  EXPECT_EQ(json, nullptr);
  EXPECT_EQ(rootspan_weights_digests(nullptr, &json, nullptr), ROOTSPAN_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace rootspan::testing
