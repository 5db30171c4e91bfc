// The loader steps in the order a context runs them: discover (L3), read
// (L1, L2, L7), check (L4), load (L5), negotiate (L6); plus the shipped
// config files and the fuzz seed corpus.
#include <fstream>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/context.hpp"
#include "core/loader/abi_negotiation.hpp"
#include "core/loader/manifest.hpp"
#include "core/loader/manifest_discovery.hpp"
#include "core/loader/plugin_file_check.hpp"
#include "core/loader/plugin_library.hpp"
#include "swap_on_open.hpp"
#include "test_support.hpp"

namespace rootspan {
namespace {

using testing::HasPolicy;
using testing::Mentions;
using testing::TempDir;
namespace fs = std::filesystem;

const fs::path kGood = LOADER_TEST_GOOD_PLUGIN;
const fs::path kSourceRoot = LOADER_TEST_SOURCE_ROOT;

// Runs L4-L6 on one manifest entry.
Result<NegotiatedTable> load_entry(const ManifestEntry &entry, std::shared_ptr<boost::dll::shared_library> &keep) {
  auto checked = check_plugin_file(entry);
  if (!checked) return checked.error();
  auto loaded = load_plugin_library(std::move(checked).value());
  if (!loaded) return loaded.error();
  keep = loaded.value().library;
  return negotiate(loaded.value().entry, entry);
}

std::string digest_of(const fs::path &file) {
  auto checked = check_plugin_file(file);
  EXPECT_TRUE(checked);
  return sha256_of_descriptor(checked.value().fd.get(), file).value();
}

TEST(LoaderEndToEnd, DiscoverReadCheckLoadNegotiate) {
  TempDir dir;
  fs::path plugin = dir.copy(kGood, "lib/libgood.so");
  fs::path manifest_dir = dir / "conf/rootspan/manifest.d";
  fs::create_directories(manifest_dir);
  std::ofstream(manifest_dir / "10-good.json") << R"({"file_format_version": "1.0.0", "providers": [
      {"name": "test-good", "kind": "test", "library": "../../../lib/libgood.so",
       "abi": {"major": 1, "minor": 1}, "sha256": ")" +
                                                      digest_of(plugin) + R"("},
      {"name": "test-other", "kind": "test", "library": "../../../lib/libgood.so",
       "abi": {"major": 1, "minor": 1}},
      {"name": "broken", "kind": "test", "abi": {"major": 1, "minor": 1}}]})";

  DiscoveryInputs in;
  in.environment = [&](const char *name) -> std::optional<std::string> {
    if (std::string_view(name) == "XDG_CONFIG_HOME") return (dir / "conf").string();
    return std::nullopt;
  };
  in.sysconfdir = dir / "no-etc";
  in.datadir = dir / "no-share";
  auto manifests = discover_manifests(in);
  ASSERT_EQ(manifests, std::vector<fs::path>{manifest_dir / "10-good.json"});

  auto manifest = read_manifest(manifests[0]);
  ASSERT_TRUE(manifest) << manifest.error()->message();
  ASSERT_EQ(manifest.value().entries.size(), 2u);
  ASSERT_EQ(manifest.value().skipped.size(), 1u);
  EXPECT_TRUE(HasPolicy(manifest.value().skipped[0].error, "L7", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_EQ(manifest.value().entries[0].library_path, plugin);

  std::shared_ptr<boost::dll::shared_library> keep;
  auto good = load_entry(manifest.value().entries[0], keep);
  ASSERT_TRUE(good) << good.error()->message();
  EXPECT_EQ(good.value().name, "test-good");
  EXPECT_EQ(good.value().kind, "test");
  EXPECT_NE(good.value().table.init, nullptr);

  // The same library under another name in the manifest: L6 refuses it.
  std::shared_ptr<boost::dll::shared_library> keep_other;
  auto other = load_entry(manifest.value().entries[1], keep_other);
  ASSERT_FALSE(other);
  EXPECT_TRUE(HasPolicy(other.error(), "L6", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(other.error(), (manifest_dir / "10-good.json").string() + " entry 1 \"test-other\""));
  EXPECT_TRUE(Mentions(other.error(), "(expected \"test-other\", actual \"test-good\")"));
}

TEST(LoaderEndToEnd, PluginErrorsNameTheManifestEntry) {
  TempDir dir;
  dir.copy(kGood, "libgood.so");
  dir.copy(LOADER_TEST_NEEDS_MISSING_PLUGIN, "libneeds.so");
  fs::path file = dir.write("m.json", R"({"file_format_version": "1.0.0", "providers": [
      {"name": "test-good", "kind": "test", "library": "./libgood.so", "abi": {"major": 1, "minor": 1},
       "sha256": ")" + std::string(64, 'a') +
                                          R"("},
      {"name": "needs", "kind": "test", "library": "./libneeds.so", "abi": {"major": 1, "minor": 1}}]})");
  auto m = read_manifest(file);
  ASSERT_TRUE(m) << m.error()->message();
  ASSERT_EQ(m.value().entries.size(), 2u);
  std::shared_ptr<boost::dll::shared_library> keep;

  auto sha = load_entry(m.value().entries[0], keep);
  ASSERT_FALSE(sha);
  EXPECT_TRUE(HasPolicy(sha.error(), "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(sha.error(), "manifest " + file.string() + " entry 0 \"test-good\": plugin " +
                                        (dir / "libgood.so").string() + ": sha256 does not match (expected " +
                                        std::string(64, 'a') + ", actual "));

  auto dep = load_entry(m.value().entries[1], keep);
  ASSERT_FALSE(dep);
  EXPECT_TRUE(HasPolicy(dep.error(), "L5", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(dep.error(), "manifest " + file.string() + " entry 1 \"needs\": plugin "));
  EXPECT_TRUE(Mentions(dep.error(), "librootspan-test-missing-dep.so: cannot open shared object file"));
}

// The default manifest, as configured for the build folder, lists every
// provider plugin this build made (meson passes the list), in order, each
// with its priority, the device plugins above the host.
struct BuiltPlugin {
  const char *name;
  std::int32_t priority;
  const char *library;
};
const std::vector<BuiltPlugin> kBuiltPlugins = {LOADER_TEST_BUILT_PLUGINS};

TEST(LoaderEndToEnd, ShippedDefaultManifestListsEveryBuiltPlugin) {
  auto m = read_manifest(LOADER_TEST_BUILD_MANIFEST);
  ASSERT_TRUE(m) << m.error()->message();
  EXPECT_TRUE(m.value().skipped.empty());
  EXPECT_TRUE(m.value().notes.empty());
  ASSERT_EQ(m.value().entries.size(), kBuiltPlugins.size());
  for (std::size_t i = 0; i < kBuiltPlugins.size(); ++i) {
    const ManifestEntry &entry = m.value().entries[i];
    EXPECT_EQ(entry.name, kBuiltPlugins[i].name) << "entry " << i;
    EXPECT_EQ(entry.kind, kBuiltPlugins[i].name) << "entry " << i;
    EXPECT_EQ(entry.priority, kBuiltPlugins[i].priority) << "entry " << i;
    EXPECT_EQ(entry.library_path, fs::path(kBuiltPlugins[i].library)) << "entry " << i;
    EXPECT_TRUE(entry.enabled) << "entry " << i;
    EXPECT_TRUE(fs::is_regular_file(entry.library_path)) << entry.library_path;
    if (entry.name != "host") {
      EXPECT_GT(entry.priority, 0) << entry.name << " must outrank the host";
    }
  }
  EXPECT_EQ(m.value().entries.back().name, "host");
}

// The host entry of that manifest, loaded by a context without static
// providers, serves an allocation. The device plugins are left out here: their
// vendor runtimes leak at exit, which the sanitizer pass (that runs this suite
// but not the gpu one) would report; the gpu suite and the install suite start
// them from a manifest.
TEST(LoaderEndToEnd, ShippedDefaultManifestsHostEntryLoads) {
  std::ifstream in(LOADER_TEST_BUILD_MANIFEST);
  nlohmann::json manifest = nlohmann::json::parse(in);
  nlohmann::json host_only = nlohmann::json::array();
  for (const auto &entry : manifest["providers"]) {
    if (entry["name"] == "host") host_only.push_back(entry);
  }
  ASSERT_EQ(host_only.size(), 1u);
  manifest["providers"] = host_only;
  TempDir dir;
  const fs::path path = dir.write("host.json", manifest.dump());

  ContextOptions options;
  options.static_providers = false;
  options.manifests = {path.string()};
  auto context = Context::create(options);
  ASSERT_TRUE(context) << context.error()->message();
  const std::vector<ProviderReport> reports = context.value()->reports();
  ASSERT_EQ(reports.size(), 1u);
  const ProviderReport &report = reports[0];
  EXPECT_EQ(report.name, "host");
  EXPECT_EQ(report.state, ROOTSPAN_PROVIDER_LOADED) << report.reason;
  EXPECT_EQ(report.origin, ROOTSPAN_ORIGIN_MANIFEST);
  EXPECT_EQ(report.device_count, 1u);
  AllocateOptions allocate;
  allocate.provider = "host";
  allocate.byte_length = 4096;
  auto root = context.value()->allocate(allocate);
  ASSERT_TRUE(root) << root.error()->message();
  EXPECT_TRUE(context.value()->release(root.value()));
}

// L4/L5 through a context: the bytes hashed are the bytes loaded. The pinned
// file is replaced by another valid plugin the moment the loader opens it, so
// a loader that hashed, or loaded, what the path names afterwards would see
// the test plugin (another digest, another provider name) instead of the host
// plugin that the manifest pins.
TEST(LoaderEndToEnd, BytesLoadedAreTheBytesHashedEvenWhenThePathIsSwapped) {
  TempDir dir;
  const fs::path plugin = dir.copy(LOADER_TEST_HOST_PLUGIN, "lib/libpinned.so");
  const fs::path replacement = dir.copy(kGood, "lib/libreplacement.so");
  const std::string pinned = digest_of(plugin);
  const std::string replaced = digest_of(replacement);
  ASSERT_NE(pinned, replaced);
  const fs::path manifest = dir.write("providers.json", R"({"file_format_version": "1.0.0", "providers": [
      {"name": "host", "kind": "host", "library": ")" + plugin.string() +
                                                            R"(", "abi": {"major": 1, "minor": 1}, "sha256": ")" +
                                                            pinned + R"("}]})");
  ASSERT_TRUE(testing::swap_on_next_open(plugin.string(), replacement.string()));
  ContextOptions options;
  options.static_providers = false;
  options.manifests = {manifest.string()};
  auto context = Context::create(options);
  testing::disarm_swap_on_open();
  ASSERT_TRUE(context) << context.error()->message();
  ASSERT_TRUE(testing::swap_happened()) << "the loader never opened " << plugin;
  EXPECT_EQ(digest_of(plugin), replaced) << "the path does not name the replacement";
  const std::vector<ProviderReport> reports = context.value()->reports();  // a snapshot
  ASSERT_EQ(reports.size(), 1u);
  const ProviderReport &report = reports[0];
  EXPECT_EQ(report.state, ROOTSPAN_PROVIDER_LOADED) << report.policy << ": " << report.reason;
  EXPECT_EQ(report.kind, "host");
  EXPECT_EQ(report.device_count, 1u);
  AllocateOptions allocate;
  allocate.provider = "host";
  allocate.byte_length = 4096;
  auto root = context.value()->allocate(allocate);
  ASSERT_TRUE(root) << root.error()->message();
  EXPECT_TRUE(context.value()->release(root.value()));
}

