// docs/weight-schema.md, where users keep checkpoints: a file, a folder, the index file
// itself, a Hugging Face cache repository (refs/main or a revision), and the
// trusted folders a shard's real path may lie in. Every layout is built with
// real symbolic links, the hostile ones included: links into a sibling
// repository, to /etc/passwd, chains, links to folders, FIFOs and loops.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "test_support.hpp"
#include "weights/checkpoints/checkpoint.hpp"
#include "weights/checkpoints/hf_cache.hpp"

namespace rootspan::weights {
namespace {

using testing::FailsWith;
using testing::safetensors_file;
using testing::TempDir;
using testing::TensorSpec;
namespace fs = std::filesystem;

const std::vector<TensorSpec> kShard1 = {{"embed", "F32", {4, 2}}, {"layer.0", "F16", {3}}};
const std::vector<TensorSpec> kShard2 = {{"layer.1", "F16", {3}}, {"head", "BF16", {2, 2}}};
const std::vector<TensorSpec> kSingle = {{"only", "F32", {2}}};
constexpr const char *kFile1 = "model-00001-of-00002.safetensors";
constexpr const char *kFile2 = "model-00002-of-00002.safetensors";
constexpr const char *kCommit = "0123456789abcdef0123456789abcdef01234567";
constexpr const char *kOtherCommit = "fedcba9876543210fedcba9876543210fedcba98";

std::string index_for(const std::string &file1, const std::string &file2) {
  nlohmann::json map = {{"embed", file1}, {"layer.0", file1}, {"layer.1", file2}, {"head", file2}};
  return nlohmann::json{{"metadata", {{"total_size", 52}}}, {"weight_map", map}}.dump();
}

// A Hugging Face cache repository `models--org--name` in `dir` as a download
// leaves it: blobs named by hash, refs/main naming the commit, and a
// snapshot folder whose every file is a relative link into ../../blobs/.
struct CacheRepository {
  fs::path repo;
  fs::path snapshot;

  CacheRepository(const TempDir &dir, const std::string &name = "models--org--name") {
    repo = dir.path() / name;
    dir.write(name + "/blobs/aaa1", safetensors_file(kShard1));
    dir.write(name + "/blobs/bbb2", safetensors_file(kShard2));
    dir.write_text(name + "/blobs/ccc3", index_for(kFile1, kFile2));
    dir.write_text(name + "/refs/main", std::string(kCommit) + "\n");
    snapshot = repo / "snapshots" / kCommit;
    fs::create_directories(snapshot);
    link("model.safetensors.index.json", "ccc3");
    link(kFile1, "aaa1");
    link(kFile2, "bbb2");
  }

