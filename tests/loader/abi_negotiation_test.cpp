// ABI negotiation, L6: the table an entry function returns, checked field by
// field. The entry functions here are in-process fakes driven by one global
// table, so each test breaks exactly one rule.
#include "core/loader/abi_negotiation.hpp"

#include <cstring>
#include <stdexcept>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace rootspan {
namespace {

using testing::HasPolicy;
using testing::HasValues;
using testing::Mentions;

rootspan_status fake_init(const rootspan_core_services *, const char *, rootspan_provider_instance **,
                          rootspan_provider_message *) {
  return ROOTSPAN_OK;
}
void fake_shutdown(rootspan_provider_instance *) {}
rootspan_status fake_device_count(rootspan_provider_instance *, uint32_t *, rootspan_provider_message *) {
  return ROOTSPAN_OK;
}
rootspan_status fake_device_info(rootspan_provider_instance *, uint32_t, rootspan_device_info *,
                                 rootspan_provider_message *) {
  return ROOTSPAN_OK;
}
rootspan_status fake_allocate(rootspan_provider_instance *, const rootspan_allocation_request *,
                              rootspan_provider_allocation *, rootspan_provider_message *) {
  return ROOTSPAN_OK;
}
void fake_release(rootspan_provider_instance *, const rootspan_provider_allocation *) {}
rootspan_status fake_map(rootspan_provider_instance *, const rootspan_provider_allocation *, uint64_t, uint64_t,
                         rootspan_provider_mapping *, rootspan_provider_message *) {
  return ROOTSPAN_OK;
}
void fake_unmap(rootspan_provider_instance *, const rootspan_provider_allocation *, const rootspan_provider_mapping *) {
}

// A table followed by fields from a future minor, for the "newer provider" case.
struct FutureTable {
  rootspan_provider_table table;
  void *future_field;
};

FutureTable g_storage;
rootspan_provider_table &g_table = g_storage.table;
uint32_t g_offered_major = 0, g_offered_minor = 0;

const rootspan_provider_table *entry_returning_table(uint32_t major, uint32_t minor) {
  g_offered_major = major;
  g_offered_minor = minor;
  return &g_table;
}
const rootspan_provider_table *entry_returning_null(uint32_t, uint32_t) { return nullptr; }
const rootspan_provider_table *entry_throwing(uint32_t, uint32_t) { throw std::runtime_error("boom"); }
const rootspan_provider_table *entry_throwing_int(uint32_t, uint32_t) { throw 42; }

class Negotiation : public ::testing::Test {
 protected:
  void SetUp() override {
    std::memset(&g_storage, 0, sizeof g_storage);
    g_table.struct_size = sizeof(rootspan_provider_table);
    g_table.abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR;
    g_table.abi_minor = ROOTSPAN_PROVIDER_ABI_MINOR;
    g_table.name = "cuda";
    g_table.kind = "cuda";
    g_table.init = fake_init;
    g_table.shutdown = fake_shutdown;
    g_table.device_count = fake_device_count;
    g_table.device_info = fake_device_info;
    g_table.allocate = fake_allocate;
    g_table.release = fake_release;
    expected.name = "cuda";
    expected.kind = "cuda";
    expected.where = "manifest /etc/rootspan/manifest.d/10-cuda.json entry 2 \"cuda\" library /opt/libcuda-plugin.so";
  }

  Diagnostic refused(rootspan_provider_entry_fn entry = entry_returning_table) {
    auto r = negotiate(entry, expected);
    EXPECT_FALSE(r.has_value());
    if (r) return {};
    EXPECT_EQ(r.error()->operation, "load_plugin");
    EXPECT_TRUE(Mentions(r.error(), expected.where));
    return r.error();
  }

