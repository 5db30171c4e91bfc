// Manifest discovery, L3: caller paths, else ROOTSPAN_MANIFEST, else the
// manifest.d folders in order, files sorted by name.
#include "core/loader/manifest_discovery.hpp"

#include <cstdlib>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace rootspan {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;
using Paths = std::vector<fs::path>;

EnvironmentLookup fake_environment(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const char *name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

// A tree with one manifest.d per source, each holding files out of name order.
struct Tree {
  TempDir dir;
  fs::path home = dir / "home";
  fs::path xdg_home = dir / "xdg-home";
  fs::path xdg_a = dir / "xdg-a";
  fs::path xdg_b = dir / "xdg-b";
  fs::path sysconf = dir / "etc";
  fs::path data = dir / "share";

  Tree() {
    for (const auto &base : {xdg_home, xdg_a, xdg_b, sysconf, data, home / ".config"}) {
      fs::path d = base / "rootspan" / "manifest.d";
      fs::create_directories(d / "30-dir.json");  // a folder, not a file
      std::ofstream(d / "20-b.json") << "{}";
      std::ofstream(d / "10-a.json") << "{}";
      std::ofstream(d / "README") << "not a manifest";
    }
  }

  DiscoveryInputs inputs(std::map<std::string, std::string> env) const {
    DiscoveryInputs in;
    in.environment = fake_environment(std::move(env));
    in.sysconfdir = sysconf;
    in.datadir = data;
    return in;
  }

  static Paths files(const fs::path &base) {
    fs::path d = base / "rootspan" / "manifest.d";
    return {d / "10-a.json", d / "20-b.json"};
  }
};

Paths concat(std::initializer_list<Paths> parts) {
  Paths out;
  for (const auto &p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(DiscoveryL3, CallerPathsWin) {
  Tree t;
  DiscoveryInputs in =
      t.inputs({{"ROOTSPAN_MANIFEST", "/somewhere/else.json"}, {"XDG_CONFIG_HOME", t.xdg_home.string()}});
  in.explicit_paths = {"/given/b.json", "/given/a.json"};
  EXPECT_EQ(discover_manifests(in), (Paths{"/given/b.json", "/given/a.json"}));
}

TEST(DiscoveryL3, CallerDirectoryStandsForItsJsonFilesSortedByName) {
  Tree t;
  DiscoveryInputs in = t.inputs({});
  in.explicit_paths = {t.data / "rootspan" / "manifest.d", "/given/x.json"};
  EXPECT_EQ(discover_manifests(in), concat({Tree::files(t.data), {"/given/x.json"}}));
}

TEST(DiscoveryL3, EnvironmentListWhenNoCallerPaths) {
  Tree t;
  DiscoveryInputs in =
      t.inputs({{"ROOTSPAN_MANIFEST", "/m/one.json::/m/two.json:"}, {"XDG_CONFIG_HOME", t.xdg_home.string()}});
  // Empty list elements are dropped: they would name the current directory.
  EXPECT_EQ(discover_manifests(in), (Paths{"/m/one.json", "/m/two.json"}));
}

TEST(DiscoveryL3, EmptyEnvironmentValueFallsBackToFolders) {
  Tree t;
  DiscoveryInputs in = t.inputs(
      {{"ROOTSPAN_MANIFEST", ""}, {"XDG_CONFIG_HOME", t.xdg_home.string()}, {"XDG_CONFIG_DIRS", t.xdg_a.string()}});
  EXPECT_EQ(discover_manifests(in),
            concat({Tree::files(t.xdg_home), Tree::files(t.xdg_a), Tree::files(t.sysconf), Tree::files(t.data)}));
}

TEST(DiscoveryL3, FoldersInOrderFilesSortedByName) {
  Tree t;
  DiscoveryInputs in = t.inputs({{"XDG_CONFIG_HOME", t.xdg_home.string()},
                                 {"XDG_CONFIG_DIRS", t.xdg_b.string() + ":" + t.xdg_a.string()},
                                 {"HOME", t.home.string()}});
  EXPECT_EQ(discover_manifests(in), concat({Tree::files(t.xdg_home), Tree::files(t.xdg_b), Tree::files(t.xdg_a),
                                            Tree::files(t.sysconf), Tree::files(t.data)}));
}

TEST(DiscoveryL3, XdgDefaults) {
  Tree t;
  DiscoveryInputs in = t.inputs({{"HOME", t.home.string()}});
  EXPECT_EQ(manifest_folders(in), (Paths{t.home / ".config/rootspan/manifest.d", "/etc/xdg/rootspan/manifest.d",
                                         t.sysconf / "rootspan/manifest.d", t.data / "rootspan/manifest.d"}));
  EXPECT_EQ(discover_manifests(in).front(), t.home / ".config/rootspan/manifest.d/10-a.json");
}

TEST(DiscoveryL3, RelativeXdgEntriesAreIgnored) {
  Tree t;
  DiscoveryInputs in = t.inputs({{"XDG_CONFIG_HOME", "relative/config"},
                                 {"HOME", t.home.string()},
                                 {"XDG_CONFIG_DIRS", "relative:" + t.xdg_a.string() + ":"}});
  EXPECT_EQ(manifest_folders(in), (Paths{t.home / ".config/rootspan/manifest.d", t.xdg_a / "rootspan/manifest.d",
                                         t.sysconf / "rootspan/manifest.d", t.data / "rootspan/manifest.d"}));
}

TEST(DiscoveryL3, NoHomeNoUserFolder) {
  Tree t;
  DiscoveryInputs in = t.inputs({{"XDG_CONFIG_DIRS", t.xdg_a.string()}});
  EXPECT_EQ(manifest_folders(in), (Paths{t.xdg_a / "rootspan/manifest.d", t.sysconf / "rootspan/manifest.d",
                                         t.data / "rootspan/manifest.d"}));
}

TEST(DiscoveryL3, TheSameFolderIsSearchedOnce) {
  Tree t;
  DiscoveryInputs in = t.inputs({{"XDG_CONFIG_DIRS", t.sysconf.string() + ":" + t.sysconf.string() + "/"}});
  EXPECT_EQ(discover_manifests(in), concat({Tree::files(t.sysconf), Tree::files(t.data)}));
}

TEST(DiscoveryL3, MissingFoldersContributeNothing) {
  TempDir dir;
  DiscoveryInputs in;
  in.environment = fake_environment({{"XDG_CONFIG_DIRS", (dir / "none").string()}});
  in.sysconfdir = dir / "no-etc";
  in.datadir = dir / "no-share";
  EXPECT_TRUE(discover_manifests(in).empty());
}

TEST(DiscoveryL3, ProcessEnvironmentIsReadThroughSecureGetenv) {
  ::setenv("ROOTSPAN_LOADER_TEST_VARIABLE", "value", 1);
  EXPECT_EQ(secure_environment("ROOTSPAN_LOADER_TEST_VARIABLE"), "value");
  ::unsetenv("ROOTSPAN_LOADER_TEST_VARIABLE");
  EXPECT_EQ(secure_environment("ROOTSPAN_LOADER_TEST_VARIABLE"), std::nullopt);
  EXPECT_TRUE(default_sysconfdir().is_absolute());
  EXPECT_TRUE(default_datadir().is_absolute());
}

}  // namespace
}  // namespace rootspan