  // snapshot/name -> ../../blobs/blob
  void link(const std::string &name, const std::string &blob) const {
    fs::remove(snapshot / name);
    fs::create_symlink(fs::path("../../blobs") / blob, snapshot / name);
  }
};

fs::path real(const fs::path &path) { return fs::canonical(path); }

// ---- the Hugging Face cache -------------------------------------------------

TEST(CheckpointLocation, ASnapshotFolderOfLinksIntoBlobsOpens) {
  TempDir dir;
  const CacheRepository cache(dir);
  auto checkpoint = Checkpoint::open(cache.snapshot);
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  const Checkpoint &ckpt = checkpoint.value();
  EXPECT_TRUE(ckpt.sharded());
  ASSERT_EQ(ckpt.shards().size(), 2u);
  EXPECT_EQ(ckpt.shards()[0].file, kFile1);
  EXPECT_EQ(ckpt.shards()[0].path, real(cache.repo / "blobs/aaa1"));
  EXPECT_EQ(ckpt.shards()[1].path, real(cache.repo / "blobs/bbb2"));
  // The named folder, and the folder that really holds the index: blobs/.
  EXPECT_EQ(ckpt.trusted_folders(), (std::vector<fs::path>{real(cache.snapshot), real(cache.repo / "blobs")}));
}

TEST(CheckpointLocation, TheRepositoryFolderOpensTheSnapshotRefsMainNames) {
  TempDir dir;
  const CacheRepository cache(dir);
  EXPECT_TRUE(is_cache_repository(cache.repo));
  EXPECT_FALSE(is_cache_repository(cache.snapshot));
  auto checkpoint = Checkpoint::open(cache.repo);
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  EXPECT_EQ(checkpoint.value().folder(), cache.repo / "snapshots" / kCommit);
  EXPECT_TRUE(checkpoint.value().find("head"));
  // The repository the user named is trusted as a whole.
  EXPECT_EQ(checkpoint.value().trusted_folders().front(), real(cache.repo));
}

TEST(CheckpointLocation, ARevisionPicksABranchOrACommit) {
  TempDir dir;
  const CacheRepository cache(dir);
  // A second revision: one file, a link into blobs/ too (no index).
  dir.write("models--org--name/blobs/ddd4", safetensors_file(kSingle));
  const fs::path other = cache.repo / "snapshots" / kOtherCommit;
  fs::create_directories(other);
  fs::create_symlink("../../blobs/ddd4", other / "model.safetensors");
  dir.write_text("models--org--name/refs/v2", kOtherCommit);

  for (const char *revision : {kOtherCommit, "v2"}) {
    auto checkpoint = Checkpoint::open(cache.repo, std::string(revision));
    ASSERT_TRUE(checkpoint) << revision << ": " << checkpoint.error()->message();
    EXPECT_FALSE(checkpoint.value().sharded());
    EXPECT_TRUE(checkpoint.value().find("only")) << revision;
    EXPECT_EQ(checkpoint.value().shards()[0].file, "model.safetensors");
  }
  auto main = Checkpoint::open(cache.repo, std::string("main"));
  ASSERT_TRUE(main) << main.error()->message();
  EXPECT_TRUE(main.value().find("embed"));
}

TEST(CheckpointLocation, BrokenRefsAndRevisionsAreRefusedListingTheSnapshots) {
  TempDir dir;
  const CacheRepository cache(dir);
  const std::string listed = std::string("snapshots: \"") + kCommit + "\"";

  // refs/main naming a snapshot that is not there.
  const std::string missing(40, 'f');
  dir.write_text("models--org--name/refs/main", missing + "\n");
  EXPECT_TRUE(FailsWith(Checkpoint::open(cache.repo), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"models--org--name", "refs/main names commit \"" + missing + "\"",
                         "no snapshot folder snapshots/" + missing, listed, "pass a revision"}));
  // refs/main that tries to leave snapshots/, or holds any text but a commit
  // hash: refused, and its text never echoed (it may be a secret's).
  for (const std::string text : {"../../../etc\n", "ffff\n", "root:x:0:0:secret\n"}) {
    dir.write_text("models--org--name/refs/main", text);
    auto opened = Checkpoint::open(cache.repo);
    EXPECT_TRUE(FailsWith(opened, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                          {"refs/main does not hold a commit hash (40 lowercase hex digits", "not shown", listed}));
    const std::string shown = text.substr(0, text.size() - 1);  // the text without its newline
    if (!opened) {
      EXPECT_EQ(opened.error()->message().find(shown), std::string::npos) << text;
    }
  }
  // refs/main a link to a file outside the repository: never read.
  const fs::path secret = dir.write_text("secret-token", std::string(40, 'a'));
  fs::remove(cache.repo / "refs/main");
  fs::create_symlink(secret, cache.repo / "refs/main");
  EXPECT_TRUE(FailsWith(Checkpoint::open(cache.repo), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"refs/main", "leads out of"}));
  // No refs/main at all.
  fs::remove(cache.repo / "refs/main");
  EXPECT_TRUE(FailsWith(Checkpoint::open(cache.repo), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"without refs/main", "pass a revision naming one of its snapshots", kCommit}));
  // ... but a revision naming the commit still works.
  EXPECT_TRUE(Checkpoint::open(cache.repo, std::string(kCommit)));

  // Revisions that are not one plain name.
  for (const auto &[revision, rule] : std::vector<std::pair<std::string, std::string>>{{"../x", "'..'"},
                                                                                       {"..", "'..'"},
                                                                                       {"a/b", "contains '/'"},
                                                                                       {"refs/main", "contains '/'"},
                                                                                       {"pr/x", "contains '/'"},
                                                                                       {"refs\\main", "contains '\\'"},
                                                                                       {"", "it is empty"},
                                                                                       {".", "it is '.'"},
                                                                                       {"a\nb", "control character"}}) {
    EXPECT_TRUE(FailsWith(Checkpoint::open(cache.repo, revision), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                          {"revision", "is not a single branch, tag or commit name", rule, listed}))
        << revision;
  }
  // A pull request's ref, as the hub names it and as the cache stores it.
  const std::string pr_commit(40, 'b');
  fs::create_directories(cache.repo / "snapshots" / pr_commit);
  fs::create_symlink(fs::path("../../blobs/aaa1"), cache.repo / "snapshots" / pr_commit / kFile1);
  fs::create_symlink(fs::path("../../blobs/bbb2"), cache.repo / "snapshots" / pr_commit / kFile2);
  fs::copy_file(cache.snapshot / "model.safetensors.index.json",
                cache.repo / "snapshots" / pr_commit / "model.safetensors.index.json");
  dir.write_text("models--org--name/refs/pr/7", pr_commit);
  for (const std::string revision : {"refs/pr/7", "pr/7"}) {
    auto opened = Checkpoint::open(cache.repo, revision);
    ASSERT_TRUE(opened) << revision << ": " << opened.error()->message();
    EXPECT_EQ(opened.value().folder().filename(), pr_commit) << revision;
  }
  EXPECT_TRUE(FailsWith(Checkpoint::open(cache.repo, std::string("refs/pr/8")), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"there is no refs/pr/8", "never downloaded"}));
  // A revision that names neither a ref nor a snapshot.
  EXPECT_TRUE(FailsWith(Checkpoint::open(cache.repo, std::string("v9")), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"revision \"v9\" names no ref in refs/", "no snapshot folder snapshots/v9", listed}));
  // A revision for something that is not a cache repository.
  EXPECT_TRUE(FailsWith(Checkpoint::open(cache.snapshot, std::string("main")), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"revision \"main\" applies only to a Hugging Face cache repository folder"}));
  EXPECT_TRUE(FailsWith(Checkpoint::open(cache.repo / "blobs/aaa1", std::string("main")),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"applies only to a Hugging Face cache repository"}));
}

