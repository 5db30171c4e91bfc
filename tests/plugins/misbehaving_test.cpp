// Every misbehaving provider of docs/writing-a-provider.md, loaded through a manifest beside the
// well-behaved simulated device provider. For each: the exact error code, the
// policy or rule it names, that the process goes on, and that the neighbour
// keeps working.
//   - load-time breaches (L5, L6, init) are skipped (or failed) reports; their
//     code shows where the core hands back an error: adding the provider's
//     entry in process (rootspan_context_add_provider), and a context that has
//     no other provider (NoProvider, L7, naming every reason);
//   - import-time breaches are errors of rootspan_root_allocate citing L9;
//   - mapping breaches are errors of rootspan_map_read / rootspan_map_write.
#include <optional>
#include <set>

#include "plugin_test_support.hpp"

namespace rootspan::testing {
namespace {

// ---- load time --------------------------------------------------------------

struct LoadCase {
  const char *label;     // the test's name
  const char *provider;  // librootspan-tp-<provider>.so, and the manifest entry's name
  rootspan_provider_state state;
  const char *policy;
  std::vector<std::string> reason;  // pieces the reason must contain
  // The code rootspan_context_add_provider returns for the library's entry
  // function; nullopt where there is no entry function to add.
  std::optional<rootspan_status> embedded_code;
  // Whether the reason itself cites the policy and names the manifest entry.
  // A failing init is the provider's own error: its reason is the provider's
  // message, and the report's policy field carries L7.
  bool reason_names_entry = true;
};

void PrintTo(const LoadCase &c, std::ostream *os) { *os << c.label; }

const LoadCase kLoadCases[] = {
    {"WrongAbiMajor",
     "abi-major",
     ROOTSPAN_PROVIDER_SKIPPED,
     "L6",
     {"ABI major differs (expected 1, actual 2", "provider ABI 2.1"},
     ROOTSPAN_ERR_ABI_MISMATCH},
    {"TooOldAbiMinor",
     "abi-minor",
     ROOTSPAN_PROVIDER_SKIPPED,
     "L6",
     {"ABI minor too old (expected at least 1, actual 0", "provider ABI 1.0"},
     ROOTSPAN_ERR_ABI_MISMATCH},
    {"MissingEntrySymbol",
     "no-entry",
     ROOTSPAN_PROVIDER_SKIPPED,
     "L6",
     {"does not export the provider entry symbol (expected rootspan_provider_entry"},
     std::nullopt},
    {"NullRequiredEntry",
     "null-required",
     ROOTSPAN_PROVIDER_SKIPPED,
     "L6",
     {"required entry release is NULL (expected a function)"},
     ROOTSPAN_ERR_PLUGIN_REJECTED},
    {"NameDiffersFromManifest",
     "name-differs",
     ROOTSPAN_PROVIDER_SKIPPED,
     "L6",
     {"provider name differs from the manifest (expected \"name-differs\", actual \"renamed-provider\")"},
     std::nullopt},  // an embedded provider has no manifest name to differ from
    {"InitFailure",
     "init-fails",
     ROOTSPAN_PROVIDER_FAILED,
     "L7",
     {"provider 'init-fails' init failed (ProviderFailure): simulated init failure: the device is gone"},
     ROOTSPAN_ERR_PROVIDER_FAILURE,
     false},
    {"MissingSharedLibraryDependency",
     "needs-absent",
     ROOTSPAN_PROVIDER_SKIPPED,
     "L5",
     {"dlopen(RTLD_NOW | RTLD_LOCAL) failed", "librootspan-tp-absent.so: cannot open shared object file"},
     std::nullopt},  // this process cannot load it either
    {"EntryThrows",
     "entry-throws",
     ROOTSPAN_PROVIDER_SKIPPED,
     "L6",
     {"rootspan_provider_entry threw: entry threw on purpose"},
     ROOTSPAN_ERR_PLUGIN_REJECTED},
};

class LoadTimeBreach : public ::testing::TestWithParam<LoadCase> {};

TEST_P(LoadTimeBreach, IsReportedAndTheNeighbourKeepsWorking) {
  const LoadCase &c = GetParam();
  TempDir dir;
  const std::string library = provider_library(c.provider);
  const std::string manifest = write_manifest(dir, "providers.json", {{c.provider, "test", library}, simdev_entry()});
  Created created = create_context({manifest});
  ASSERT_EQ(created.status, ROOTSPAN_OK) << rootspan_error_message(created.error.get());

  auto report = report_of(created.context.get(), c.provider);
  ASSERT_TRUE(report.has_value());
  EXPECT_TRUE(ReportSays(*report, c.state, c.policy, c.reason, c.reason_names_entry));
  if (c.reason_names_entry) {
    EXPECT_NE(text(report->reason).find("manifest " + manifest + " entry 0 \"" + c.provider + "\""), std::string::npos)
        << describe(*report);
  }
  EXPECT_EQ(text(report->manifest), manifest);
  EXPECT_EQ(text(report->library), library);
  EXPECT_EQ(report->origin, ROOTSPAN_ORIGIN_MANIFEST);
  EXPECT_EQ(report->device_count, 0u);

  // The provider cannot be used; the process and the neighbour go on.
  const auto options = allocate_options(c.provider, 64);
  rootspan_root *root = nullptr;
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_root_allocate(created.context.get(), &options, &root, &raw), ROOTSPAN_ERR_NOT_FOUND);
  rootspan_error_free(raw);
  ExpectSimdevWorks(created.context.get());
  uint64_t live = 1;
  EXPECT_EQ(rootspan_context_destroy(created.context.release(), &live), ROOTSPAN_OK);
  EXPECT_EQ(live, 0u);
}

// Alone, with no static provider, the breach leaves no provider at all: the
// context is refused with every reason in one error (L7).
TEST_P(LoadTimeBreach, AloneLeavesNoProvider) {
  const LoadCase &c = GetParam();
  TempDir dir;
  const std::string manifest = write_manifest(dir, "providers.json", {entry_for(c.provider)});
  Created created = create_context({manifest});
  EXPECT_EQ(created.status, ROOTSPAN_ERR_NO_PROVIDER);
  EXPECT_EQ(created.context, nullptr);
  EXPECT_TRUE(ErrorSays(created.error.get(), ROOTSPAN_ERR_NO_PROVIDER, "L7", "load_manifest",
                        "no provider could be used; 1 reasons:"));
  for (const std::string &piece : c.reason) {
    EXPECT_NE(std::string(rootspan_error_cause(created.error.get())).find(piece), std::string::npos) << piece;
  }
}

// The same table handed to the core in process: the exact code.
class EmbeddedBreach : public ::testing::TestWithParam<LoadCase> {};

TEST_P(EmbeddedBreach, AddedInProcessFailsWithItsCode) {
  const LoadCase &c = GetParam();
  LoadedLibrary simdev(provider_library(kSimdev), RTLD_NOW | RTLD_LOCAL);  // outlives the context
  Created created = create_context({});
  ASSERT_EQ(created.status, ROOTSPAN_OK) << rootspan_error_message(created.error.get());
  {
    LoadedLibrary bad(provider_library(c.provider), RTLD_NOW | RTLD_LOCAL);
    auto entry = reinterpret_cast<rootspan_provider_entry_fn>(bad.symbol(ROOTSPAN_PROVIDER_ENTRY_SYMBOL));
    ASSERT_NE(entry, nullptr) << ::dlerror();
    rootspan_error *raw = nullptr;
    EXPECT_EQ(rootspan_context_add_provider(created.context.get(), entry, nullptr, &raw), *c.embedded_code);
    ErrorPtr error(raw);
    // Negotiation cites L6; a failing init is the provider's own failure and
    // names no loader policy (the manifest path reports it under L7).
    const bool negotiation = *c.embedded_code != ROOTSPAN_ERR_PROVIDER_FAILURE;
    EXPECT_TRUE(ErrorSays(error.get(), *c.embedded_code, negotiation ? "L6" : "", "load_plugin", c.reason.front()));
  }
  EXPECT_TRUE(reports_of(created.context.get()).empty());
  // The context goes on: the neighbour, added the same way, works.
  auto entry = reinterpret_cast<rootspan_provider_entry_fn>(simdev.symbol(ROOTSPAN_PROVIDER_ENTRY_SYMBOL));
  ASSERT_NE(entry, nullptr);
  ASSERT_EQ(rootspan_context_add_provider(created.context.get(), entry, nullptr, nullptr), ROOTSPAN_OK);
  ExpectSimdevWorks(created.context.get());
}

INSTANTIATE_TEST_SUITE_P(Plugins, LoadTimeBreach, ::testing::ValuesIn(kLoadCases),
                         [](const auto &info) { return std::string(info.param.label); });

std::vector<LoadCase> embedded_cases() {
  std::vector<LoadCase> cases;
  for (const LoadCase &c : kLoadCases) {
    if (c.embedded_code) cases.push_back(c);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Plugins, EmbeddedBreach, ::testing::ValuesIn(embedded_cases()),
                         [](const auto &info) { return std::string(info.param.label); });

// Duplicate name (L6): a second library whose provider is also named "simdev".
TEST(DuplicateName, SecondProviderOfOneNameIsSkipped) {
  TempDir dir;
  const std::string duplicate = provider_library("duplicate-name");
  const std::string manifest = write_manifest(dir, "providers.json", {simdev_entry(), {kSimdev, "test", duplicate}});
  Created created = create_context({manifest});
  ASSERT_EQ(created.status, ROOTSPAN_OK) << rootspan_error_message(created.error.get());

  auto first = report_of(created.context.get(), kSimdev, provider_library(kSimdev));
  auto second = report_of(created.context.get(), kSimdev, duplicate);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->state, ROOTSPAN_PROVIDER_LOADED);
  EXPECT_TRUE(ReportSays(*second, ROOTSPAN_PROVIDER_SKIPPED, "L6", {"a provider named 'simdev' is already loaded"}));
  ExpectSimdevWorks(created.context.get());
}

TEST(DuplicateName, AcrossTwoManifestsTheFirstWins) {
  TempDir dir;
  const std::string duplicate = provider_library("duplicate-name");
  const std::string first_manifest = write_manifest(dir, "10-simdev.json", {simdev_entry()});
  const std::string second_manifest = write_manifest(dir, "20-duplicate.json", {{kSimdev, "test", duplicate}});
  Created created = create_context({first_manifest, second_manifest});
  ASSERT_EQ(created.status, ROOTSPAN_OK) << rootspan_error_message(created.error.get());
  auto second = report_of(created.context.get(), kSimdev, duplicate);
  ASSERT_TRUE(second);
  EXPECT_TRUE(ReportSays(*second, ROOTSPAN_PROVIDER_SKIPPED, "L6", {"a provider named 'simdev' is already loaded"}));
  EXPECT_EQ(text(second->manifest), second_manifest);
  ExpectSimdevWorks(created.context.get());

  // In process too: the exact code.
  LoadedLibrary library(duplicate, RTLD_NOW | RTLD_LOCAL);
  auto entry = reinterpret_cast<rootspan_provider_entry_fn>(library.symbol(ROOTSPAN_PROVIDER_ENTRY_SYMBOL));
  ASSERT_NE(entry, nullptr);
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_context_add_provider(created.context.get(), entry, nullptr, &raw), ROOTSPAN_ERR_PLUGIN_REJECTED);
  ErrorPtr error(raw);
  EXPECT_TRUE(ErrorSays(error.get(), ROOTSPAN_ERR_PLUGIN_REJECTED, "L6", "load_plugin",
                        "a provider named 'simdev' is already loaded"));
  ExpectSimdevWorks(created.context.get());
}

