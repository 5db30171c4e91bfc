// The manifest reader: L1 (the file as a whole, version first), L2 (where a
// library is) and L7 (a bad entry is skipped, the others load).
#include "core/loader/manifest.hpp"
#include "core/loader/library_location.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace rootspan {
namespace {

using testing::HasPolicy;
using testing::HasValues;
using testing::Mentions;
using testing::TempDir;
namespace fs = std::filesystem;

const std::filesystem::path kOrigin = "/etc/rootspan/manifest.d/10-test.json";

std::string one_entry(const std::string &fields) {
  return R"({"file_format_version": "1.0.0", "providers": [{)" + fields + "}]}";
}

const std::string kGoodFields =
    R"("name": "cuda", "kind": "cuda", "library": "../lib/libcuda-plugin.so", "abi": {"major": 1, "minor": 1})";

Manifest parse_ok(const std::string &text, const std::filesystem::path &origin = kOrigin) {
  auto m = parse_manifest(text, origin);
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error()->message());
  return m ? m.value() : Manifest{};
}

Diagnostic parse_error(const std::string &text, const std::filesystem::path &origin = kOrigin) {
  auto m = parse_manifest(text, origin);
  EXPECT_FALSE(m.has_value());
  return m ? Diagnostic{} : *m.error();
}

// The one entry of a one-entry manifest must be skipped; returns why.
SkippedEntry skipped_one(const std::string &fields) {
  Manifest m = parse_ok(one_entry(fields));
  EXPECT_TRUE(m.entries.empty());
  EXPECT_EQ(m.skipped.size(), 1u);
  return m.skipped.empty() ? SkippedEntry{} : m.skipped[0];
}

// ---- L1 ------------------------------------------------------------------