TEST(CheckpointLocation, ADanglingIndexLinkIsReportedAsTheIndex) {
  TempDir dir;
  const CacheRepository cache(dir);
  fs::remove(cache.repo / "blobs/ccc3");  // a download cut short
  EXPECT_TRUE(FailsWith(Checkpoint::open(cache.repo), ROOTSPAN_ERR_IO,
                        {"model.safetensors.index.json", "cannot open", "No such file"}));
}

TEST(CheckpointLocation, ARepositoryWithoutSnapshotsSaysSo) {
  TempDir dir;
  fs::create_directories(dir.path() / "models--a--b/snapshots");
  fs::create_directories(dir.path() / "models--a--b/blobs");
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path() / "models--a--b"), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"without refs/main", "snapshots: none"}));
}

// ---- the index file itself ---------------------------------------------------

TEST(CheckpointLocation, TheIndexFileItselfOpensItsFolder) {
  TempDir dir;
  dir.write(kFile1, safetensors_file(kShard1));
  dir.write(kFile2, safetensors_file(kShard2));
  const fs::path index = dir.write_text("model.safetensors.index.json", index_for(kFile1, kFile2));
  auto checkpoint = Checkpoint::open(index);
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  EXPECT_TRUE(checkpoint.value().sharded());
  EXPECT_EQ(checkpoint.value().folder(), dir.path());
  EXPECT_EQ(checkpoint.value().tensor_names().size(), 4u);

  // Any "*.index.json" name is an index (diffusers names them so).
  fs::copy_file(index, dir.path() / "diffusion_pytorch_model.safetensors.index.json");
  EXPECT_TRUE(Checkpoint::open(dir.path() / "diffusion_pytorch_model.safetensors.index.json"));

  // In a cache snapshot, the index is a link into blobs/.
  const CacheRepository cache(dir);
  auto linked = Checkpoint::open(cache.snapshot / "model.safetensors.index.json");
  ASSERT_TRUE(linked) << linked.error()->message();
  EXPECT_EQ(linked.value().folder(), cache.snapshot);
  EXPECT_EQ(linked.value().shards()[1].path, real(cache.repo / "blobs/bbb2"));
}