// ---- import time (L9) -------------------------------------------------------

struct ImportCase {
  const char *label;
  const char *provider;
  rootspan_status code;
  const char *policy;  // "" where no loader policy applies
  const char *cause;
  std::optional<std::pair<std::uint64_t, std::uint64_t>> values;
};

void PrintTo(const ImportCase &c, std::ostream *os) { *os << c.label; }

const ImportCase kImportCases[] = {
    {"DomainNotGranted", "foreign-domain", ROOTSPAN_ERR_DOMAIN_NOT_GRANTED, "L9",
     "provider 'foreign-domain' reported domain 18446744073709551615, which it was not granted", std::nullopt},
    // The offset is also misaligned: overflow is checked first (docs/concepts.md).
    {"ExtentOverflow", "extent-overflow", ROOTSPAN_ERR_RANGE_OVERFLOW, "L9",
     "offset 18446744073709551607 + length 256 overflows 64 bits", std::nullopt},
    {"MisalignedOffset", "misaligned-offset", ROOTSPAN_ERR_MISALIGNED_OFFSET, "L9",
     "offset 8 is not a multiple of alignment 64", std::make_pair(0, 8)},
    {"PointerMissesClaimedAlignment", "misaligned-pointer", ROOTSPAN_ERR_MISALIGNED, "L9",
     "provider 'misaligned-pointer' claims alignment 64 but its host pointer is 16 bytes past an aligned address",
     std::make_pair(0, 16)},
    // Hooks must not throw (provider.h): the core catches it; no loader policy.
    {"ExceptionInsideTheProvider", "throws", ROOTSPAN_ERR_PROVIDER_FAILURE, "",
     "provider 'throws' allocate failed (ProviderFailure): threw an exception: allocate threw on purpose",
     std::nullopt},
};

