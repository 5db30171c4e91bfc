// Plugin file checks, L4: exists, regular, trusted, ELF of this
// class/byte order/machine, ET_DYN, sha256; all on the one open descriptor.
#include "core/loader/plugin_file_check.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include "test_support.hpp"

namespace rootspan {
namespace {

using testing::HasPolicy;
using testing::HasValues;
using testing::Mentions;
using testing::sha256_hex;
using testing::TempDir;
namespace fs = std::filesystem;

const fs::path kGood = LOADER_TEST_GOOD_PLUGIN;

Diagnostic check_error(const fs::path &path, std::optional<std::string> sha256 = std::nullopt) {
  auto r = check_plugin_file(path, std::move(sha256));
  EXPECT_FALSE(r.has_value()) << path;
  return r ? Diagnostic{} : *r.error();
}

// A copy of the good plugin with bytes patched at offset.
fs::path patched_copy(const TempDir &dir, std::string_view name, std::size_t offset, const void *bytes, std::size_t n) {
  std::string image = testing::read_file(kGood);
  std::memcpy(image.data() + offset, bytes, n);
  fs::path file = dir.write(name, image);
  ::chmod(file.c_str(), 0755);
  return file;
}

TEST(PluginFileL4, GoodPluginPassesAndStaysOpen) {
  auto r = check_plugin_file(kGood);
  ASSERT_TRUE(r) << r.error()->message();
  const CheckedLibrary &lib = r.value();
  EXPECT_TRUE(lib.fd);
  EXPECT_EQ(lib.path, kGood);
  EXPECT_EQ(lib.descriptor_path(), "/proc/self/fd/" + std::to_string(lib.fd.get()));
  EXPECT_EQ(fs::canonical(lib.descriptor_path()), fs::canonical(kGood));
  EXPECT_EQ(lib.size, fs::file_size(kGood));
  EXPECT_FALSE(lib.sha256);
  EXPECT_NE(::fcntl(lib.fd.get(), F_GETFD) & FD_CLOEXEC, 0);
}

TEST(PluginFileL4, MissingFileIsReportedAsMissing) {
  TempDir dir;
  Diagnostic d = check_error(dir / "libabsent.so");
  EXPECT_TRUE(HasPolicy(d, "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_EQ(d.operation, "load_plugin");
  EXPECT_TRUE(Mentions(d, (dir / "libabsent.so").string()));
  EXPECT_TRUE(Mentions(d, "does not exist (expected a library file, actual open: No such file or directory)"));
}

TEST(PluginFileL4, RelativePathIsRefused) {
  Diagnostic d = check_error("plugins/libx.so");
  EXPECT_TRUE(HasPolicy(d, "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "the current directory is never searched"));
}

TEST(PluginFileL4, DirectoryIsNotARegularFile) {
  TempDir dir;
  Diagnostic d = check_error(dir.path());
  EXPECT_TRUE(HasPolicy(d, "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "not a regular file (expected a regular file, actual a directory)"));
}

TEST(PluginFileL4, FifoIsRefusedWithoutBlocking) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo.so").c_str(), 0644), 0);
  Diagnostic d = check_error(dir / "fifo.so");
  EXPECT_TRUE(HasPolicy(d, "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "actual a FIFO"));
}

TEST(PluginFileL4, WorldWritableIsRefused) {
  TempDir dir;
  fs::path copy = dir.copy(kGood, "libworld.so", 0777);
  Diagnostic d = check_error(copy);
  EXPECT_TRUE(HasPolicy(d, "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, copy.string()));
  EXPECT_TRUE(Mentions(d, "not trusted: " + copy.string() + " world-writable (expected owner root"));
  EXPECT_TRUE(Mentions(d, "mode 0777)"));
  EXPECT_TRUE(HasValues(d, 0755, 0777));

  // The same copy without g+w and o+w passes: the mode was the only fault.
  ::chmod(copy.c_str(), 0755);
  EXPECT_TRUE(check_plugin_file(copy));
}

TEST(PluginFileL4, NonElfFileIsRefused) {
  TempDir dir;
  Diagnostic d = check_error(dir.write("libtext.so", "#!/bin/sh\necho not a library\n"));
  EXPECT_TRUE(HasPolicy(d, "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "not an ELF file (expected magic 7f454c46, actual 23212f62)"));

  Diagnostic empty = check_error(dir.write("libempty.so", ""));
  EXPECT_TRUE(Mentions(empty, "not an ELF file (expected magic 7f454c46, actual )"));
}

TEST(PluginFileL4, Elf32ClassIsRefused) {
  // A crafted 32-bit header: magic, ELFCLASS32, little-endian, ET_DYN, EM_386.
  Elf32_Ehdr h{};
  std::memcpy(h.e_ident, ELFMAG, SELFMAG);
  h.e_ident[EI_CLASS] = ELFCLASS32;
  h.e_ident[EI_DATA] = ELFDATA2LSB;
  h.e_ident[EI_VERSION] = EV_CURRENT;
  h.e_type = ET_DYN;
  h.e_machine = EM_386;
  h.e_version = EV_CURRENT;
  h.e_ehsize = sizeof h;
  TempDir dir;
  fs::path file = dir.write("lib32.so", std::string(reinterpret_cast<const char *>(&h), sizeof h));
  Diagnostic d = check_error(file);
  EXPECT_TRUE(HasPolicy(d, "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "ELF class does not match this process (expected ELFCLASS64, actual ELFCLASS32)"));
  EXPECT_TRUE(HasValues(d, ELFCLASS64, ELFCLASS32));
}

TEST(PluginFileL4, OtherByteOrderIsRefused) {
  TempDir dir;
  const unsigned char big_endian = ELFDATA2MSB;
  Diagnostic d = check_error(patched_copy(dir, "libbe.so", EI_DATA, &big_endian, 1));
  EXPECT_TRUE(HasPolicy(d, "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "expected little-endian, actual big-endian"));
}

TEST(PluginFileL4, TruncatedHeaderIsRefused) {
  TempDir dir;
  std::string head = testing::read_file(kGood).substr(0, 20);
  Diagnostic d = check_error(dir.write("libshort.so", head));
  EXPECT_TRUE(HasPolicy(d, "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(HasValues(d, sizeof(Elf64_Ehdr), 20));
  EXPECT_TRUE(Mentions(d, "truncated ELF header (expected at least 64 bytes, actual 20)"));
}

TEST(PluginFileL4, ExecutableOrObjectIsNotASharedObject) {
  TempDir dir;
  const std::uint16_t exec = ET_EXEC, rel = ET_REL;
  Diagnostic d = check_error(patched_copy(dir, "libexec.so", offsetof(Elf64_Ehdr, e_type), &exec, 2));
  EXPECT_TRUE(HasPolicy(d, "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "not a shared object (expected ET_DYN (shared object), actual ET_EXEC (executable))"));
  EXPECT_TRUE(HasValues(d, ET_DYN, ET_EXEC));
  Diagnostic o = check_error(patched_copy(dir, "libobj.so", offsetof(Elf64_Ehdr, e_type), &rel, 2));
  EXPECT_TRUE(Mentions(o, "actual ET_REL (object file)"));
}

TEST(PluginFileL4, OtherMachineIsRefused) {
#if defined(__x86_64__)
  const std::uint16_t other = EM_AARCH64;
  const char *expected = "expected EM_X86_64, actual EM_AARCH64";
  const std::uint16_t ours = EM_X86_64;
#else
  const std::uint16_t other = EM_X86_64;
  const char *expected = "expected EM_AARCH64, actual EM_X86_64";
  const std::uint16_t ours = EM_AARCH64;
#endif
  TempDir dir;
  Diagnostic d = check_error(patched_copy(dir, "libarm.so", offsetof(Elf64_Ehdr, e_machine), &other, 2));
  EXPECT_TRUE(HasPolicy(d, "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, std::string("built for another machine (") + expected + ")"));
  EXPECT_TRUE(HasValues(d, ours, other));
}

TEST(PluginFileL4, Sha256MatchPasses) {
  const std::string digest = sha256_hex(testing::read_file(kGood));
  auto r = check_plugin_file(kGood, digest);
  ASSERT_TRUE(r) << r.error()->message();
  EXPECT_EQ(r.value().sha256, digest);
}

TEST(PluginFileL4, Sha256MismatchIsRefused) {
  const std::string actual = sha256_hex(testing::read_file(kGood));
  const std::string wrong(64, '0');
  Diagnostic d = check_error(kGood, wrong);
  EXPECT_TRUE(HasPolicy(d, "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, kGood.string()));
  EXPECT_TRUE(Mentions(d, "sha256 does not match (expected " + wrong + ", actual " + actual + ")"));
}

TEST(PluginFileL4, DigestComesFromTheOpenDescriptorNotThePath) {
  TempDir dir;
  fs::path file = dir.copy(kGood, "libswap.so");
  const std::string original = sha256_hex(testing::read_file(file));
  auto r = check_plugin_file(file);
  ASSERT_TRUE(r) << r.error()->message();
  // Swap the file at the path for something else after the check.
  fs::path other = dir.write("other.so", "swapped in after the check");
  fs::rename(other, file);
  auto digest = sha256_of_descriptor(r.value().fd.get(), file);
  ASSERT_TRUE(digest);
  EXPECT_EQ(digest.value(), original);
}

TEST(PluginFileL4, BareNameIsFoundInTheLoaderSearchDirectories) {
  for (const auto &dir : library_search_dirs()) EXPECT_TRUE(dir.is_absolute()) << dir;
  auto found = find_in_library_search_dirs("libc.so.6");
  ASSERT_TRUE(found);
  auto r = check_plugin_file("libc.so.6");
  ASSERT_TRUE(r) << r.error()->message();
  EXPECT_EQ(r.value().path, *found);
  EXPECT_EQ(r.value().requested, "libc.so.6");
}

TEST(PluginFileL4, BareNameNotFoundIsMissing) {
  Diagnostic d = check_error("librootspan-no-such-plugin.so");
  EXPECT_TRUE(HasPolicy(d, "L4", ROOTSPAN_ERR_PLUGIN_REJECTED));
  EXPECT_TRUE(Mentions(d, "plugin librootspan-no-such-plugin.so: does not exist in the library search directories"));
}

}  // namespace
}  // namespace rootspan