TEST(CheckpointLocation, FilesTheIndexDoesNotNameAreIgnored) {
  TempDir dir;
  dir.write(kFile1, safetensors_file(kShard1));
  dir.write(kFile2, safetensors_file(kShard2));
  dir.write_text("model.safetensors.index.json", index_for(kFile1, kFile2));
  // Mistral ships its weights twice: shards with an index, and one file.
  dir.write("consolidated.safetensors", safetensors_file(kShard1));
  dir.write_text("consolidated.broken.safetensors", "not even a header");
  auto checkpoint = Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  ASSERT_EQ(checkpoint.value().shards().size(), 2u);
  EXPECT_EQ(checkpoint.value().shards()[0].file, kFile1);
}

TEST(CheckpointLocation, AnIndexWhereAShardBelongsSaysItIsJson) {
  TempDir dir;
  dir.write(kFile1, safetensors_file(kShard1));
  const std::string index = index_for(kFile1, "model.safetensors.index.json");
  dir.write_text("model.safetensors.index.json", index);
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"model.safetensors.index.json\": looks like a JSON file, not a safetensors file",
                         "exceeds the limit", "pass the index file itself, or the folder that holds it"}));
  // An index under a name that does not say so, given as the checkpoint.
  const fs::path named_oddly = dir.write_text("weights.json", "\n  " + index);
  EXPECT_TRUE(FailsWith(Checkpoint::open(named_oddly), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"weights.json\": looks like a JSON file", "header length"}));
  // A short JSON file is refused for being short, and still called JSON.
  const fs::path tiny = dir.write_text("tiny.safetensors", "{}");
  EXPECT_TRUE(FailsWith(Checkpoint::open(tiny), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"shorter than the 8-byte"}));
  const fs::path array = dir.write_text("array.safetensors", "[1, 2, 3, 4, 5, 6]");
  EXPECT_TRUE(FailsWith(Checkpoint::open(array), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"looks like a JSON file"}));
}

// ---- hostile layouts -----------------------------------------------------------

TEST(CheckpointLocation, ALinkIntoASiblingRepositorysBlobsIsRefused) {
  TempDir dir;
  const CacheRepository cache(dir);
  const CacheRepository other(dir, "models--other--repo");
  // A shard link that climbs into the other repository.
  fs::remove(cache.snapshot / kFile2);
  fs::create_symlink("../../../models--other--repo/blobs/bbb2", cache.snapshot / kFile2);
  const std::string file = "file name \"" + std::string(kFile2) + "\"";
  const std::string target = "to \"" + real(other.repo / "blobs/bbb2").string() + "\"";
  // Named by its snapshot: the snapshot and the index's blobs/ are trusted.
  EXPECT_TRUE(FailsWith(Checkpoint::open(cache.snapshot), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"model.safetensors.index.json", file, target,
                         "leads out of the checkpoint's trusted folders (\"" + real(cache.snapshot).string() +
                             "\", \"" + real(cache.repo / "blobs").string() + "\")",
                         "copy the file into", "or pass the folder that really holds the checkpoint's files"}));
  // Named by the repository: the repository is, and holds both.
  EXPECT_TRUE(FailsWith(
      Checkpoint::open(cache.repo), ROOTSPAN_ERR_INVALID_CHECKPOINT,
      {file, target, "leads out of the checkpoint's trusted folders (\"" + real(cache.repo).string() + "\")"}));
}

TEST(CheckpointLocation, ALinkToEtcPasswdIsRefused) {
  if (!fs::exists("/etc/passwd")) GTEST_SKIP() << "no /etc/passwd";
  TempDir dir;
  const CacheRepository cache(dir);
  fs::remove(cache.snapshot / kFile1);
  fs::create_symlink("/etc/passwd", cache.snapshot / kFile1);
  EXPECT_TRUE(FailsWith(Checkpoint::open(cache.repo), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {kFile1, "leads out", "to \"" + real("/etc/passwd").string() + "\"", "trusted folders"}));
  // Also as a relative link climbing out, and through a linked folder.
  fs::remove(cache.snapshot / kFile1);
  std::string climb;
  for (std::size_t depth = std::distance(cache.snapshot.begin(), cache.snapshot.end()); depth > 0; --depth) {
    climb += "../";
  }
  fs::create_symlink(climb + "etc/passwd", cache.snapshot / kFile1);
  EXPECT_TRUE(FailsWith(Checkpoint::open(cache.snapshot), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"leads out", "passwd"}));
}