class ImportBreach : public ::testing::TestWithParam<ImportCase> {};

TEST_P(ImportBreach, AllocateFailsAndTheNeighbourKeepsWorking) {
  const ImportCase &c = GetParam();
  TempDir dir;
  const std::string manifest = write_manifest(dir, "providers.json", {entry_for(c.provider), simdev_entry()});
  Created created = create_context({manifest});
  ASSERT_EQ(created.status, ROOTSPAN_OK) << rootspan_error_message(created.error.get());
  auto report = report_of(created.context.get(), c.provider);
  ASSERT_TRUE(report);
  ASSERT_EQ(report->state, ROOTSPAN_PROVIDER_LOADED) << describe(*report);

  for (int attempt = 0; attempt < 2; ++attempt) {  // the same, every time
    const auto options = allocate_options(c.provider, 256);
    rootspan_root *root = nullptr;
    rootspan_error *raw = nullptr;
    EXPECT_EQ(rootspan_root_allocate(created.context.get(), &options, &root, &raw), c.code);
    ErrorPtr error(raw);
    EXPECT_EQ(root, nullptr);
    EXPECT_TRUE(ErrorSays(error.get(), c.code, c.policy, "root_allocate", c.cause));
    if (c.values) {
      EXPECT_TRUE(ErrorValues(error.get(), c.values->first, c.values->second));
    }
    // The core released the rejected allocation, exactly once.
    EXPECT_EQ(live_allocations(c.provider), 0);
  }
  ExpectSimdevWorks(created.context.get());
  uint64_t live = 1;
  EXPECT_EQ(rootspan_context_destroy(created.context.release(), &live), ROOTSPAN_OK);
  EXPECT_EQ(live, 0u);
}

