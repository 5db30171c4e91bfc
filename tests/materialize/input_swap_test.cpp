// Inputs as an attacker with write access to a checkpoint folder sees them:
// a shard validated, then swapped for a link to a file it must not read
// (under both strategies, the load reads the validated file or fails, never
// the other file), a link that leads out of the trusted folders refused at
// the open itself, a trusted folder swapped for a link between the check
// and the open refused by where the file really lies, and FIFOs named as shard, index, schema or checkpoint,
// which must fail at once rather than hang (each is tried in a child that
// is killed after a timeout).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/claim_ops.hpp"
#include "core/context.hpp"
#include "core/copy.hpp"
#include "materialize_support.hpp"
#include "root_bytes.hpp"
#include "weights/checkpoints/checkpoint.hpp"
#include "weights/files/open_beneath.hpp"
#include "weights/placement/materialize.hpp"
#include "weights/schema/resolve.hpp"
#include "weights/schema/schema.hpp"

namespace rootspan::testing {
namespace {

using rootspan::Context;
using rootspan::Root;
using rootspan::weights::Checkpoint;
using rootspan::weights::LoadOptions;
using rootspan::weights::Strategy;

const std::vector<TensorSpec> kShard1 = {{"a", "F32", {64}}, {"b", "F32", {32}}};
const std::vector<TensorSpec> kShard2 = {{"c", "F32", {16}}};

class ShardSwap : public ::testing::TestWithParam<Strategy> {};

TEST_P(ShardSwap, ALinkSwappedInAfterValidationIsNeverRead) {
  TempDir dir;
  TempDir elsewhere;
  const WrittenFile shard1 = write_safetensors(dir, "s1.safetensors", kShard1, 1);
  const WrittenFile shard2 = write_safetensors(dir, "s2.safetensors", kShard2, 2);
  write_index(dir, {{"s1.safetensors", &shard1}, {"s2.safetensors", &shard2}});
  // The file the attacker wants read: the same tensors, so it passes every
  // check a reopened file would get, with other bytes; owner-only (root's,
  // when the tests run as root).
  const WrittenFile secret = write_safetensors(elsewhere, "secret.safetensors", kShard1, 99);
  ASSERT_EQ(::chmod(secret.path.c_str(), 0600), 0);
  ASSERT_NE(secret.tensor("a"), shard1.tensor("a"));

  auto created = Context::create(rootspan::ContextOptions{});
  ASSERT_TRUE(created) << created.error()->message();
  auto context = std::move(created).value();
  {
    auto checkpoint = Checkpoint::open(dir.path());
    ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
    auto resolved =
        rootspan::weights::resolve_schema(checkpoint.value(), rootspan::weights::default_schema(checkpoint.value()));
    ASSERT_TRUE(resolved) << resolved.error()->message();

    // Validated; now the shard becomes a link to the secret.
    fs::remove(shard1.path);
    fs::create_symlink(secret.path, shard1.path);

    LoadOptions options;
    options.strategy = GetParam();
    auto loaded =
        rootspan::weights::load_components(*context, checkpoint.value(), std::move(resolved).value(), options);
    if (loaded) {
      for (auto &c : loaded.value().components) {
        const std::vector<std::byte> bytes = read_root(*c.root);
        if (c.id == "a" || c.id == "b") {
          EXPECT_EQ(bytes, shard1.tensor(c.id)) << c.id << ": not the validated file's bytes";
          EXPECT_NE(bytes, secret.tensor(c.id)) << c.id << ": the swapped-in file was read";
        }
      }
      EXPECT_TRUE(rootspan::weights::release_components(*context, loaded.value()));
    }
  }
  // Opened again now, the link is refused before anything is read.
  auto again = Checkpoint::open(dir.path());
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error()->code, ROOTSPAN_ERR_INVALID_CHECKPOINT);
  EXPECT_NE(again.error()->cause.find("leads out of the checkpoint's trusted folders"), std::string::npos)
      << again.error()->cause;
  EXPECT_EQ(context->destroy(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Strategies, ShardSwap, ::testing::Values(Strategy::kMmap, Strategy::kRead),
                         [](const auto &info) { return info.param == Strategy::kMmap ? "Mmap" : "Read"; });

// The open itself refuses a link out, whatever a check by name said before.
TEST(OpenBeneath, ALinkOutOfTheTrustedFoldersIsRefusedAtTheOpen) {
  TempDir dir;
  TempDir elsewhere;
  const fs::path secret = elsewhere.write_text("secret", "root only");
  fs::create_symlink(secret, dir.path() / "shard.safetensors");
  const std::vector<fs::path> trusted = {fs::canonical(dir.path())};
  auto opened = rootspan::weights::open_beneath(dir.path(), "shard.safetensors", trusted,
                                                ROOTSPAN_ERR_INVALID_CHECKPOINT, "open_checkpoint", "index.json");
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error()->code, ROOTSPAN_ERR_INVALID_CHECKPOINT);
  EXPECT_NE(opened.error()->cause.find("leads out of the checkpoint's trusted folders"), std::string::npos)
      << opened.error()->cause;
  EXPECT_NE(opened.error()->cause.find(fs::canonical(secret).string()), std::string::npos) << opened.error()->cause;

  // A link through a folder outside that ends back inside is the file inside.
  const fs::path inside = dir.write_text("real.bin", "inside");
  fs::create_symlink(fs::canonical(inside), elsewhere.path() / "detour");
  fs::create_symlink(elsewhere.path() / "detour", dir.path() / "hop");
  auto hop = rootspan::weights::open_beneath(dir.path(), "hop", trusted, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                                             "open_checkpoint", "index.json");
  ASSERT_TRUE(hop) << hop.error()->cause;
  EXPECT_EQ(hop.value()->size(), 6u);
  EXPECT_EQ(hop.value()->path(), fs::canonical(inside));
}

// The trusted folders were worked out (by path) before the open; by the
// open, an attacker who owns the folder above has swapped the checkpoint
// folder for a link to a folder it may not read, as a swap in a loop would
// at the worst moment (issue 35 item 6). Done here between the two steps,
// so the race is won every time.
struct SwappedFolder {
  TempDir base;
  fs::path trusted_folder;  // the checkpoint folder, as trusted
  fs::path moved;           // where the real checkpoint folder went
  fs::path secret;          // the folder the link now leads to
  std::vector<fs::path> trusted;

