// Verified loads through weights.h (check_digests, digests_path,
// rootspan_weights_digests, rootspan_checkpoint_hash), as an attacker who can
// damage or swap a file would try them: a Hugging Face cache built here, its
// blobs named by their SHA-256, with a flipped byte, a blob swapped for
// another of the same size, a truncated blob; digest manifests with a wrong
// per-component digest for one rank only, naming a file that is not there,
// and not JSON. Each failure has the right code, names the file or
// component, and leaves no root; the progress callback still cancels.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/c_api_support.hpp"  // rootspan_context -> Context, for live_roots()
#include "materialize_support.hpp"

namespace mtest {
namespace {

constexpr const char *kCommit = "0123456789abcdef0123456789abcdef01234567";

class VerifiedLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rootspan_error *raw = nullptr;
    ASSERT_EQ(rootspan_context_create(nullptr, &context_, &raw), ROOTSPAN_OK) << describe(raw);
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

  void TearDown() override {
    free_weights();
    std::uint64_t live = 0;
    EXPECT_EQ(rootspan_context_destroy(context_, &live), ROOTSPAN_OK);
    EXPECT_EQ(live, 0u) << "roots were left live at the end of the test";
  }

  fs::path place_blob(const fs::path &from, const std::string &blob, const std::string &name) {
    const fs::path to = repo_ / "blobs" / blob;
    fs::rename(from, to);
    fs::create_symlink(fs::path("../../blobs") / blob, repo_ / "snapshots" / kCommit / name);
    return to;
  }

  void free_weights() {
    if (weights_ != nullptr) {
      EXPECT_EQ(rootspan_weights_free(weights_, nullptr), ROOTSPAN_OK);
    }
    weights_ = nullptr;
  }

  static rootspan_load_options options() {
    rootspan_load_options o{};
    o.struct_size = sizeof o;
    o.provider = "host";
    o.check_digests = 1;
    return o;
  }