INSTANTIATE_TEST_SUITE_P(Plugins, ImportBreach, ::testing::ValuesIn(kImportCases),
                         [](const auto &info) { return std::string(info.param.label); });

// Duplicate key (L9): the second live allocation with the key of the first.
TEST(ImportBreach, DuplicateKeyIsRefusedWhileTheFirstRootLives) {
  TempDir dir;
  const std::string manifest = write_manifest(dir, "providers.json", {entry_for("duplicate-key"), simdev_entry()});
  Created created = create_context({manifest});
  ASSERT_EQ(created.status, ROOTSPAN_OK) << rootspan_error_message(created.error.get());
  const auto options = allocate_options("duplicate-key", 128);
  rootspan_root *first = nullptr;
  ASSERT_EQ(rootspan_root_allocate(created.context.get(), &options, &first, nullptr), ROOTSPAN_OK);
  rootspan_root_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(rootspan_root_get_info(first, &info), ROOTSPAN_OK);

  rootspan_root *second = nullptr;
  rootspan_error *raw = nullptr;
  EXPECT_EQ(rootspan_root_allocate(created.context.get(), &options, &second, &raw), ROOTSPAN_ERR_DUPLICATE_IDENTITY);
  ErrorPtr error(raw);
  EXPECT_TRUE(ErrorSays(
      error.get(), ROOTSPAN_ERR_DUPLICATE_IDENTITY, "L9", "root_allocate",
      "live root " + std::to_string(info.root_id) + " already has key (" + std::to_string(info.key.domain) + ",1)"));
  EXPECT_EQ(second, nullptr);
  EXPECT_EQ(live_allocations("duplicate-key"), 1);  // the refused one released, the first kept

  // The first root is untouched; once it is gone the key is free again.
  rootspan_claim *claim = nullptr;
  ASSERT_EQ(rootspan_claim_acquire(first, 0, 128, ROOTSPAN_CLAIM_EXCLUSIVE, &claim, nullptr), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_claim_release(claim, nullptr), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_root_release(first, nullptr), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_root_allocate(created.context.get(), &options, &second, nullptr), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_root_release(second, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(live_allocations("duplicate-key"), 0);
  ExpectSimdevWorks(created.context.get());
}

// ---- mappings (docs/concepts.md, checked on what the provider returned) ----------

struct MappingCase {
  const char *label;
  const char *provider;
  rootspan_dtype dtype;
  rootspan_status code;
  const char *cause;
  std::pair<std::uint64_t, std::uint64_t> values;  // expected, actual
};

void PrintTo(const MappingCase &c, std::ostream *os) { *os << c.label; }

const MappingCase kMappingCases[] = {
    {"WrongLength",
     "map-length",
     ROOTSPAN_DTYPE_NONE,
     ROOTSPAN_ERR_LENGTH_MISMATCH,
     "provider 'map-length' mapped 72 bytes for a span of 64",
     {64, 72}},
    {"MisalignedPointer",
     "map-misaligned",
     ROOTSPAN_DTYPE_F32,
     ROOTSPAN_ERR_MISALIGNED,
     "provider 'map-misaligned' returned a pointer 1 bytes past 4-byte alignment",
     {0, 1}},
};

class MappingBreach : public ::testing::TestWithParam<MappingCase> {};

TEST_P(MappingBreach, MapFailsEveryTimeAndTheNeighbourKeepsWorking) {
  const MappingCase &c = GetParam();
  TempDir dir;
  const std::string manifest = write_manifest(dir, "providers.json", {entry_for(c.provider), simdev_entry()});
  Created created = create_context({manifest});
  ASSERT_EQ(created.status, ROOTSPAN_OK) << rootspan_error_message(created.error.get());
  const auto options = allocate_options(c.provider, 256);
  rootspan_root *root = nullptr;
  ASSERT_EQ(rootspan_root_allocate(created.context.get(), &options, &root, nullptr), ROOTSPAN_OK);
  rootspan_claim *claim = nullptr;
  ASSERT_EQ(rootspan_claim_acquire(root, 0, 256, ROOTSPAN_CLAIM_EXCLUSIVE, &claim, nullptr), ROOTSPAN_OK);

  for (const bool write : {false, true}) {
    SCOPED_TRACE(write ? "map_write" : "map_read");
    rootspan_mapping *mapping = nullptr;
    rootspan_error *raw = nullptr;
    const rootspan_status status = write ? rootspan_map_write(claim, c.dtype, 64, 64, &mapping, &raw)
                                         : rootspan_map_read(claim, c.dtype, 64, 64, &mapping, &raw);
    EXPECT_EQ(status, c.code);
    ErrorPtr error(raw);
    EXPECT_EQ(mapping, nullptr);
    EXPECT_TRUE(ErrorSays(error.get(), c.code, std::nullopt, write ? "map_write" : "map_read", c.cause));
    EXPECT_TRUE(ErrorValues(error.get(), c.values.first, c.values.second));
    rootspan_span span{};
    span.struct_size = sizeof span;
    ASSERT_EQ(rootspan_error_resolution(error.get(), &span), 1);  // it resolved, the provider's answer failed
    EXPECT_EQ(span.offset, 64u);
    EXPECT_EQ(span.length, 64u);
  }
  // Nothing was left mapped: the claim and the root go, and the memory with them.
  ASSERT_EQ(rootspan_claim_release(claim, nullptr), ROOTSPAN_OK);
  ASSERT_EQ(rootspan_root_release(root, nullptr), ROOTSPAN_OK);
  EXPECT_EQ(live_allocations(c.provider), 0);
  ExpectSimdevWorks(created.context.get());
}

INSTANTIATE_TEST_SUITE_P(Plugins, MappingBreach, ::testing::ValuesIn(kMappingCases),
                         [](const auto &info) { return std::string(info.param.label); });

// ---- one manifest, one good entry, several bad ones (L7) -------------------

TEST(OneManifestManyBreaches, TheGoodEntryLoadsAndEachBadOneHasItsOwnReason) {
  TempDir dir;
  const std::string missing = (dir.path() / "librootspan-tp-nowhere.so").string();
  const std::string manifest =
      write_manifest(dir, "providers.json",
                     {
                         entry_for("abi-major"),
                         entry_for("no-entry"),
                         simdev_entry(),
                         entry_for("needs-absent"),
                         entry_for("name-differs"),
                         entry_for("init-fails"),
                         {"nowhere", "test", missing},
                         {"abi-minor", "test", provider_library("abi-minor"), 1, 0},  // declared too old: never loaded
                         {"null-required", "test", provider_library("null-required"), 1, 1, false},
                         {kSimdev, "test", provider_library("duplicate-name")},
                     });
  Created created = create_context({manifest});
  ASSERT_EQ(created.status, ROOTSPAN_OK) << rootspan_error_message(created.error.get());
  const auto reports = reports_of(created.context.get());
  ASSERT_EQ(reports.size(), 10u);

  struct Expected {
    const char *name;
    const char *library;  // "": provider_library(name)
    rootspan_provider_state state;
    const char *policy;
    const char *piece;
    bool cites_policy = true;
  };
  const Expected expected[] = {
      {"abi-major", "", ROOTSPAN_PROVIDER_SKIPPED, "L6", "ABI major differs"},
      {"no-entry", "", ROOTSPAN_PROVIDER_SKIPPED, "L6", "does not export the provider entry symbol"},
      {"needs-absent", "", ROOTSPAN_PROVIDER_SKIPPED, "L5", "librootspan-tp-absent.so: cannot open shared object"},
      {"name-differs", "", ROOTSPAN_PROVIDER_SKIPPED, "L6", "provider name differs from the manifest"},
      {"init-fails", "", ROOTSPAN_PROVIDER_FAILED, "L7", "simulated init failure", false},
      {"nowhere", missing.c_str(), ROOTSPAN_PROVIDER_SKIPPED, "L4", "does not exist"},
      {"abi-minor", "", ROOTSPAN_PROVIDER_SKIPPED, "L6", "declares provider ABI minor 0 (expected at least 1"},
      {"null-required", "", ROOTSPAN_PROVIDER_SKIPPED, "L7", "entry 8 \"null-required\" is disabled", false},
  };
  std::set<std::string> reasons;
  for (const Expected &e : expected) {
    SCOPED_TRACE(e.name);
    auto report = report_of(created.context.get(), e.name);
    ASSERT_TRUE(report);
    EXPECT_TRUE(ReportSays(*report, e.state, e.policy, {e.piece}, e.cites_policy));
    EXPECT_EQ(text(report->library), *e.library == '\0' ? provider_library(e.name) : std::string(e.library));
    EXPECT_TRUE(reasons.insert(text(report->reason)).second) << "two entries share a reason";
  }
  auto duplicate = report_of(created.context.get(), kSimdev, provider_library("duplicate-name"));
  ASSERT_TRUE(duplicate);
  EXPECT_TRUE(ReportSays(*duplicate, ROOTSPAN_PROVIDER_SKIPPED, "L6", {"already loaded"}));

  // The good entry is the only one loaded, and every report names this manifest.
  std::size_t loaded = 0;
  for (const auto &r : reports) {
    loaded += r.state == ROOTSPAN_PROVIDER_LOADED;
    EXPECT_EQ(text(r.manifest), manifest) << describe(r);
  }
  EXPECT_EQ(loaded, 1u);
  ExpectSimdevWorks(created.context.get());
}

}  // namespace
}  // namespace rootspan::testing