TEST(CheckpointLocation, ChainsOfLinksAreJudgedByWhereTheyEnd) {
  TempDir dir;
  const CacheRepository cache(dir);
  TempDir outside;
  // link -> link -> blob, all inside the trusted folders: fine.
  fs::create_symlink("../../blobs/aaa1", cache.snapshot / "hop.safetensors");
  fs::remove(cache.snapshot / kFile1);
  fs::create_symlink("hop.safetensors", cache.snapshot / kFile1);
  auto inside = Checkpoint::open(cache.repo);
  ASSERT_TRUE(inside) << inside.error()->message();
  EXPECT_EQ(inside.value().shards()[0].path, real(cache.repo / "blobs/aaa1"));

  // A chain through a folder outside that ends on a trusted blob: what is
  // read lies inside, so it is fine too.
  fs::create_symlink(real(cache.repo / "blobs/aaa1"), outside.path() / "detour");
  fs::remove(cache.snapshot / "hop.safetensors");
  fs::create_symlink(outside.path() / "detour", cache.snapshot / "hop.safetensors");
  auto detour = Checkpoint::open(cache.repo);
  EXPECT_TRUE(detour) << (detour ? "" : detour.error()->cause);

  // link -> link -> a file outside: refused, naming where it ends.
  const fs::path secret = outside.write("secret.safetensors", safetensors_file(kShard1));
  fs::remove(outside.path() / "detour");
  fs::create_symlink(secret, outside.path() / "detour");
  EXPECT_TRUE(FailsWith(Checkpoint::open(cache.repo), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"file name \"" + std::string(kFile1) + "\"", "to \"" + real(secret).string() + "\""}));

  // A loop of links: refused, not followed forever.
  fs::remove(cache.snapshot / "hop.safetensors");
  fs::create_symlink(kFile1, cache.snapshot / "hop.safetensors");
  EXPECT_TRUE(FailsWith(Checkpoint::open(cache.repo), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"file name \"" + std::string(kFile1) + "\" cannot be resolved", "symbolic link"}));
}

TEST(CheckpointLocation, ALinkToAFolderIsRefused) {
  TempDir dir;
  const CacheRepository cache(dir);
  // To a folder inside the trusted folders: not a regular file.
  fs::create_directories(cache.repo / "blobs/folder");
  fs::remove(cache.snapshot / kFile1);
  fs::create_symlink("../../blobs/folder", cache.snapshot / kFile1);
  EXPECT_TRUE(FailsWith(Checkpoint::open(cache.repo), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"shard \"" + std::string(kFile1) + "\": \"" + real(cache.repo / "blobs/folder").string() +
                         "\": not a regular file (it is a folder)"}));
  // To a folder outside: it leads out.
  TempDir outside;
  fs::remove(cache.snapshot / kFile1);
  fs::create_directory_symlink(outside.path(), cache.snapshot / kFile1);
  EXPECT_TRUE(FailsWith(Checkpoint::open(cache.repo), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"leads out of the checkpoint's trusted folders", real(outside.path()).string()}));
}

TEST(CheckpointLocation, AnIndexBehindAMemfdIsRefusedAndTrustsNothing) {
  // The index a link to /proc/self/fd/N of a memfd: its real path reads back
  // as "/memfd:index (deleted)", whose folder "/" would trust every shard link.
  TempDir dir;
  const std::string index = index_for(kFile1, kFile2);
  const int memfd = ::memfd_create("index", 0);
  ASSERT_GE(memfd, 0);
  ASSERT_EQ(::write(memfd, index.data(), index.size()), static_cast<ssize_t>(index.size()));
  fs::create_symlink("/proc/self/fd/" + std::to_string(memfd), dir.path() / "model.safetensors.index.json");
  fs::create_symlink("/etc/passwd", dir.path() / kFile1);
  dir.write(kFile2, safetensors_file(kShard2));
  // Its target is no path: the index cannot be resolved, and no shard is opened.
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_IO,
                        {"model.safetensors.index.json", "cannot resolve file name"}));
  ::close(memfd);
}