  ProviderExpectation expected;
};

TEST_F(Negotiation, GoodTableIsAccepted) {
  auto r = negotiate(entry_returning_table, expected);
  ASSERT_TRUE(r) << r.error()->message();
  EXPECT_EQ(g_offered_major, static_cast<uint32_t>(ROOTSPAN_PROVIDER_ABI_MAJOR));
  EXPECT_EQ(g_offered_minor, static_cast<uint32_t>(ROOTSPAN_PROVIDER_ABI_MINOR));
  const NegotiatedTable &t = r.value();
  EXPECT_EQ(t.name, "cuda");
  EXPECT_EQ(t.kind, "cuda");
  EXPECT_EQ(t.provider_struct_size, sizeof(rootspan_provider_table));
  EXPECT_EQ(t.table.allocate, fake_allocate);
  EXPECT_EQ(t.abi_major, static_cast<uint32_t>(ROOTSPAN_PROVIDER_ABI_MAJOR));
  EXPECT_EQ(t.versions, "provider ABI 1.1, core ABI 1.1 (minimum minor 1)");
}

TEST_F(Negotiation, NullEntryFunction) {
  Diagnostic d = refused(nullptr);
  EXPECT_TRUE(HasPolicy(d, "L6", ROOTSPAN_ERR_PLUGIN_REJECTED));
}

TEST_F(Negotiation, NullTableMeansTheProviderCannotServeThisCore) {
  Diagnostic d = refused(entry_returning_null);
  EXPECT_TRUE(HasPolicy(d, "L6", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "rootspan_provider_entry(1.1) returned NULL (expected a provider table"));
}

TEST_F(Negotiation, ThrowingEntryIsCaught) {
  Diagnostic d = refused(entry_throwing);
  EXPECT_TRUE(HasPolicy(d, "L6", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "rootspan_provider_entry threw: boom"));
  Diagnostic other = refused(entry_throwing_int);
  EXPECT_TRUE(Mentions(other, "threw a non-standard exception"));
}

TEST_F(Negotiation, StructSizeMustReachTheRequiredEntries) {
  g_table.struct_size = offsetof(rootspan_provider_table, release);
  Diagnostic d = refused();
  EXPECT_TRUE(HasPolicy(d, "L6", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(HasValues(d, kMinimumProviderTableSize, offsetof(rootspan_provider_table, release)));
  EXPECT_TRUE(Mentions(d, "expected at least " + std::to_string(kMinimumProviderTableSize) + ", actual " +
                              std::to_string(offsetof(rootspan_provider_table, release))));
}

TEST_F(Negotiation, AStructSizeEndingInsideAnOptionalEntryIsRefused) {
  g_table.struct_size = offsetof(rootspan_provider_table, map_read) + 4;
  Diagnostic d = refused();
  EXPECT_TRUE(HasPolicy(d, "L6", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(HasValues(d, ROOTSPAN_PROVIDER_TABLE_STRUCT_SIZE, offsetof(rootspan_provider_table, map_read) + 4));
  EXPECT_TRUE(Mentions(d, "ends inside a function pointer"));
  // An older table that ends between two entries is fine.
  g_table.struct_size = offsetof(rootspan_provider_table, map_read);
  EXPECT_TRUE(negotiate(entry_returning_table, expected).has_value());
}

TEST_F(Negotiation, MajorMustBeEqual) {
  g_table.abi_major = 2;
  Diagnostic d = refused();
  EXPECT_TRUE(HasPolicy(d, "L6", ROOTSPAN_ERR_ABI_MISMATCH));
  EXPECT_TRUE(HasValues(d, 1, 2));
  EXPECT_TRUE(Mentions(d, "ABI major differs (expected 1, actual 2; provider ABI 2.1, core ABI 1.1"));
}

TEST_F(Negotiation, MinorMustBeAtLeastTheMinimum) {
  g_table.abi_minor = 0;
  Diagnostic d = refused();
  EXPECT_TRUE(HasPolicy(d, "L6", ROOTSPAN_ERR_ABI_MISMATCH));
  EXPECT_TRUE(HasValues(d, ROOTSPAN_PROVIDER_ABI_MINOR_MIN, 0));
  EXPECT_TRUE(Mentions(d, "ABI minor too old (expected at least 1, actual 0"));
}

TEST_F(Negotiation, NewerMinorAndLargerTableAreAccepted) {
  g_table.abi_minor = 9;
  g_table.struct_size = sizeof(FutureTable);
  g_storage.future_field = &g_storage;
  auto r = negotiate(entry_returning_table, expected);
  ASSERT_TRUE(r) << r.error()->message();
  EXPECT_EQ(r.value().abi_minor, 9u);
  EXPECT_EQ(r.value().provider_struct_size, sizeof(FutureTable));
  EXPECT_EQ(r.value().table.release, fake_release);
}

TEST_F(Negotiation, FieldsPastTheProvidersStructSizeReadAsNull) {
  // An older, shorter table: whatever lies past its struct_size is not its own.
  g_table.struct_size = kMinimumProviderTableSize;
  g_table.map_read = fake_map;
  g_table.unmap = fake_unmap;
  auto r = negotiate(entry_returning_table, expected);
  ASSERT_TRUE(r) << r.error()->message();
  EXPECT_EQ(r.value().table.release, fake_release);
  EXPECT_EQ(r.value().table.map_read, nullptr);
  EXPECT_EQ(r.value().table.unmap, nullptr);
}

TEST_F(Negotiation, NameAndKindMustBeSet) {
  g_table.name = nullptr;
  Diagnostic d = refused();
  EXPECT_TRUE(HasPolicy(d, "L6", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "table field name is NULL (expected \"cuda\")"));
  g_table.name = "cuda";
  g_table.kind = "";
  EXPECT_TRUE(Mentions(refused(), "table field kind has length 0"));
}

TEST_F(Negotiation, NameMustMatchTheManifest) {
  g_table.name = "host";
  Diagnostic d = refused();
  EXPECT_TRUE(HasPolicy(d, "L6", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "provider name differs from the manifest (expected \"cuda\", actual \"host\")"));
}

TEST_F(Negotiation, KindMustMatchTheManifest) {
  g_table.kind = "rocm";
  Diagnostic d = refused();
  EXPECT_TRUE(HasPolicy(d, "L6", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "provider kind differs from the manifest (expected \"cuda\", actual \"rocm\")"));
}

TEST_F(Negotiation, WithoutAManifestAnyNameIsAccepted) {
  g_table.name = "anything";
  expected.name.reset();
  expected.kind.reset();
  auto r = negotiate(entry_returning_table, expected);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.value().name, "anything");
}

TEST_F(Negotiation, WithoutAManifestTheNameIsStillANameTokenAndNotAuto) {
  // The rule a manifest's name follows holds for the table's own name too.
  expected.name.reset();
  expected.kind.reset();
  for (const char *name : {"auto", "has space", "-dash", "caf\xc3\xa9"}) {
    g_table.name = name;
    const Diagnostic d = refused();
    EXPECT_TRUE(HasPolicy(d, "L6", ROOTSPAN_ERR_PLUGIN_REJECTED)) << name;
    EXPECT_TRUE(Mentions(d, "table field name: expected 1-64 characters [A-Za-z0-9_.-]")) << d.message();
    EXPECT_TRUE(Mentions(d, std::string("actual \"") + name + "\"")) << d.message();
  }
  g_table.name = "auto";
  EXPECT_TRUE(Mentions(refused(), "reserved: it asks the loader to choose a provider"));
}

TEST_F(Negotiation, UnterminatedNameIsBounded) {
  static char long_name[300];
  std::memset(long_name, 'a', sizeof long_name);
  long_name[sizeof long_name - 1] = '\0';
  g_table.name = long_name;
  Diagnostic d = refused();
  EXPECT_TRUE(HasPolicy(d, "L6", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "table field name has length over 255"));
}

TEST_F(Negotiation, EveryRequiredEntryMustBeSet) {
  struct Case {
    const char *field;
    void (*clear)();
  };
  const Case cases[] = {
      {"init", [] { g_table.init = nullptr; }},
      {"shutdown", [] { g_table.shutdown = nullptr; }},
      {"device_count", [] { g_table.device_count = nullptr; }},
      {"device_info", [] { g_table.device_info = nullptr; }},
      {"allocate", [] { g_table.allocate = nullptr; }},
      {"release", [] { g_table.release = nullptr; }},
  };
  for (const auto &c : cases) {
    SetUp();
    c.clear();
    Diagnostic d = refused();
    EXPECT_TRUE(HasPolicy(d, "L6", ROOTSPAN_ERR_PLUGIN_REJECTED)) << c.field;
    EXPECT_TRUE(Mentions(d, std::string("required entry ") + c.field + " is NULL (expected a function)")) << c.field;
  }
}

TEST_F(Negotiation, MappingRequiresUnmap) {
  g_table.map_read = fake_map;
  Diagnostic d = refused();
  EXPECT_TRUE(HasPolicy(d, "L6", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "entry map_read is set but unmap is NULL"));

  g_table.map_read = nullptr;
  g_table.map_write = fake_map;
  EXPECT_TRUE(Mentions(refused(), "entry map_write is set but unmap is NULL"));

  g_table.unmap = fake_unmap;
  EXPECT_TRUE(negotiate(entry_returning_table, expected));
}

TEST_F(Negotiation, ExpectationFromAManifestEntry) {
  ManifestEntry e;
  e.manifest = "/etc/rootspan/manifest.d/10-cuda.json";
  e.index = 2;
  e.name = "cuda";
  e.kind = "cuda";
  e.library_path = "/opt/libcuda-plugin.so";
  ProviderExpectation x = expectation_for(e);
  EXPECT_EQ(x.name, "cuda");
  EXPECT_EQ(x.kind, "cuda");
  EXPECT_EQ(x.where, expected.where);
  g_table.name = "other";
  auto r = negotiate(entry_returning_table, e);
  ASSERT_FALSE(r);
  EXPECT_TRUE(Mentions(r.error(), "entry 2 \"cuda\""));
}

}  // namespace
}  // namespace rootspan