  rootspan_status load(const rootspan_load_options &o) {
    free_weights();
    rootspan_error *raw = nullptr;
    const rootspan_status status = rootspan_weights_load(context_, repo_.c_str(), &o, &weights_, &raw);
    message_ = raw != nullptr ? rootspan_error_message(raw) : "";
    rootspan_error_free(raw);
    if (status != ROOTSPAN_OK) {
      EXPECT_EQ(weights_, nullptr) << "weights set on failure";
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

  // `rootspan hash` of the repository.
  nlohmann::json hash(const rootspan_load_options *o, bool per_component) {
    char *json = nullptr;
    rootspan_error *raw = nullptr;
    const rootspan_status status = rootspan_checkpoint_hash(repo_.c_str(), o, per_component ? 1 : 0, &json, &raw);
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

  std::size_t live_roots() const { return context_->context->live_roots(); }

  TempDir dir_;
  fs::path repo_, blob_a_, blob_b_;
  WrittenFile a_, b_;
  rootspan_context *context_ = nullptr;
  rootspan_weights *weights_ = nullptr;
  std::string message_;
};

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

TEST_F(VerifiedLoadTest, ACacheLoadChecksEveryShardAgainstItsBlobName) {
  ASSERT_EQ(load(options()), ROOTSPAN_OK) << message_;
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
  ASSERT_EQ(load(plain), ROOTSPAN_OK) << message_;
  EXPECT_EQ(digests(), nlohmann::json::parse(R"({"checked": false, "verified": [], "unverifiable": []})"));
}

TEST_F(VerifiedLoadTest, AFlippedByteFailsNamingTheFileAndBothDigests) {
  flip_byte(blob_b_, b_.tensors.at("norm").first + 1);
  EXPECT_EQ(load(options()), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message_, "file \"b.safetensors\" is not the published one")) << message_;
  EXPECT_TRUE(has(message_, "expected " + sha256_hex(b_.bytes))) << message_;
  EXPECT_TRUE(has(message_, "(from the cache blob name)")) << message_;
  // Every strategy checks the same bytes.
  rootspan_load_options read = options();
  read.strategy = ROOTSPAN_LOAD_READ;
  EXPECT_EQ(load(read), ROOTSPAN_ERR_DIGEST_MISMATCH) << message_;
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
  EXPECT_TRUE(has(message_, "file \"a.safetensors\" is not the published one: its SHA-256 is " + sha256_hex(other)))
      << message_;
}

TEST_F(VerifiedLoadTest, ATruncatedBlobFailsBeforeAnythingIsLoaded) {
  fs::resize_file(blob_a_, a_.bytes.size() - 3);
  // The format's own rules see it first: the last tensor runs past the end.
  EXPECT_EQ(load(options()), ROOTSPAN_ERR_INVALID_CHECKPOINT) << message_;
  EXPECT_TRUE(has(message_, "a.safetensors")) << message_;
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
  ASSERT_EQ(load(o), ROOTSPAN_OK) << message_;
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
  EXPECT_TRUE(has(message_, "names file \"c.safetensors\", which checkpoint")) << message_;
  // A file the load reads that the manifest does not name.
  nlohmann::json missing = manifest;
  missing["files"].erase("b.safetensors");
  const fs::path missing_path = dir_.write_text("missing.json", missing.dump());
  o.digests_path = missing_path.c_str();
  EXPECT_EQ(load(o), ROOTSPAN_ERR_DIGEST_MISMATCH);
  EXPECT_TRUE(has(message_, "file \"b.safetensors\" is not named by the digest manifest")) << message_;
}

TEST_F(VerifiedLoadTest, ABadManifestIsRefusedNamingWhatIsWrong) {
  rootspan_load_options o = options();
  const fs::path not_json = dir_.write_text("bad.json", "{\"format_version\": 1,");
  o.digests_path = not_json.c_str();
  EXPECT_EQ(load(o), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(message_, "bad.json")) << message_;
  EXPECT_TRUE(has(message_, "not valid JSON")) << message_;
  const fs::path bad_digest = dir_.write_text(
      "digest.json",
      R"({"format_version": 1, "algorithm": "sha256", "files": {"a.safetensors": {"bytes": 1, "sha256": "XYZ"}}})");
  o.digests_path = bad_digest.c_str();
  EXPECT_EQ(load(o), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(message_, "files[\"a.safetensors\"] needs \"sha256\", 64 lowercase hex digits")) << message_;
  const fs::path md5 = dir_.write_text("md5.json", R"({"format_version": 1, "algorithm": "md5", "files": {}})");
  o.digests_path = md5.c_str();
  EXPECT_EQ(load(o), ROOTSPAN_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(message_, "algorithm is \"md5\", expected \"sha256\"")) << message_;
  const fs::path absent = dir_.path() / "absent.json";
  o.digests_path = absent.c_str();
  EXPECT_EQ(load(o), ROOTSPAN_ERR_IO);
  EXPECT_TRUE(has(message_, "absent.json")) << message_;
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
  // A wrong digest for rank 1's "down" only.
  manifest["components"]["ranks"][1]["down"]["sha256"] = std::string(64, '0');
  const fs::path path = dir_.write_text("ranks.json", manifest.dump());
  o.digests_path = path.c_str();
  o.rank = 0;
  ASSERT_EQ(load(o), ROOTSPAN_OK) << message_;
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
  EXPECT_TRUE(has(message_, "component \"down\" is not the published one")) << message_;
  // Made for another slicing: the load checks whole files instead.
  o.world_size = 3;
  o.rank = 2;
  ASSERT_EQ(load(o), ROOTSPAN_OK) << message_;
  EXPECT_EQ(digests()["verified"][1]["kind"], "file");
  EXPECT_EQ(digests()["verified"].size(), 3u);
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
  ASSERT_EQ(load(o), ROOTSPAN_OK) << message_;
  const std::uint64_t tensors = (8 * 4 + 4 + 4 * 6 + 4) * 4;
  EXPECT_EQ(seen.last_total, tensors + a_.bytes.size() + b_.bytes.size()) << "the loaded bytes and the hashed ones";
  EXPECT_EQ(seen.last_done, seen.last_total) << "the last report says all is done";
  o.progress = [](void *, const rootspan_load_progress *) { return 1; };
  EXPECT_EQ(load(o), ROOTSPAN_ERR_CANCELLED);
  EXPECT_TRUE(has(message_, "cancelled")) << message_;
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
  ASSERT_EQ(load(o), ROOTSPAN_OK) << message_;
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
      EXPECT_EQ(status, ROOTSPAN_ERR_DIGEST_MISMATCH) << message_;
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
}  // namespace mtest