TEST(ManifestL1, NotJsonFailsTheFile) {
  Diagnostic d = parse_error(R"({"file_format_version": "1.0.0", "providers": [)");
  EXPECT_TRUE(HasPolicy(d, "L1", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_EQ(d.operation, "load_manifest");
  EXPECT_TRUE(Mentions(d, kOrigin.string()));
  EXPECT_TRUE(Mentions(d, "not JSON"));
}

TEST(ManifestL1, ADuplicateKeyFailsTheFile) {
  // Two readers of this file could pick different libraries: refused.
  Diagnostic d = parse_error(R"({"file_format_version": "1.0.0", "providers": [{"name": "a", "name": "b"}]})");
  EXPECT_TRUE(HasPolicy(d, "L1", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_TRUE(Mentions(d, kOrigin.string()));
  EXPECT_TRUE(Mentions(d, "duplicate key \"name\"")) << d.message();
  Diagnostic top = parse_error(R"({"file_format_version": "1.0.0", "file_format_version": "1.0.0", "providers": []})");
  EXPECT_TRUE(Mentions(top, "duplicate key \"file_format_version\"")) << top.message();
  Diagnostic nul = parse_error(std::string(R"({"file_format_version": "1.0.0", "providers": []})") + '\0' + "{}");
  EXPECT_TRUE(Mentions(nul, "NUL byte")) << nul.message();
}

TEST(ManifestL1, TopLevelMustBeAnObject) {
  Diagnostic d = parse_error("[1, 2]");
  EXPECT_TRUE(HasPolicy(d, "L1", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_TRUE(Mentions(d, "expected a JSON object, actual array"));
}

TEST(ManifestL1, VersionMissing) {
  Diagnostic d = parse_error(R"({"providers": []})");
  EXPECT_TRUE(HasPolicy(d, "L1", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_TRUE(Mentions(d, "\"file_format_version\": missing"));
}

TEST(ManifestL1, VersionMustBeAString) {
  Diagnostic d = parse_error(R"({"file_format_version": 1, "providers": []})");
  EXPECT_TRUE(HasPolicy(d, "L1", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_TRUE(Mentions(d, "expected a string \"MAJOR.MINOR.PATCH\", actual integer 1"));
}

TEST(ManifestL1, VersionMustBeMajorMinorPatch) {
  for (const char *bad :
       {"1.0", "1.0.0.0", "01.0.0", "1.a.0", "", "1..0", "-1.0.0", "1.0.0 ", "v1.0.0", "99999999999.0.0"}) {
    Diagnostic d = parse_error(std::string(R"({"file_format_version": ")") + bad + R"(", "providers": []})");
    EXPECT_TRUE(HasPolicy(d, "L1", ROOTSPAN_ERR_INVALID_MANIFEST)) << bad;
    EXPECT_TRUE(Mentions(d, std::string("actual \"") + bad + "\"")) << bad;
  }
}

TEST(ManifestL1, UnknownMajorIsRefused) {
  Diagnostic d = parse_error(R"({"file_format_version": "2.0.0", "providers": []})");
  EXPECT_TRUE(HasPolicy(d, "L1", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_TRUE(HasValues(d, 1, 2));
  EXPECT_TRUE(Mentions(d, "unknown major (expected 1, actual 2)"));
  EXPECT_TRUE(Mentions(d, kOrigin.string()));

  Diagnostic zero = parse_error(R"({"file_format_version": "0.9.0", "providers": []})");
  EXPECT_TRUE(HasValues(zero, 1, 0));
}

TEST(ManifestL1, VersionIsCheckedFirst) {
  // Nothing else of a file of unknown major is judged: not even "providers".
  Diagnostic d = parse_error(R"({"file_format_version": "3.1.4", "providers": "not an array"})");
  EXPECT_TRUE(Mentions(d, "unknown major"));
  EXPECT_FALSE(Mentions(d, "providers"));
}

TEST(ManifestL1, NewerMinorIsReadWithANote) {
  Manifest m =
      parse_ok(R"({"file_format_version": "1.7.2", "providers": [{)" + kGoodFields + R"(, "added_in_1_7": true}]})");
  EXPECT_EQ(m.version.major, 1u);
  EXPECT_EQ(m.version.minor, 7u);
  EXPECT_EQ(m.version.patch, 2u);
  ASSERT_EQ(m.entries.size(), 1u);
  ASSERT_FALSE(m.notes.empty());
  EXPECT_NE(m.notes[0].find("L1"), std::string::npos) << m.notes[0];
  EXPECT_NE(m.notes[0].find("1.7.2 is newer than this reader's 1.0"), std::string::npos) << m.notes[0];
  bool noted_key = false;
  for (const auto &n : m.notes) noted_key = noted_key || n.find("\"added_in_1_7\" ignored") != std::string::npos;
  EXPECT_TRUE(noted_key);
}

TEST(ManifestL1, KnownVersionHasNoNote) {
  Manifest m = parse_ok(one_entry(kGoodFields));
  EXPECT_TRUE(m.notes.empty());
  EXPECT_EQ(m.version.text, "1.0.0");
}

TEST(ManifestL1, ProvidersMustBeAnArray) {
  Diagnostic missing = parse_error(R"({"file_format_version": "1.0.0"})");
  EXPECT_TRUE(HasPolicy(missing, "L1", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_TRUE(Mentions(missing, "\"providers\": missing (expected an array)"));

  Diagnostic object = parse_error(R"({"file_format_version": "1.0.0", "providers": {}})");
  EXPECT_TRUE(HasPolicy(object, "L1", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_TRUE(Mentions(object, "\"providers\": expected an array, actual object"));
}

TEST(ManifestL1, HostileNestingIsRefusedBeforeParsing) {
  std::string deep = R"({"file_format_version": "1.0.0", "providers": [], "x": )" + std::string(100000, '[') +
                     std::string(100000, ']') + "}";
  Diagnostic d = parse_error(deep);
  EXPECT_TRUE(HasPolicy(d, "L1", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_TRUE(HasValues(d, 64, 100001));
}

TEST(ManifestL1, MissingFileIsAnIoError) {
  TempDir dir;
  auto r = read_manifest(dir / "absent.json");
  ASSERT_FALSE(r);
  EXPECT_TRUE(HasPolicy(r.error(), "L1", ROOTSPAN_ERR_IO));
  EXPECT_TRUE(Mentions(r.error(), (dir / "absent.json").string()));
  EXPECT_TRUE(Mentions(r.error(), "No such file or directory"));
}

TEST(ManifestL1, DirectoryIsNotAManifest) {
  TempDir dir;
  auto r = read_manifest(dir.path());
  ASSERT_FALSE(r);
  EXPECT_TRUE(HasPolicy(r.error(), "L1", ROOTSPAN_ERR_IO));
  EXPECT_TRUE(Mentions(r.error(), "not a regular file"));
}

TEST(ManifestL1, ReadsAFile) {
  TempDir dir;
  auto file = dir.write("m.json", one_entry(kGoodFields));
  auto r = read_manifest(file);
  ASSERT_TRUE(r) << r.error()->message();
  EXPECT_EQ(r.value().path, file);
  ASSERT_EQ(r.value().entries.size(), 1u);
  EXPECT_EQ(r.value().entries[0].manifest, file);
}

TEST(ManifestL1, UnknownTopLevelKeyIsNoted) {
  Manifest m = parse_ok(R"({"file_format_version": "1.0.0", "providers": [], "comment": "x"})");
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("\"comment\" ignored"), std::string::npos);
}

// ---- L2 ------------------------------------------------------------------

TEST(ManifestL2, RelativePathResolvesAgainstTheManifestDirectory) {
  Manifest m = parse_ok(one_entry(kGoodFields));
  ASSERT_EQ(m.entries.size(), 1u);
  EXPECT_EQ(m.entries[0].library, "../lib/libcuda-plugin.so");
  EXPECT_EQ(m.entries[0].library_path, "/etc/rootspan/lib/libcuda-plugin.so");
  EXPECT_FALSE(m.entries[0].system_search);
}

TEST(ManifestL2, DotSlashIsTheManifestDirectory) {
  auto r = resolve_library("./libx.so", "/opt/rs/share/manifest.json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r.value().path, "/opt/rs/share/libx.so");
  EXPECT_FALSE(r.value().system_search);
}

TEST(ManifestL2, SymlinkedManifestResolvesAgainstTheRealFile) {
  // manifest.d/50-pkg.json -> pkg/share/pkg.json naming "../lib/libpkg.so".
  TempDir dir;
  fs::path real =
      dir.write("pkg/share/pkg.json", one_entry(R"("name": "pkg", "kind": "k", )"
                                                R"("library": "../lib/libpkg.so", "abi": {"major": 1, "minor": 1})"));
  fs::create_directories(dir / "manifest.d");
  fs::create_symlink(real, dir / "manifest.d/50-pkg.json");
  auto m = read_manifest(dir / "manifest.d/50-pkg.json");
  ASSERT_TRUE(m) << m.error()->message();
  EXPECT_EQ(m.value().path, dir / "manifest.d/50-pkg.json");  // reported as named
  ASSERT_EQ(m.value().entries.size(), 1u);
  EXPECT_EQ(m.value().entries[0].library_path, dir / "pkg/lib/libpkg.so");
}

TEST(ManifestL2, BareNameIsLeftToTheSystemSearch) {
  Manifest m = parse_ok(
      one_entry(R"("name": "cuda", "kind": "cuda", "library": "libcuda-plugin.so", "abi": {"major": 1, "minor": 1})"));
  ASSERT_EQ(m.entries.size(), 1u);
  EXPECT_TRUE(m.entries[0].system_search);
  EXPECT_EQ(m.entries[0].library_path, "libcuda-plugin.so");
}

TEST(ManifestL2, AbsolutePathIsKept) {
  auto r = resolve_library("/usr/lib//rootspan/./libx.so", kOrigin);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.value().path, "/usr/lib/rootspan/libx.so");
}

TEST(ManifestL2, RelativeOriginIsMadeAbsoluteNotLeftToTheCurrentDirectory) {
  Manifest m = parse_ok(one_entry(kGoodFields), "conf/m.json");
  ASSERT_EQ(m.entries.size(), 1u);
  EXPECT_TRUE(m.entries[0].library_path.is_absolute());
  EXPECT_EQ(m.entries[0].library_path, std::filesystem::current_path() / "lib/libcuda-plugin.so");
}

TEST(ManifestL2, RelativeLibraryWithoutADirectoryToResolveAgainstIsSkipped) {
  Manifest m = parse_ok(one_entry(kGoodFields), "");
  ASSERT_EQ(m.skipped.size(), 1u);
  EXPECT_TRUE(HasPolicy(m.skipped[0].error, "L2", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_TRUE(Mentions(m.skipped[0].error, "entry 0 \"cuda\""));
  EXPECT_TRUE(Mentions(m.skipped[0].error, "no absolute directory"));
}

TEST(ManifestL2, EmptyDotOrNulLibraryIsSkipped) {
  for (const char *library : {"", ".", "..", "lib\\u0000evil.so"}) {
    SkippedEntry s = skipped_one(std::string(R"("name": "n", "kind": "k", "abi": {"major": 1, "minor": 1}, )") +
                                 R"("library": ")" + library + "\"");
    EXPECT_TRUE(HasPolicy(s.error, "L2", ROOTSPAN_ERR_INVALID_MANIFEST)) << library;
    EXPECT_TRUE(Mentions(s.error, kOrigin.string() + ": entry 0 \"n\": library")) << library;
  }
}

// ---- L7 ------------------------------------------------------------------

TEST(ManifestL7, BadEntryIsSkippedAndTheOthersLoad) {
  Manifest m = parse_ok(R"({"file_format_version": "1.0.0", "providers": [
      {"name": "a", "kind": "host", "library": "./liba.so", "abi": {"major": 1, "minor": 1}},
      {"kind": "host", "library": "./libb.so", "abi": {"major": 1, "minor": 1}},
      {"name": "c", "kind": "host", "library": "./libc.so", "abi": {"major": 1, "minor": 1}}]})");
  ASSERT_EQ(m.entries.size(), 2u);
  EXPECT_EQ(m.entries[0].name, "a");
  EXPECT_EQ(m.entries[0].index, 0u);
  EXPECT_EQ(m.entries[1].name, "c");
  EXPECT_EQ(m.entries[1].index, 2u);
  ASSERT_EQ(m.skipped.size(), 1u);
  const SkippedEntry &s = m.skipped[0];
  EXPECT_EQ(s.index, 1u);
  EXPECT_EQ(s.kind, "host");
  EXPECT_EQ(s.library, "./libb.so");
  EXPECT_TRUE(HasPolicy(s.error, "L7", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_EQ(s.error.operation, "load_manifest");
  EXPECT_TRUE(Mentions(s.error, kOrigin.string() + ": entry 1: \"name\": missing (expected a string)"));
}

TEST(ManifestL7, EntryMustBeAnObject) {
  SkippedEntry s = parse_ok(R"({"file_format_version": "1.0.0", "providers": ["cuda"]})").skipped.at(0);
  EXPECT_TRUE(HasPolicy(s.error, "L7", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_TRUE(Mentions(s.error, "entry 0: expected an object, actual string \"cuda\""));
}

struct BadField {
  const char *fields;
  const char *message;
};

TEST(ManifestL7, EachBadFieldNamesExpectedAndActual) {
  const BadField cases[] = {
      {R"("name": 5, "kind": "k", "library": "./l.so", "abi": {"major": 1, "minor": 1})",
       "\"name\": expected a string, actual integer 5"},
      {R"("name": "has space", "kind": "k", "library": "./l.so", "abi": {"major": 1, "minor": 1})",
       "\"name\": expected 1-64 characters [A-Za-z0-9_.-] starting with a letter or digit, not \"auto\", actual "
       "\"has space\" (character 3 is byte 0x20)"},
      {R"("name": "auto", "kind": "k", "library": "./l.so", "abi": {"major": 1, "minor": 1})",
       "\"name\": expected 1-64 characters [A-Za-z0-9_.-] starting with a letter or digit, not \"auto\", actual "
       "\"auto\" (reserved: it asks the loader to choose a provider)"},
      // Quoted by the one rule for untrusted text (core/text/quoting.hpp): a
      // control character escaped, never passed into the message.
      {R"("name": "a\nb", "kind": "k", "library": "./l.so", "abi": {"major": 1, "minor": 1})",
       "actual \"a\\nb\" (character 1 is byte 0x0a)"},
      {R"("name": "x", "library": "./l.so", "abi": {"major": 1, "minor": 1})", "\"kind\": missing"},
      {R"("name": "x", "kind": "k", "abi": {"major": 1, "minor": 1})", "\"library\": missing"},
      {R"("name": "x", "kind": "k", "library": ["./l.so"], "abi": {"major": 1, "minor": 1})",
       "\"library\": expected a string, actual array"},
      {R"("name": "x", "kind": "k", "library": "./l.so")", "\"abi\": missing"},
      {R"("name": "x", "kind": "k", "library": "./l.so", "abi": [1, 1])",
       "\"abi\": expected an object {\"major\", \"minor\"}, actual array"},
      {R"("name": "x", "kind": "k", "library": "./l.so", "abi": {"major": "1", "minor": 1})",
       "\"abi.major\": expected an integer, actual string \"1\""},
      {R"("name": "x", "kind": "k", "library": "./l.so", "abi": {"major": 1, "minor": -1})",
       "\"abi.minor\": expected an integer in [0, 4294967295], actual integer -1"},
      {R"("name": "x", "kind": "k", "library": "./l.so", "abi": {"major": 1})", "\"abi.minor\": missing"},
      {R"("name": "x", "kind": "k", "library": "./l.so", "abi": {"major": 1, "minor": 1}, "enabled": "yes")",
       "\"enabled\": expected a boolean, actual string \"yes\""},
      {R"("name": "x", "kind": "k", "library": "./l.so", "abi": {"major": 1, "minor": 1}, "priority": 1.5)",
       "\"priority\": expected an integer, actual number 1.5"},
      {R"("name": "x", "kind": "k", "library": "./l.so", "abi": {"major": 1, "minor": 1}, "priority": 3000000000)",
       "\"priority\": expected an integer in [-2147483648, 2147483647], actual integer 3000000000"},
      {R"("name": "x", "kind": "k", "library": "./l.so", "abi": {"major": 1, "minor": 1}, "options": [1])",
       "\"options\": expected an object, actual array"},
      {R"("name": "x", "kind": "k", "library": "./l.so", "abi": {"major": 1, "minor": 1}, "options": null)",
       "\"options\": expected an object, actual null"},
      {R"("name": "x", "kind": "k", "library": "./l.so", "abi": {"major": 1, "minor": 1}, "sha256": 7)",
       "\"sha256\": expected a string of 64 lowercase hex digits, actual integer 7"},
  };
  for (const auto &c : cases) {
    SkippedEntry s = skipped_one(c.fields);
    EXPECT_TRUE(HasPolicy(s.error, "L7", ROOTSPAN_ERR_INVALID_MANIFEST)) << c.fields;
    EXPECT_TRUE(Mentions(s.error, c.message)) << c.fields;
    EXPECT_TRUE(Mentions(s.error, kOrigin.string() + ": entry 0")) << c.fields;
  }
}

TEST(ManifestL7, Sha256MustBe64LowercaseHexDigits) {
  const std::string fields = kGoodFields + R"(, "sha256": ")";
  SkippedEntry short_digest = skipped_one(fields + "abc\"");
  EXPECT_TRUE(HasPolicy(short_digest.error, "L7", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_TRUE(HasValues(short_digest.error, 64, 3));
  EXPECT_TRUE(
      Mentions(short_digest.error, "entry 0 \"cuda\": \"sha256\": expected 64 lowercase hex digits, actual \"abc\""));

  SkippedEntry upper = skipped_one(fields + std::string(64, 'A') + "\"");
  EXPECT_TRUE(HasPolicy(upper.error, "L7", ROOTSPAN_ERR_INVALID_MANIFEST));
  EXPECT_TRUE(Mentions(upper.error, "(64 characters)"));

  Manifest good = parse_ok(one_entry(fields + std::string(64, 'e') + "\""));
  ASSERT_EQ(good.entries.size(), 1u);
  EXPECT_EQ(good.entries[0].sha256, std::string(64, 'e'));
}

TEST(ManifestL7, DeclaredAbiThisCoreCannotSpeakIsSkippedCitingL6) {
  SkippedEntry major = skipped_one(R"("name": "x", "kind": "k", "library": "./l.so", "abi": {"major": 2, "minor": 0})");
  EXPECT_TRUE(HasPolicy(major.error, "L6", ROOTSPAN_ERR_ABI_MISMATCH));
  EXPECT_TRUE(HasValues(major.error, 1, 2));
  EXPECT_TRUE(Mentions(major.error, "entry 0 \"x\": declares provider ABI major 2 (expected 1, actual 2)"));

  SkippedEntry minor = skipped_one(R"("name": "x", "kind": "k", "library": "./l.so", "abi": {"major": 1, "minor": 0})");
  EXPECT_TRUE(HasPolicy(minor.error, "L6", ROOTSPAN_ERR_ABI_MISMATCH));
  EXPECT_TRUE(HasValues(minor.error, 1, 0));
}

TEST(ManifestL7, DefaultsAndOptions) {
  Manifest m = parse_ok(R"({"file_format_version": "1.0.0", "providers": [
      {"name": "a", "kind": "host", "library": "./liba.so", "abi": {"major": 1, "minor": 1}},
      {"name": "b", "kind": "cuda", "library": "./libb.so", "abi": {"major": 1, "minor": 3}, "enabled": false,
       "priority": -5, "options": {"devices": [0, 1], "label": "x"}}]})");
  ASSERT_EQ(m.entries.size(), 2u);
  const ManifestEntry &a = m.entries[0];
  EXPECT_TRUE(a.enabled);
  EXPECT_EQ(a.priority, 0);
  EXPECT_EQ(a.options_json, "{}");
  EXPECT_FALSE(a.sha256);
  EXPECT_EQ(a.abi_major, 1u);
  EXPECT_EQ(a.abi_minor, 1u);
  const ManifestEntry &b = m.entries[1];
  EXPECT_FALSE(b.enabled);
  EXPECT_EQ(b.priority, -5);
  EXPECT_EQ(b.abi_minor, 3u);
  EXPECT_EQ(b.options_json, R"({"devices":[0,1],"label":"x"})");
  EXPECT_EQ(b.describe(), "manifest " + kOrigin.string() + " entry 1 \"b\"");
}

TEST(ManifestL7, UnknownEntryKeyIsNotedNotFatal) {
  Manifest m = parse_ok(one_entry(kGoodFields + R"(, "priorty": 3)"));
  ASSERT_EQ(m.entries.size(), 1u);
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("entry 0 \"cuda\": unknown key \"priorty\" ignored"), std::string::npos) << m.notes[0];
}

TEST(ManifestL7, EmptyProvidersIsAValidManifest) {
  Manifest m = parse_ok(R"({"file_format_version": "1.0.0", "providers": []})");
  EXPECT_TRUE(m.entries.empty());
  EXPECT_TRUE(m.skipped.empty());
}

}  // namespace
}  // namespace rootspan
