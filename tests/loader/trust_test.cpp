// The trust rule (L3, L4), as a local unprivileged user would attack it: a
// plugin or a manifest that another user can change, or a folder above one,
// is refused with the offending path, its owner and its mode.
#include "core/loader/trusted_path.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>

#include <gtest/gtest.h>

#include "attacker.hpp"
#include "core/context.hpp"
#include "core/loader/manifest.hpp"
#include "core/loader/manifest_discovery.hpp"
#include "core/loader/plugin_file_check.hpp"
#include "test_support.hpp"

namespace rootspan {
namespace {

using testing::HasPolicy;
using testing::Mentions;
using testing::TempDir;
namespace fs = std::filesystem;

const fs::path kGood = LOADER_TEST_GOOD_PLUGIN;

Diagnostic refused_plugin(const fs::path &path) {
  auto r = check_plugin_file(path);
  EXPECT_FALSE(r) << path << " was accepted";
  return r ? Diagnostic{} : *r.error();
}

// A folder the attacker can reach (the temporary folder is 0700).
struct Scene {
  TempDir dir;
  Scene() { ::chmod(dir.path().c_str(), 0755); }
};

TEST(TrustRule, TheTestFoldersAndTheBuiltPluginAreTrusted) {
  Scene scene;
  EXPECT_EQ(find_trust_violation(scene.dir.path()), std::nullopt);
  EXPECT_EQ(find_trust_violation(kGood), std::nullopt);
  EXPECT_TRUE(check_plugin_file(scene.dir.copy(kGood, "libok.so", 0755)));
}

TEST(TrustRule, ADescriptorWithoutAPathIsNotTrusted) {
  const int fd = ::memfd_create("rootspan-test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto v = find_trust_violation(fd);
  ::close(fd);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->describe(),
            "descriptor " + std::to_string(fd) + " has no path in the file system (expected a file reachable from /)");
}

TEST(TrustRule, PluginOwnedByAnotherUserIsRefused) {
  ROOTSPAN_NEED_ATTACKER(attacker);
  Scene scene;
  fs::path plugin = scene.dir.copy(kGood, "libtheirs.so", 0755);
  attacker.own(plugin);
  // The threat is real: that user can rewrite the file in place at any time.
  ASSERT_EQ(attacker.run("printf x >> " + plugin.string()), 0);

  Diagnostic d = refused_plugin(plugin);
  EXPECT_TRUE(HasPolicy(d, "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "not trusted: " + plugin.string() + " owned by " + describe_owner(attacker.uid)));
  EXPECT_TRUE(Mentions(d, "(rootspan-attacker)"));
  EXPECT_TRUE(Mentions(d, "expected owner root"));
  EXPECT_TRUE(Mentions(d, "mode 0755"));
  EXPECT_TRUE(testing::HasValues(d, 0, attacker.uid));
}

TEST(TrustRule, GroupWritablePluginIsRefused) {
  Scene scene;
  fs::path plugin = scene.dir.copy(kGood, "libgroup.so", 0775);
  Diagnostic d = refused_plugin(plugin);
  EXPECT_TRUE(HasPolicy(d, "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, plugin.string() + " group-writable"));
  EXPECT_TRUE(Mentions(d, "actual owner " + describe_owner(::geteuid()) + ", mode 0775"));
  EXPECT_TRUE(testing::HasValues(d, 0755, 0775));
}

TEST(TrustRule, WorldWritablePluginIsRefused) {
  Scene scene;
  fs::path plugin = scene.dir.copy(kGood, "libworld.so", 0757);
  Diagnostic d = refused_plugin(plugin);
  EXPECT_TRUE(Mentions(d, plugin.string() + " world-writable"));
  EXPECT_TRUE(Mentions(d, "mode 0757"));
}

TEST(TrustRule, PluginInAWorldWritableFolderIsRefused) {
  ROOTSPAN_NEED_ATTACKER(attacker);
  Scene scene;
  fs::path folder = scene.dir / "open";
  fs::create_directory(folder);
  ::chmod(folder.c_str(), 0777);
  fs::path plugin = scene.dir.copy(kGood, "open/libp.so", 0755);
  // The file is root's and read-only, but the folder lets anyone replace it.
  ASSERT_EQ(attacker.run("cp " + plugin.string() + " " + folder.string() + "/x && mv -f " + folder.string() + "/x " +
                         plugin.string()),
            0);
  struct stat st {};
  ASSERT_EQ(::stat(plugin.c_str(), &st), 0);
  ASSERT_EQ(st.st_uid, attacker.uid) << "the other user replaced the file";

  ::chown(plugin.c_str(), 0, 0);  // even a root-owned file there is not trusted
  Diagnostic d = refused_plugin(plugin);
  EXPECT_TRUE(HasPolicy(d, "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "folder " + folder.string() + " world-writable"));
  EXPECT_TRUE(Mentions(d, "mode 0777"));
  EXPECT_TRUE(Mentions(d, "above " + plugin.string()));
}

TEST(TrustRule, FolderOwnedByAnotherUserAboveThePluginIsRefused) {
  ROOTSPAN_NEED_ATTACKER(attacker);
  Scene scene;
  fs::path folder = scene.dir / "theirs";
  fs::create_directory(folder);
  fs::path plugin = scene.dir.copy(kGood, "theirs/libp.so", 0755);
  attacker.own(folder);
  Diagnostic d = refused_plugin(plugin);
  EXPECT_TRUE(Mentions(d, "folder " + folder.string() + " owned by " + describe_owner(attacker.uid)));
}

TEST(TrustRule, StickyFolderAcceptsOnlyFilesOfRootOrTheUser) {
  Scene scene;
  fs::path sticky = scene.dir / "sticky";
  fs::create_directory(sticky);
  ::chmod(sticky.c_str(), 01777);
  fs::path mine = scene.dir.copy(kGood, "sticky/libmine.so", 0755);
  EXPECT_EQ(find_trust_violation(mine), std::nullopt);
  // The sticky folder itself, as the thing checked, is still world-writable.
  auto v = find_trust_violation(sticky);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->problem, "world-writable");

  std::string why_not;
  auto attacker = testing::attacker(why_not);
  if (!attacker) GTEST_SKIP() << why_not;
  attacker->own(mine);
  v = find_trust_violation(mine);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->offending, mine);
  EXPECT_EQ(v->owner, attacker->uid);
}

TEST(TrustRule, ManifestOfAnotherUserIsRefusedUnderL3) {
  ROOTSPAN_NEED_ATTACKER(attacker);
  Scene scene;
  fs::path folder = scene.dir / "m";
  fs::create_directory(folder);
  attacker.own(folder);
  fs::path text = scene.dir.write("source.json", R"({"file_format_version": "1.0.0", "providers": []})");
  ::chmod(text.c_str(), 0644);
  ASSERT_EQ(attacker.run("cp " + text.string() + " " + (folder / "x.json").string()), 0);
  // Moved into a root folder: the file is still theirs.
  fs::path moved = scene.dir / "x.json";
  fs::rename(folder / "x.json", moved);
  auto r = read_manifest(moved);
  ASSERT_FALSE(r);
  EXPECT_TRUE(HasPolicy(r.error(), "L3", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_TRUE(Mentions(
      r.error(), moved.string() + ": not trusted: " + moved.string() + " owned by " + describe_owner(attacker.uid)));

  ::chown(moved.c_str(), 0, 0);
  ::chmod(moved.c_str(), 0664);
  r = read_manifest(moved);
  ASSERT_FALSE(r);
  EXPECT_TRUE(Mentions(r.error(), "group-writable"));
  ::chmod(moved.c_str(), 0644);
  EXPECT_TRUE(read_manifest(moved)) << "the same file, no longer writable by others, is read";
}

DiscoveryInputs only(std::map<std::string, std::string> env, const fs::path &root) {
  DiscoveryInputs in;
  in.environment = [env = std::move(env)](const char *name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  in.sysconfdir = root / "no-etc";
  in.datadir = root / "no-share";
  return in;
}

TEST(TrustRule, WorldWritableManifestFolderIsNotSearched) {
  ROOTSPAN_NEED_ATTACKER(attacker);
  Scene scene;
  fs::path folder = scene.dir / "xdg" / "rootspan" / "manifest.d";
  fs::create_directories(folder);
  ::chmod(folder.c_str(), 0777);
  // Anyone can drop a manifest there.
  ASSERT_EQ(attacker.run("printf %s {} > " + (folder / "evil.json").string()), 0);
  fs::path good_folder = scene.dir / "xdg2" / "rootspan" / "manifest.d";
  fs::create_directories(good_folder);
  scene.dir.write("xdg2/rootspan/manifest.d/good.json", "{}");

  std::vector<Diagnostic> refused;
  auto found = discover_manifests(
      only({{"XDG_CONFIG_DIRS", (scene.dir / "xdg").string() + ":" + (scene.dir / "xdg2").string()}}, scene.dir.path()),
      &refused);
  EXPECT_EQ(found, std::vector<fs::path>{good_folder / "good.json"});
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_TRUE(HasPolicy(refused[0], "L3", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_TRUE(Mentions(refused[0], "manifest folder " + folder.string() +
                                       " not searched: not trusted: " + folder.string() + " world-writable"));
  EXPECT_TRUE(Mentions(refused[0], "mode 0777"));

  // A folder the caller names is judged the same way.
  refused.clear();
  DiscoveryInputs given = only({}, scene.dir.path());
  given.explicit_paths = {folder};
  EXPECT_TRUE(discover_manifests(given, &refused).empty());
  EXPECT_EQ(refused.size(), 1u);
}

// sudo -E keeps the caller's HOME: root must not read that user's manifests.
TEST(TrustRule, RootSkipsAnotherUsersHome) {
  ROOTSPAN_NEED_ATTACKER(attacker);
  Scene scene;
  fs::path home = scene.dir / "home-attacker";
  fs::create_directory(home);
  attacker.own(home);
  ASSERT_EQ(attacker.run("mkdir -p " + home.string() + "/.config/rootspan/manifest.d && printf %s {} > " +
                         home.string() + "/.config/rootspan/manifest.d/10-mine.json"),
            0);
  fs::path folder = home / ".config" / "rootspan" / "manifest.d";
  ASSERT_TRUE(fs::exists(folder / "10-mine.json"));

  for (auto env : {std::map<std::string, std::string>{{"HOME", home.string()}},
                   std::map<std::string, std::string>{{"XDG_CONFIG_HOME", (home / ".config").string()}}}) {
    std::vector<Diagnostic> refused;
    EXPECT_TRUE(discover_manifests(only(env, scene.dir.path()), &refused).empty());
    ASSERT_EQ(refused.size(), 1u);
    EXPECT_TRUE(HasPolicy(refused[0], "L3", ROOTSPAN_ERR_INVALID_MANIFEST));
    // The first untrusted component on the way down is the home folder.
    EXPECT_TRUE(Mentions(refused[0], "folder " + home.string() + " owned by " + describe_owner(attacker.uid)));
    EXPECT_TRUE(
        Mentions(refused[0], "running as root, a user's configuration folder is searched only when root owns it"));
  }
}

// The same through a context, as `sudo -E rootspan providers` would run: the
// user's manifest names the user's plugin; root reports the folder skipped
// under L3 and loads nothing of it.
TEST(TrustRule, AContextRunAsRootWithAnotherUsersHomeLoadsNothingOfIt) {
  ROOTSPAN_NEED_ATTACKER(attacker);
  Scene scene;
  fs::path home = scene.dir / "home-attacker";
  fs::create_directory(home);
  attacker.own(home);
  fs::path manifest = scene.dir.write(
      "source.json", R"({"file_format_version": "1.0.0", "providers": [{"name": "test-good", "kind": "test",
      "library": "../../libtheirs.so", "abi": {"major": 1, "minor": 1}}]})");
  ::chmod(manifest.c_str(), 0644);
  ASSERT_EQ(attacker.run("mkdir -p " + home.string() + "/.config/rootspan/manifest.d && cp " + kGood.string() + " " +
                         home.string() + "/.config/libtheirs.so && cp " + manifest.string() + " " + home.string() +
                         "/.config/rootspan/manifest.d/10-theirs.json"),
            0);

  struct Environment {
    std::map<std::string, std::optional<std::string>> saved;
    void set(const char *name, const char *value) {
      const char *old = std::getenv(name);
      saved.emplace(name, old ? std::optional<std::string>(old) : std::nullopt);
      if (value) {
        ::setenv(name, value, 1);
      } else {
        ::unsetenv(name);
      }
    }
    ~Environment() {
      for (const auto &[name, value] : saved) {
        if (value) {
          ::setenv(name.c_str(), value->c_str(), 1);
        } else {
          ::unsetenv(name.c_str());
        }
      }
    }
  } environment;
  environment.set("HOME", home.c_str());
  environment.set("XDG_CONFIG_HOME", nullptr);
  environment.set("XDG_CONFIG_DIRS", (scene.dir / "no-xdg").c_str());
  environment.set("ROOTSPAN_MANIFEST", nullptr);

  ContextOptions options;
  options.discover_manifests = true;
  auto context = Context::create(options);
  ASSERT_TRUE(context) << context.error()->message();
  const fs::path folder = home / ".config" / "rootspan" / "manifest.d";
  bool reported = false;
  for (const ProviderReport &report : context.value()->reports()) {
    EXPECT_NE(report.name, "test-good") << "the other user's provider was considered: " << report.reason;
    if (report.policy == "L3" &&
        report.reason.find("manifest folder " + folder.string() + " not searched") != std::string::npos) {
      reported = true;
      EXPECT_EQ(report.state, ROOTSPAN_PROVIDER_SKIPPED);
      EXPECT_NE(report.reason.find("owned by " + describe_owner(attacker.uid)), std::string::npos) << report.reason;
    }
  }
  EXPECT_TRUE(reported) << "no L3 report for " << folder;
}

}  // namespace
}  // namespace rootspan