TEST(LoaderEndToEnd, ShippedSchemaIsDraft202012) {
  std::ifstream in(kSourceRoot / "config/manifest.schema.json");
  auto schema = nlohmann::json::parse(in);
  EXPECT_EQ(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
  EXPECT_EQ(schema["required"], nlohmann::json::array({"file_format_version", "providers"}));
}

// Each manifest seed names its verdict: invalid-* is refused as a whole
// (L1); valid-* reads, and valid-skips-* skips at least one entry, each with
// its policy, while the other valid seeds skip none.
TEST(LoaderEndToEnd, FuzzSeedCorpusParsesWithoutSurprises) {
  fs::path corpus = kSourceRoot / "tests/fuzz/corpus/manifest";
  std::size_t valid = 0, invalid = 0;
  for (const auto &f : fs::directory_iterator(corpus)) {
    const std::string name = f.path().filename().string();
    SCOPED_TRACE(name);
    auto m = read_manifest(f.path());
    if (name.rfind("invalid-", 0) == 0) {
      ++invalid;
      ASSERT_FALSE(m) << "an invalid seed was read";
      EXPECT_TRUE(HasPolicy(m.error(), "L1", ROOTSPAN_ERR_INVALID_MANIFEST)) << m.error()->message();
    } else if (name.rfind("valid-", 0) == 0) {
      ++valid;
      ASSERT_TRUE(m) << m.error()->message();
      const bool skips = name.rfind("valid-skips-", 0) == 0;
      EXPECT_EQ(!m.value().skipped.empty(), skips) << m.value().skipped.size() << " entries skipped";
      for (const auto &skipped : m.value().skipped) EXPECT_FALSE(skipped.error.policy.empty());
    } else {
      ADD_FAILURE() << "a seed must be named valid-* or invalid-*";
    }
  }
  EXPECT_GE(valid, 5u);
  EXPECT_GE(invalid, 2u);
}

}  // namespace
}  // namespace rootspan
