// A plugin's dependencies (L4): read from the checked descriptor, $ORIGIN
// expanded against the plugin's real folder, each dependency found there
// checked under the trust rule and loaded through its own descriptor; a
// RUNPATH folder others can write, a relative entry, and unpinned or
// mismatching pinned dependencies are refused.
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include "attacker.hpp"
#include "core/loader/elf_dynamic.hpp"
#include "core/loader/manifest.hpp"
#include "core/loader/plugin_file_check.hpp"
#include "core/loader/plugin_library.hpp"
#include "core/loader/trusted_path.hpp"
#include "test_support.hpp"

namespace rootspan {
namespace {

using testing::HasPolicy;
using testing::Mentions;
using testing::sha256_hex;
using testing::TempDir;
namespace fs = std::filesystem;

const fs::path kOrigin = LOADER_TEST_ORIGIN_PLUGIN;
const fs::path kDep = LOADER_TEST_ORIGIN_DEP;
const std::string kDepName = "librootspan-test-origin-dep.so";

// The plugin and its library copied into a folder of their own.
struct Package {
  TempDir dir;
  fs::path plugin = dir.copy(kOrigin, "librootspan-test-origin.so");
  fs::path dep = dir.copy(kDep, kDepName);
  Package() { ::chmod(dir.path().c_str(), 0755); }
};

// A copy of the plugin with one string of its RUNPATH replaced by another of
// the same length.
fs::path with_runpath_patched(const TempDir &dir, const std::string &from, const std::string &to) {
  EXPECT_EQ(from.size(), to.size());
  std::string image = testing::read_file(kOrigin);
  const std::size_t at = image.find(from);
  EXPECT_NE(at, std::string::npos) << from << " is not in the plugin";
  if (at != std::string::npos) image.replace(at, from.size(), to);
  fs::path file = dir.write("libpatched.so", image);
  ::chmod(file.c_str(), 0755);
  return file;
}

TEST(ElfDynamic, ReadsNeededAndRunpathFromTheDescriptor) {
  int fd = ::open(kOrigin.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto r = read_elf_dynamic(fd, "plugin");
  ::close(fd);
  ASSERT_TRUE(r) << r.error()->message();
  EXPECT_NE(std::find(r.value().needed.begin(), r.value().needed.end(), kDepName), r.value().needed.end());
  ASSERT_TRUE(r.value().runpath);
  EXPECT_NE(r.value().runpath->find("$ORIGIN/writable-deps"), std::string::npos) << *r.value().runpath;
}

TEST(ElfDynamic, AStringOffsetOutsideTheTableIsRefused) {
  TempDir dir;
  // Truncating the file cuts the string table off.
  std::string image = testing::read_file(kOrigin);
  fs::path file = dir.write("libcut.so", image.substr(0, 1024));
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  auto r = read_elf_dynamic(fd, "plugin " + file.string());
  ::close(fd);
  ASSERT_FALSE(r);
  EXPECT_TRUE(HasPolicy(r.error(), "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(r.error(), "malformed dynamic section"));
  EXPECT_TRUE(Mentions(r.error(), "lies outside the file"));
}

TEST(ElfDynamic, TooManyProgramHeadersAreRefused) {
  TempDir dir;
  std::string image = testing::read_file(kOrigin);
  ElfW(Ehdr) header;
  std::memcpy(&header, image.data(), sizeof header);
  header.e_phnum = static_cast<decltype(header.e_phnum)>(kMaxElfProgramHeaders + 1);
  std::memcpy(image.data(), &header, sizeof header);
  fs::path file = dir.write("libmany.so", image);
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  auto r = read_elf_dynamic(fd, "plugin " + file.string());
  ::close(fd);
  ASSERT_FALSE(r);
  EXPECT_TRUE(HasPolicy(r.error(), "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(r.error(), "4097 program headers (expected at most 4096)"));
}

TEST(PluginDependenciesL4, OriginDependencyBesideThePluginIsFoundCheckedAndLoaded) {
  Package package;
  auto checked = check_plugin_file(package.plugin);
  ASSERT_TRUE(checked) << checked.error()->message();
  ASSERT_EQ(checked.value().dependencies.size(), 1u);
  const CheckedLibrary &dep = checked.value().dependencies[0];
  EXPECT_EQ(dep.needed_as, kDepName);
  EXPECT_EQ(dep.path, package.dep);
  EXPECT_EQ(dep.real_path, package.dep);

  auto loaded = load_plugin_library(std::move(checked).value());
  ASSERT_TRUE(loaded) << loaded.error()->message();
  const rootspan_provider_table *table = loaded.value().entry(ROOTSPAN_PROVIDER_ABI_MAJOR, ROOTSPAN_PROVIDER_ABI_MINOR);
  ASSERT_NE(table, nullptr);
  EXPECT_STREQ(table->name, "origin-dep-beside");
  // The soname resolves to the copy beside the plugin, loaded through its descriptor.
  void *handle = ::dlopen(kDepName.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr) << "the dependency is not loaded under its soname";
  link_map *map = nullptr;
  ASSERT_EQ(::dlinfo(handle, RTLD_DI_LINKMAP, &map), 0);
  std::error_code ec;
  EXPECT_EQ(fs::read_symlink(map->l_name, ec), package.dep) << map->l_name;
  ::dlclose(handle);
}

TEST(PluginDependenciesL4, ADependencyWhoseSonameIsNotItsNeededNameIsRefused) {
  // Preloading matches by DT_SONAME: a dependency that names itself otherwise
  // would be checked here and then loaded again by ld.so from disk. Its
  // soname is patched to another of the same length.
  Package package;
  std::string image = testing::read_file(package.dep);
  const std::size_t at = image.find(kDepName + '\0');
  ASSERT_NE(at, std::string::npos) << "the dependency's DT_SONAME string";
  image.replace(at, kDepName.size(), "librootspan-test-origin-dex.so");
  fs::remove(package.dep);
  package.dir.write(kDepName, image);
  auto r = check_plugin_file(package.plugin);
  ASSERT_FALSE(r) << "a dependency whose soname differs from its DT_NEEDED name was accepted";
  EXPECT_TRUE(HasPolicy(r.error(), "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(r.error(), "has DT_SONAME \"librootspan-test-origin-dex.so\", but is needed as \"" + kDepName));
}

TEST(PluginDependenciesL4, RunpathIntoAWorldWritableFolderIsRefused) {
  ROOTSPAN_NEED_ATTACKER(attacker);
  Package package;
  fs::path writable = package.dir / "writable-deps";
  fs::create_directory(writable);
  ::chmod(writable.c_str(), 0777);
  // Anyone may put a library of the needed name there.
  ASSERT_EQ(attacker.run("cp " + kDep.string() + " " + (writable / kDepName).string()), 0);

  auto r = check_plugin_file(package.plugin);
  ASSERT_FALSE(r) << "a RUNPATH folder others can write was accepted";
  EXPECT_TRUE(HasPolicy(r.error(), "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(r.error(), "RUNPATH entry \"$ORIGIN/writable-deps\" (" + writable.string() +
                                      "): not trusted: " + writable.string() + " world-writable"));
  EXPECT_TRUE(Mentions(r.error(), "mode 0777"));
}

TEST(PluginDependenciesL4, DependencyOwnedByAnotherUserIsRefused) {
  ROOTSPAN_NEED_ATTACKER(attacker);
  Package package;
  attacker.own(package.dep);
  auto r = check_plugin_file(package.plugin);
  ASSERT_FALSE(r);
  EXPECT_TRUE(HasPolicy(r.error(), "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(r.error(), "dependency " + kDepName + " (" + package.dep.string() + "): not trusted: " +
                                      package.dep.string() + " owned by " + describe_owner(attacker.uid)));
}

TEST(PluginDependenciesL4, RelativeRunpathEntryIsRefused) {
  TempDir dir;
  fs::path plugin = with_runpath_patched(dir, "$ORIGIN/writable-deps", "xxxxxxx/writable-deps");
  auto r = check_plugin_file(plugin);
  ASSERT_FALSE(r);
  EXPECT_TRUE(HasPolicy(r.error(), "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(r.error(), "RUNPATH entry \"xxxxxxx/writable-deps\": relative"));
}

TEST(PluginDependenciesL4, OtherSubstitutionsAreRefused) {
  TempDir dir;
  fs::path plugin = with_runpath_patched(dir, "$ORIGIN/writable-deps", "$LIB/writable-deps123");
  auto r = check_plugin_file(plugin);
  ASSERT_FALSE(r);
  EXPECT_TRUE(Mentions(r.error(), "RUNPATH entry \"$LIB/writable-deps123\": unsupported substitution"));
}

ManifestEntry entry_for(const fs::path &plugin, std::map<std::string, std::string> pins) {
  ManifestEntry e;
  e.manifest = plugin.parent_path() / "m.json";
  e.name = "origin";
  e.kind = "test";
  e.library = plugin.string();
  e.library_path = plugin;
  e.dependencies_sha256 = std::move(pins);
  return e;
}

TEST(PluginDependenciesL4, PinnedDependencyIsLoadedFromASealedCopy) {
  Package package;
  auto r = check_plugin_file(entry_for(package.plugin, {{kDepName, sha256_hex(testing::read_file(package.dep))}}));
  ASSERT_TRUE(r) << r.error()->message();
  ASSERT_EQ(r.value().dependencies.size(), 1u);
  EXPECT_EQ(::fcntl(r.value().dependencies[0].fd.get(), F_GET_SEALS), kPinSeals);
  auto loaded = load_plugin_library(std::move(r).value());
  ASSERT_TRUE(loaded) << loaded.error()->message();
  EXPECT_STREQ(loaded.value().entry(ROOTSPAN_PROVIDER_ABI_MAJOR, ROOTSPAN_PROVIDER_ABI_MINOR)->name,
               "origin-dep-beside");
}

TEST(PluginDependenciesL4, PinsAreCheckedAndMustCoverEveryDependency) {
  Package package;
  const std::string zeros(64, '0');
  auto r = check_plugin_file(entry_for(package.plugin, {{kDepName, zeros}}));
  ASSERT_FALSE(r);
  EXPECT_TRUE(HasPolicy(r.error(), "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(r.error(), "dependency " + kDepName + " (" + package.dep.string() +
                                      "): sha256 does not match (expected " + zeros));

  r = check_plugin_file(entry_for(package.plugin, {{"libother.so", zeros}}));
  ASSERT_FALSE(r);
  EXPECT_TRUE(Mentions(r.error(), "dependency " + kDepName + " (" + package.dep.string() +
                                      "): not pinned (expected its digest in the entry's dependencies_sha256"));

  r = check_plugin_file(
      entry_for(package.plugin, {{kDepName, sha256_hex(testing::read_file(package.dep))}, {"libother.so", zeros}}));
  ASSERT_FALSE(r);
  EXPECT_TRUE(Mentions(r.error(), "dependencies_sha256 names libother.so, which the plugin does not load"));
}

TEST(PluginDependenciesL4, ManifestReadsDependencyPins) {
  const std::string digest(64, 'a');
  auto m = parse_manifest(R"({"file_format_version": "1.0.0", "providers": [
      {"name": "a", "kind": "test", "library": "/x/liba.so", "abi": {"major": 1, "minor": 1},
       "dependencies_sha256": {"libdep.so.1": ")" +
                              digest + R"("}},
      {"name": "b", "kind": "test", "library": "/x/libb.so", "abi": {"major": 1, "minor": 1},
       "dependencies_sha256": {"../libdep.so": ")" +
                              digest + R"("}},
      {"name": "c", "kind": "test", "library": "/x/libc.so", "abi": {"major": 1, "minor": 1},
       "dependencies_sha256": {"libdep.so": "abc"}}]})",
                          "/x/m.json");
  ASSERT_TRUE(m) << m.error()->message();
  ASSERT_EQ(m.value().entries.size(), 1u);
  EXPECT_EQ(m.value().entries[0].dependencies_sha256, (std::map<std::string, std::string>{{"libdep.so.1", digest}}));
  ASSERT_EQ(m.value().skipped.size(), 2u);
  EXPECT_TRUE(Mentions(m.value().skipped[0].error,
                       "expected keys that are library file names (no '/'), actual "
                       "\"../libdep.so\""));
  EXPECT_TRUE(Mentions(m.value().skipped[1].error,
                       "\"dependencies_sha256.libdep.so\": expected 64 lowercase hex digits, actual \"abc\""));
}

}  // namespace
}  // namespace rootspan