TEST(CheckpointLocation, AFileSwappedForAFifoDuringTheGgufSniffNeverHangs) {
  // A checkpoint named by a file whose name says nothing of its format is
  // sniffed for the GGUF magic after a stat. Another thread swaps the name
  // between a regular file and a FIFO with no writer as fast as it can: a
  // blocking open in the sniff would hang this test (and meson's timeout
  // fails it); every open must end, as a checkpoint or as a refusal.
  TempDir dir;
  const fs::path name = dir.path() / "weights.bin";
  const fs::path regular = dir.write("regular", safetensors_file(kShard1));
  const fs::path fifo = dir.path() / "fifo";
  std::atomic<bool> done{false};
  std::thread swapper([&] {
    for (bool use_fifo = false; !done; use_fifo = !use_fifo) {
      if (use_fifo) {
        ::mkfifo(fifo.c_str(), 0600);
        ::rename(fifo.c_str(), name.c_str());
      } else {
        fs::copy_file(regular, dir.path() / "copy", fs::copy_options::overwrite_existing);
        ::rename((dir.path() / "copy").c_str(), name.c_str());
      }
    }
  });
  int ended = 0;
  for (int i = 0; i < 20000; ++i) {
    (void)Checkpoint::open(name);
    ++ended;
  }
  done = true;
  swapper.join();
  EXPECT_EQ(ended, 20000);
}

TEST(CheckpointLocation, AShardThatIsAFifoOrAFolderIsRefusedWithoutHanging) {
  TempDir dir;
  dir.write(kFile1, safetensors_file(kShard1));
  dir.write_text("model.safetensors.index.json", index_for(kFile1, kFile2));
  // A FIFO with no writer: a blocking open would wait forever.
  ASSERT_EQ(::mkfifo((dir.path() / kFile2).c_str(), 0600), 0);
  const std::string entry = "model.safetensors.index.json\": shard \"" + std::string(kFile2) + "\": ";
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {entry + "\"" + (dir.path() / kFile2).string() + "\": not a regular file (it is a FIFO)"}));
  fs::remove(dir.path() / kFile2);
  fs::create_directory(dir.path() / kFile2);
  EXPECT_TRUE(FailsWith(Checkpoint::open(dir.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {entry, "not a regular file (it is a folder)"}));
  // The index itself a FIFO, given as the checkpoint or found in its folder.
  TempDir fifo_dir;
  ASSERT_EQ(::mkfifo((fifo_dir.path() / "model.safetensors.index.json").c_str(), 0600), 0);
  EXPECT_TRUE(FailsWith(Checkpoint::open(fifo_dir.path()), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"model.safetensors.index.json", "not a regular file (it is a FIFO)"}));
  EXPECT_TRUE(FailsWith(Checkpoint::open(fifo_dir.path() / "model.safetensors.index.json"),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"not a regular file (it is a FIFO)"}));
  // A single file given by name that is a FIFO.
  ASSERT_EQ(::mkfifo((fifo_dir.path() / "weights.safetensors").c_str(), 0600), 0);
  EXPECT_TRUE(FailsWith(Checkpoint::open(fifo_dir.path() / "weights.safetensors"), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"weights.safetensors", "not a regular file (it is a FIFO)"}));
}

// Another user's file, whose first bytes must never reach an error ("header
// length 3619251681095544690" is "root:*:1" read as a number).
fs::path secret_file(const TempDir &dir) { return dir.write_text("shadow", "root:*:19000:0:99999:7:::\n"); }

// Every opened file's error, checked to be a refusal that leaks nothing read.
void expect_leads_out(const Result<Checkpoint> &opened, const std::string &name, const fs::path &target) {
  EXPECT_TRUE(FailsWith(opened, ROOTSPAN_ERR_INVALID_CHECKPOINT, {name, "leads out", real(target).string()}));
  if (!opened) {
    EXPECT_EQ(opened.error()->message().find("header length"), std::string::npos) << opened.error()->message();
  }
}