  SwappedFolder() {
    trusted_folder = base.path() / "ckpt";
    fs::create_directory(trusted_folder);
    trusted = {fs::canonical(trusted_folder)};
    secret = base.path() / "secret";
    fs::create_directory(secret);
    base.write_text("secret/real.bin", "root only");
    base.write_text("secret/model.safetensors", "root only");
  }
  void swap() {
    moved = base.path() / "ckpt.moved";
    fs::rename(trusted_folder, moved);
    fs::create_directory_symlink(secret, trusted_folder);
  }
  static void expect_refused(const rootspan::Result<std::shared_ptr<const rootspan::weights::InputFile>> &opened,
                             const fs::path &secret_file) {
    ASSERT_FALSE(opened) << "read " << opened.value()->path() << " through the swapped folder";
    EXPECT_EQ(opened.error()->code, ROOTSPAN_ERR_INVALID_CHECKPOINT);
    EXPECT_NE(opened.error()->cause.find("leads out of the checkpoint's trusted folders"), std::string::npos)
        << opened.error()->cause;
    EXPECT_NE(opened.error()->cause.find(fs::canonical(secret_file).string()), std::string::npos)
        << opened.error()->cause;
  }
};

// The fallback: a link that leaves its folder and comes back
// ("../ckpt/real.bin") makes openat2 give up (EXDEV), and the walk reopens
// the trusted folder by path: now the link, into the secret folder.
TEST(OpenBeneath, ATrustedFolderSwappedBeforeTheFallbackReopensItIsRefused) {
  SwappedFolder folders;
  fs::create_symlink("../ckpt/real.bin", folders.trusted_folder / "m");
  folders.base.write_text("ckpt/real.bin", "inside");
  folders.swap();
  // The start folder was opened before the swap: it is the real folder, moved.
  auto opened = rootspan::weights::open_beneath(folders.moved, "m", folders.trusted, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                                                "open_checkpoint", "index.json");
  SwappedFolder::expect_refused(opened, folders.secret / "real.bin");
}

// openat2's branch: the start folder itself is opened by path after the swap.
TEST(OpenBeneath, ACheckpointFolderSwappedBeforeItIsOpenedIsRefused) {
  SwappedFolder folders;
  folders.base.write_text("ckpt/model.safetensors", "inside");
  folders.swap();
  auto opened = rootspan::weights::open_beneath(folders.trusted_folder, "model.safetensors", folders.trusted,
                                                ROOTSPAN_ERR_INVALID_CHECKPOINT, "open_checkpoint", "model");
  SwappedFolder::expect_refused(opened, folders.secret / "model.safetensors");
}

// Without a swap, the same link out and back in opens the file inside.
TEST(OpenBeneath, ALinkOutAndBackInOpensTheFileInside) {
  SwappedFolder folders;
  fs::create_symlink("../ckpt/real.bin", folders.trusted_folder / "m");
  const fs::path inside = folders.base.write_text("ckpt/real.bin", "inside");
  auto opened = rootspan::weights::open_beneath(folders.trusted_folder, "m", folders.trusted,
                                                ROOTSPAN_ERR_INVALID_CHECKPOINT, "open_checkpoint", "index.json");
  ASSERT_TRUE(opened) << opened.error()->cause;
  EXPECT_EQ(opened.value()->path(), fs::canonical(inside));
  EXPECT_EQ(opened.value()->size(), 6u);
}

// Runs `attempt` in a child; true when it returned within `limit`, with
// `status` its exit status. A child still running then is killed.
bool finishes_within(const std::function<int()> &attempt, std::chrono::seconds limit, int &status) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(attempt());
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    int raw = 0;
    if (::waitpid(child, &raw, WNOHANG) == child) {
      status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  return false;
}

// Exit status of the child: 0 when it failed with the expected error.
int refused_as_fifo(const rootspan::Diagnostic &error, rootspan_status code) {
  return error.code == code && error.cause.find("not a regular file (it is a FIFO)") != std::string::npos ? 0 : 2;
}

TEST(Fifos, NamedAsShardIndexSchemaOrCheckpointFailAtOnce) {
  TempDir dir;
  const WrittenFile shard1 = write_safetensors(dir, "s1.safetensors", kShard1, 1);
  const WrittenFile shard2 = write_safetensors(dir, "s2.safetensors", kShard2, 2);
  write_index(dir, {{"s1.safetensors", &shard1}, {"s2.safetensors", &shard2}});
  fs::remove(shard2.path);
  ASSERT_EQ(::mkfifo(shard2.path.c_str(), 0600), 0);
  TempDir index_dir;
  ASSERT_EQ(::mkfifo((index_dir.path() / "model.safetensors.index.json").c_str(), 0600), 0);
  TempDir single;
  ASSERT_EQ(::mkfifo((single.path() / "model.safetensors").c_str(), 0600), 0);
  const fs::path schema = single.path() / "schema.json";
  ASSERT_EQ(::mkfifo(schema.c_str(), 0600), 0);

  const std::vector<std::pair<std::string, std::function<int()>>> attempts = {
      {"shard",
       [&] {
         auto opened = Checkpoint::open(dir.path());
         return opened ? 1 : refused_as_fifo(opened.error(), ROOTSPAN_ERR_INVALID_CHECKPOINT);
       }},
      {"index",
       [&] {
         auto opened = Checkpoint::open(index_dir.path() / "model.safetensors.index.json");
         return opened ? 1 : refused_as_fifo(opened.error(), ROOTSPAN_ERR_INVALID_CHECKPOINT);
       }},
      {"checkpoint",
       [&] {
         auto opened = Checkpoint::open(single.path() / "model.safetensors");
         return opened ? 1 : refused_as_fifo(opened.error(), ROOTSPAN_ERR_INVALID_CHECKPOINT);
       }},
      {"schema",
       [&] {
         auto loaded = rootspan::weights::load_component_schema(schema);
         return loaded ? 1 : refused_as_fifo(loaded.error(), ROOTSPAN_ERR_INVALID_SCHEMA);
       }},
  };
  for (const auto &[what, attempt] : attempts) {
    int status = -1;
    ASSERT_TRUE(finishes_within(attempt, std::chrono::seconds(20), status)) << what << ": a FIFO hung the open";
    EXPECT_EQ(status, 0) << what << ": not refused as a FIFO (1: it opened, 2: another error)";
  }
}

}  // namespace
}  // namespace rootspan::testing
