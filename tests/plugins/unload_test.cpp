// Regression tests of plugin descriptor names (core/loader/plugin_library.cpp).
// Plugins are loaded as "/proc/self/fd/N", and the dynamic loader hands back
// any library it already knows by that name. A library that outlives the
// core's dlclose (linked -z nodelete, or also opened by someone else) keeps
// the name; if N were then closed and reused, the next plugin loaded on it
// would get the old library's table (seen: loading rocm returned cuda's).
#include <fcntl.h>

#include "plugin_test_support.hpp"

namespace rootspan::testing {
namespace {

// Loads `provider` in a context of its own, checks it, and destroys the context.
void LoadAndRelease(const std::string &provider, const std::string &kind = "test") {
  TempDir dir;
  Created created = create_context({write_manifest(dir, "first.json", {{provider, kind, provider_library(provider)}})});
  ASSERT_EQ(created.status, ROOTSPAN_OK) << rootspan_error_message(created.error.get());
  auto report = report_of(created.context.get(), provider);
  ASSERT_TRUE(report);
  ASSERT_EQ(report->state, ROOTSPAN_PROVIDER_LOADED) << describe(*report);
}

// The next plugin, loaded in a fresh context, must get its own table.
void ExpectNextPluginGetsItsOwnTable() {
  TempDir dir;
  Created created = create_context({write_manifest(dir, "next.json", {simdev_entry()})});
  ASSERT_EQ(created.status, ROOTSPAN_OK) << rootspan_error_message(created.error.get());
  auto report = report_of(created.context.get(), kSimdev);
  ASSERT_TRUE(report);
  EXPECT_EQ(report->state, ROOTSPAN_PROVIDER_LOADED) << describe(*report);
  ExpectSimdevWorks(created.context.get());
}

TEST(DescriptorNames, NodeleteLibraryDoesNotShadowTheNextPlugin) {
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    LoadAndRelease("nodelete");
    ExpectNextPluginGetsItsOwnTable();
  }
}

// Nor does the core leave a stale name for other code: the descriptor the
// process opens next has a name the dynamic loader does not know.
TEST(DescriptorNames, ReleasedLibraryLeavesNoStaleNameBehind) {
  LoadAndRelease("nodelete");
  const int next = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(next, 0);
  void *known = ::dlopen(("/proc/self/fd/" + std::to_string(next)).c_str(), RTLD_LAZY | RTLD_NOLOAD);
  EXPECT_EQ(known, nullptr) << "descriptor " << next << " is the name of a loaded library";
  if (known != nullptr) ::dlclose(known);
  ::close(next);
}

TEST(DescriptorNames, LibraryAlsoOpenedElsewhereDoesNotShadowTheNextPlugin) {
  // This process opens the plugin by its path too; the core's load of it
  // then finds the same object and adds its descriptor name to it.
  LoadedLibrary elsewhere(provider_library("foreign-domain"), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(elsewhere.handle(), nullptr) << ::dlerror();
  LoadAndRelease("foreign-domain");
  ExpectNextPluginGetsItsOwnTable();
  LoadAndRelease("foreign-domain");  // and it loads again, under another descriptor
  ExpectNextPluginGetsItsOwnTable();
}

TEST(DescriptorNames, NameLeftBehindByAnotherLoaderIsAvoided) {
  // Someone else loads a nodelete library as /proc/self/fd/K and closes K: K
  // is the lowest free descriptor, the one the core opens next.
  const int k = ::open(provider_library("nodelete").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(k, 0);
  const std::string name = "/proc/self/fd/" + std::to_string(k);
  void *stale = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(stale, nullptr) << ::dlerror();
  ::close(k);
  ExpectNextPluginGetsItsOwnTable();
  ::dlclose(stale);
}

}  // namespace
}  // namespace rootspan::testing