TEST(CheckpointLocation, EveryFileAFolderLeadsToIsConfinedToIt) {
  TempDir elsewhere;
  const fs::path secret = secret_file(elsewhere);
  const fs::path shard = elsewhere.write(kFile1, safetensors_file(kShard1));
  // The folder's model.safetensors, its one *.safetensors and the index.
  for (const std::string name : {"model.safetensors", "weights.safetensors", "model.safetensors.index.json"}) {
    TempDir folder;
    fs::create_symlink(secret, folder.path() / name);
    expect_leads_out(Checkpoint::open(folder.path()), name, secret);
    // Named by the user: the file's own folder is the one trusted.
    expect_leads_out(Checkpoint::open(folder.path() / name), name, secret);
  }
  // A real checkpoint elsewhere is refused just the same.
  TempDir folder;
  fs::create_symlink(shard, folder.path() / "model.safetensors");
  expect_leads_out(Checkpoint::open(folder.path()), "model.safetensors", shard);
  // An index that leads out trusts nothing it names (it used to trust its own folder).
  TempDir named;
  elsewhere.write_text("model.safetensors.index.json", index_for(kFile1, kFile2));
  fs::create_symlink(elsewhere.path() / "model.safetensors.index.json", named.path() / "model.safetensors.index.json");
  fs::create_symlink(shard, named.path() / kFile1);
  expect_leads_out(Checkpoint::open(named.path()), "model.safetensors.index.json",
                   elsewhere.path() / "model.safetensors.index.json");
  // A link that stays inside is followed.
  TempDir inside;
  inside.write("store/" + std::string(kFile1), safetensors_file(kShard1));
  fs::create_symlink("store/" + std::string(kFile1), inside.path() / "model.safetensors");
  auto opened = Checkpoint::open(inside.path());
  ASSERT_TRUE(opened) << opened.error()->message();
  EXPECT_EQ(opened.value().trusted_folders(), std::vector<fs::path>{real(inside.path())});
}

TEST(CheckpointLocation, ASnapshotLinkedOutOfItsRepositoryIsRefusedAndListsNothing) {
  TempDir dir;
  const CacheRepository cache(dir);
  TempDir private_home;
  fs::create_directories(private_home.path() / "private-folder-name" / "inner");
  private_home.write(std::string("private-folder-name/model.safetensors"), safetensors_file(kShard1));
  // The snapshot refs/main names is a link to another user's folder.
  fs::remove_all(cache.snapshot);
  fs::create_directory_symlink(private_home.path() / "private-folder-name", cache.snapshot);
  auto opened = Checkpoint::open(cache.repo);
  EXPECT_TRUE(FailsWith(opened, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"leads out of", real(cache.repo).string(), "a snapshot must be a folder of the repository"}));
  // snapshots/ itself a link: its names are never listed, nothing is opened.
  fs::remove_all(cache.repo / "snapshots");
  fs::create_directory_symlink(private_home.path(), cache.repo / "snapshots");
  opened = Checkpoint::open(cache.repo, std::string("a/b"));  // a bad revision lists the snapshots
  EXPECT_TRUE(FailsWith(opened, ROOTSPAN_ERR_INVALID_CHECKPOINT, {"snapshots: none"}));
  if (!opened) {
    EXPECT_EQ(opened.error()->message().find("private-folder-name"), std::string::npos);
  }
  opened = Checkpoint::open(cache.repo);
  EXPECT_TRUE(FailsWith(opened, ROOTSPAN_ERR_INVALID_CHECKPOINT, {"snapshots/ is not a folder of the repository"}));
  if (!opened) {
    EXPECT_EQ(opened.error()->message().find("private-folder-name"), std::string::npos);
  }
  // refs/ itself a link out: the ref is never read.
  fs::remove_all(cache.repo / "refs");
  private_home.write_text("main", std::string(40, 'a'));
  fs::create_directory_symlink(private_home.path(), cache.repo / "refs");
  EXPECT_TRUE(FailsWith(Checkpoint::open(cache.repo), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"refs/main", "leads out of"}));
}

}  // namespace
}  // namespace rootspan::weights
