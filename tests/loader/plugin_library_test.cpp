// Plugin loading, L5 (RTLD_NOW | RTLD_LOCAL through the checked descriptor,
// the loader's own error text), the entry symbol (cited as L6), and L8 (stays
// loaded while referenced, never unloaded at exit, ROOTSPAN_NO_UNLOAD).
#include "core/loader/plugin_library.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace rootspan {
namespace {

using testing::HasPolicy;
using testing::Mentions;
using testing::object_is_loaded;
using testing::TempDir;
namespace fs = std::filesystem;

const fs::path kGood = LOADER_TEST_GOOD_PLUGIN;
const fs::path kNoEntry = LOADER_TEST_NO_ENTRY_PLUGIN;
const fs::path kEntryIsData = LOADER_TEST_ENTRY_IS_DATA_PLUGIN;
const fs::path kNeedsMissing = LOADER_TEST_NEEDS_MISSING_PLUGIN;
const fs::path kUndefinedFunction = LOADER_TEST_UNDEFINED_FUNCTION_PLUGIN;

Result<LoadedLibrary> check_and_load(const fs::path &path) {
  auto checked = check_plugin_file(path);
  EXPECT_TRUE(checked) << (checked ? "" : checked.error()->message());
  if (!checked) return checked.error();
  return load_plugin_library(std::move(checked).value());
}

Diagnostic load_error(const fs::path &path) {
  auto r = check_and_load(path);
  EXPECT_FALSE(r.has_value()) << path;
  return r ? Diagnostic{} : *r.error();
}

TEST(PluginLibraryL5, LoadsThroughTheCheckedDescriptorAndFindsTheEntry) {
  auto r = check_and_load(kGood);
  ASSERT_TRUE(r) << r.error()->message();
  LoadedLibrary &lib = r.value();
  EXPECT_EQ(lib.path, kGood);
  EXPECT_EQ(lib.loaded_name.rfind("/proc/self/fd/", 0), 0u) << lib.loaded_name;
  EXPECT_TRUE(object_is_loaded(lib.loaded_name));
  ASSERT_TRUE(lib.library && lib.library->is_loaded());
  ASSERT_NE(lib.entry, nullptr);
  const rootspan_provider_table *table = lib.entry(ROOTSPAN_PROVIDER_ABI_MAJOR, ROOTSPAN_PROVIDER_ABI_MINOR);
  ASSERT_NE(table, nullptr);
  EXPECT_STREQ(table->name, "test-good");
  // RTLD_LOCAL: the plugin's symbols do not join the global scope.
  EXPECT_EQ(::dlsym(RTLD_DEFAULT, "rootspan_test_good_marker"), nullptr);
  EXPECT_TRUE(lib.library->has("rootspan_test_good_marker"));
}

TEST(PluginLibraryL5, MissingDependencyIsNamedWithTheLoadersOwnText) {
  Diagnostic d = load_error(kNeedsMissing);
  EXPECT_TRUE(HasPolicy(d, "L5", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_EQ(d.operation, "load_plugin");
  EXPECT_TRUE(Mentions(d, kNeedsMissing.string()));
  EXPECT_TRUE(Mentions(d, "dlopen(RTLD_NOW | RTLD_LOCAL) failed: "));
  EXPECT_TRUE(Mentions(d, "librootspan-test-missing-dep.so: cannot open shared object file"));
  EXPECT_FALSE(Mentions(d, "Bad file descriptor"));
}

// RTLD_NOW: a function symbol that nothing defines fails the load itself,
// with the dynamic loader's text, instead of crashing at the first call.
TEST(PluginLibraryL5, AnUndefinedFunctionFailsTheLoadNotTheFirstCall) {
  Diagnostic d = load_error(kUndefinedFunction);
  EXPECT_TRUE(HasPolicy(d, "L5", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "dlopen(RTLD_NOW | RTLD_LOCAL) failed: "));
  EXPECT_TRUE(Mentions(d, "undefined symbol: rootspan_test_function_nobody_defines"));
}

TEST(PluginLibraryL5, TheFileSwappedAfterTheCheckIsNotTheOneLoaded) {
  TempDir dir;
  fs::path file = dir.copy(kGood, "libswap.so");
  auto checked = check_plugin_file(file);
  ASSERT_TRUE(checked) << checked.error()->message();
  fs::rename(dir.write("swap.txt", "not a library"), file);
  auto r = load_plugin_library(std::move(checked).value());
  ASSERT_TRUE(r) << r.error()->message();
  EXPECT_NE(r.value().entry, nullptr);
}

TEST(PluginLibraryL5, UncheckedLibraryIsRefused) {
  auto r = load_plugin_library(CheckedLibrary{});
  ASSERT_FALSE(r);
  EXPECT_TRUE(HasPolicy(r.error(), "L5", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(r.error(), "no open descriptor"));
}

TEST(PluginLibraryEntry, MissingEntrySymbolIsRefusedCitingL6) {
  Diagnostic d = load_error(kNoEntry);
  EXPECT_TRUE(HasPolicy(d, "L6", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, kNoEntry.string()));
  EXPECT_TRUE(Mentions(d, "does not export the provider entry symbol (expected rootspan_provider_entry, actual: "));
  EXPECT_TRUE(Mentions(d, "undefined symbol: rootspan_provider_entry"));
  EXPECT_FALSE(Mentions(d, "/proc/self/fd/"));  // the file is named, not its descriptor
}

TEST(PluginLibraryEntry, EntrySymbolMustBeAFunction) {
  Diagnostic d = load_error(kEntryIsData);
  EXPECT_TRUE(HasPolicy(d, "L6", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "rootspan_provider_entry is not a function (expected STT_FUNC, actual STT_OBJECT (data))"));
}

TEST(PluginLibraryL8, StaysLoadedWhileAnyReferenceLives) {
  ASSERT_TRUE(unloading_allowed());
  auto r = check_and_load(kGood);
  ASSERT_TRUE(r) << r.error()->message();
  const std::string name = r.value().loaded_name;
  std::shared_ptr<boost::dll::shared_library> root_reference = r.value().library;  // as a root would
  r = Diagnostic{};                                                                // drops the LoadedLibrary
  EXPECT_TRUE(object_is_loaded(name));
  root_reference.reset();
  EXPECT_FALSE(object_is_loaded(name));
}

TEST(PluginLibraryL8, NoUnloadKeepsEveryLibraryLoaded) {
  ::setenv("ROOTSPAN_NO_UNLOAD", "1", 1);
  auto r = check_and_load(kGood);
  ::unsetenv("ROOTSPAN_NO_UNLOAD");
  ASSERT_TRUE(r) << r.error()->message();
  const std::string name = r.value().loaded_name;
  r = Diagnostic{};
  EXPECT_TRUE(object_is_loaded(name));  // kept for the life of the process
}

// Destroyed after the holder below (constructed before it): sees what the
// holder's destruction during exit() left behind.
struct ExitWitness {
  std::string name;
  ~ExitWitness() {
    std::fprintf(stderr, "%s\n", object_is_loaded(name) ? "still loaded at exit" : "unloaded at exit");
    std::fflush(stderr);
  }
};

TEST(PluginLibraryL8DeathTest, NeverUnloadedDuringProcessTeardown) {
  EXPECT_EXIT(
      {
        static ExitWitness witness;
        static std::optional<LoadedLibrary> holder;  // a context in a static, say
        auto r = check_and_load(kGood);
        if (!r) std::_Exit(3);
        witness.name = r.value().loaded_name;
        holder = std::move(r).value();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "still loaded at exit");
}

}  // namespace
}  // namespace rootspan
