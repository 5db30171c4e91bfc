#include "core/loader/manifest.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/loader/abi_negotiation.hpp"
#include "core/loader/library_location.hpp"
#include "core/loader/trusted_path.hpp"
#include "core/text/name_token.hpp"
#include "core/text/quoting.hpp"
#include "core/text/strict_json.hpp"
#include "rootspan/provider.h"

namespace rootspan {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char *kOperation = "load_manifest";

// A manifest is a few kilobytes; the limits keep a hostile file from costing
// memory or stack (the options object is re-serialized recursively).
constexpr std::uintmax_t kMaxManifestBytes = 16u << 20;
constexpr std::size_t kMaxNesting = 64;

std::string origin_text(const fs::path &origin) { return origin.empty() ? "<text>" : origin.string(); }

Diagnostic file_error(rootspan_status code, const fs::path &origin, const std::string &what) {
  Diagnostic d = make_error(code, kOperation, origin_text(origin) + ": " + what);
  d.policy = "L1";
  return d;
}

Diagnostic file_error(const fs::path &origin, const std::string &what, std::uint64_t expected, std::uint64_t actual) {
  Diagnostic d = file_error(ROOTSPAN_ERR_INVALID_MANIFEST, origin, what);
  d.values = std::make_pair(expected, actual);
  return d;
}

// The deepest bracket nesting of text, outside strings; checked before parsing
// so a hostile file cannot exhaust the stack.
std::size_t nesting_depth(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// One decimal component of a version: digits only, no leading zero, fits 32 bits.
std::optional<std::uint32_t> version_component(std::string_view s) {
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  std::uint32_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<ManifestVersion> parse_version(const std::string &text) {
  std::string_view rest = text;
  std::uint32_t parts[3];
  for (int i = 0; i < 3; ++i) {
    std::size_t dot = i < 2 ? rest.find('.') : rest.size();
    if (dot == std::string_view::npos) return std::nullopt;
    auto part = version_component(rest.substr(0, dot));
    if (!part) return std::nullopt;
    parts[i] = *part;
    rest = dot < rest.size() ? rest.substr(dot + 1) : std::string_view();
  }
  return ManifestVersion{parts[0], parts[1], parts[2], text};
}

bool valid_sha256(const std::string &s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string json_type(const json &j) {
  if (j.is_number_float()) return "number " + j.dump();
  if (j.is_number_integer()) return "integer " + j.dump();
  if (j.is_string()) return "string " + quoted_text(j.get_ref<const std::string &>());
  return j.type_name();
}

// Reads the fields of one entry; the first broken rule is the reason it is skipped.
class EntryReader {
 public:
  EntryReader(const fs::path &origin, const fs::path &real, std::size_t index, const json &j,
              std::vector<std::string> &notes)
      : origin_(origin), real_(real), index_(index), j_(j), notes_(notes) {}

  std::optional<ManifestEntry> read(SkippedEntry &skipped) {
    skipped.index = index_;
    if (!j_.is_object()) {
      fail("L7", "expected an object, actual " + json_type(j_));
      return finish(skipped);
    }
    peek_string("name", skipped.name);
    peek_string("kind", skipped.kind);
    peek_string("library", skipped.library);
    name_ = skipped.name;

    ManifestEntry e;
    e.manifest = origin_;
    e.index = index_;
    if (!token("name", e.name) || !token("kind", e.kind) || !library(e) || !abi(e) || !flags(e) || !sha256(e) ||
        !dependencies_sha256(e) || !options(e)) {
      return finish(skipped);
    }
    for (const auto &[key, value] : j_.items()) {
      static constexpr const char *kKnown[] = {
          "name", "kind", "library", "abi", "enabled", "priority", "sha256", "options", "dependencies_sha256"};
      bool known = false;
      for (const char *k : kKnown) known = known || key == k;
      if (!known) notes_.push_back(where() + ": unknown key " + quoted_text(key) + " ignored");
    }
    return e;
  }

 private:
  std::string where() const {
    std::string s = origin_text(origin_) + ": entry " + std::to_string(index_);
    if (!name_.empty()) s += " " + quoted_text(name_);
    return s;
  }

  void fail(const char *policy, const std::string &reason, rootspan_status code = ROOTSPAN_ERR_INVALID_MANIFEST) {
    error_ = make_error(code, kOperation, where() + ": " + reason);
    error_.policy = policy;
  }

  void fail(const char *policy, const std::string &reason, std::uint64_t expected, std::uint64_t actual,
            rootspan_status code) {
    fail(policy, reason, code);
    error_.values = std::make_pair(expected, actual);
  }

  std::nullopt_t finish(SkippedEntry &skipped) {
    skipped.error = error_;
    return std::nullopt;
  }

  void peek_string(const char *key, std::string &out) const {
    auto it = j_.find(key);
    if (it != j_.end() && it->is_string()) out = it->get<std::string>();
  }

  // Every entry error names its field, what was expected and what was found.
  bool type_error(const std::string &field, const char *expected, const json &actual) {
    fail("L7", quoted_text(field) + ": expected " + expected + ", actual " + json_type(actual));
    return false;
  }

  bool token(const char *key, std::string &out) {
    auto it = j_.find(key);
    if (it == j_.end()) {
      fail("L7", quoted_text(key) + ": missing (expected a string)");
      return false;
    }
    if (!it->is_string()) return type_error(key, "a string", *it);
    out = it->get<std::string>();
    if (const std::string problem = name_token_problem(out); !problem.empty()) {
      fail("L7", quoted_text(key) + ": expected " + std::string(kNameTokenRule) + ", actual " + quoted_text(out) +
                     " (" + problem + ")");
      return false;
    }
    return true;
  }

  bool library(ManifestEntry &e) {
    auto it = j_.find("library");
    if (it == j_.end()) {
      fail("L7", "\"library\": missing (expected a string)");
      return false;
    }
    if (!it->is_string()) return type_error("library", "a string", *it);
    e.library = it->get<std::string>();
    auto location = resolve_library(e.library, real_);
    if (!location) {
      fail("L2", location.error()->cause);
      return false;
    }
    e.library_path = location.value().path;
    e.system_search = location.value().system_search;
    return true;
  }

  bool unsigned32(const json &object, const char *key, const std::string &field, std::uint32_t &out) {
    auto it = object.find(key);
    if (it == object.end()) {
      fail("L7", quoted_text(field) + ": missing (expected an integer)");
      return false;
    }
    if (!it->is_number_integer()) return type_error(field, "an integer", *it);
    if (it->is_number_unsigned() && it->get<std::uint64_t>() <= std::numeric_limits<std::uint32_t>::max()) {
      out = it->get<std::uint32_t>();
      return true;
    }
    return type_error(field, "an integer in [0, 4294967295]", *it);
  }

  // The ABI the entry declares. An entry this core cannot speak is skipped
  // here, citing L6, so its library is never loaded.
  bool abi(ManifestEntry &e) {
    auto it = j_.find("abi");
    if (it == j_.end()) {
      fail("L7", "\"abi\": missing (expected an object {\"major\", \"minor\"})");
      return false;
    }
    if (!it->is_object()) return type_error("abi", "an object {\"major\", \"minor\"}", *it);
    if (!unsigned32(*it, "major", "abi.major", e.abi_major) || !unsigned32(*it, "minor", "abi.minor", e.abi_minor)) {
      return false;
    }
    if (auto refusal = refuse_declared_abi(e.abi_major, e.abi_minor)) {
      fail("L6", refusal->reason, refusal->expected, refusal->actual, ROOTSPAN_ERR_ABI_MISMATCH);
      return false;
    }
    return true;
  }

  bool flags(ManifestEntry &e) {
    if (auto it = j_.find("enabled"); it != j_.end()) {
      if (!it->is_boolean()) return type_error("enabled", "a boolean", *it);
      e.enabled = it->get<bool>();
    }
    if (auto it = j_.find("priority"); it != j_.end()) {
      if (!it->is_number_integer()) return type_error("priority", "an integer", *it);
      bool fits = it->is_number_unsigned()
                      ? it->get<std::uint64_t>() <= std::uint64_t{std::numeric_limits<std::int32_t>::max()}
                      : it->get<std::int64_t>() >= std::numeric_limits<std::int32_t>::min() &&
                            it->get<std::int64_t>() <= std::numeric_limits<std::int32_t>::max();
      if (!fits) return type_error("priority", "an integer in [-2147483648, 2147483647]", *it);
      e.priority = it->get<std::int32_t>();
    }
    return true;
  }

  bool sha256(ManifestEntry &e) {
    auto it = j_.find("sha256");
    if (it == j_.end()) return true;
    if (!it->is_string()) return type_error("sha256", "a string of 64 lowercase hex digits", *it);
    std::string digest = it->get<std::string>();
    if (!valid_sha256(digest)) {
      fail("L7", "\"sha256\": expected 64 lowercase hex digits, actual " + quoted_text(digest) + " (" +
                     std::to_string(digest.size()) + " characters)");
      if (digest.size() != 64) error_.values = std::make_pair(std::uint64_t{64}, std::uint64_t{digest.size()});
      return false;
    }
    e.sha256 = std::move(digest);
    return true;
  }

  bool dependencies_sha256(ManifestEntry &e) {
    auto it = j_.find("dependencies_sha256");
    if (it == j_.end()) return true;
    if (!it->is_object()) return type_error("dependencies_sha256", "an object {\"libname.so\": \"sha256\"}", *it);
    for (const auto &[soname, digest] : it->items()) {
      const std::string field = "dependencies_sha256." + soname;
      if (soname.empty() || soname.find('/') != std::string::npos || soname.find('\0') != std::string::npos) {
        fail("L7", "\"dependencies_sha256\": expected keys that are library file names (no '/'), actual " +
                       quoted_text(soname));
        return false;
      }
      if (!digest.is_string()) return type_error(field, "a string of 64 lowercase hex digits", digest);
      if (!valid_sha256(digest.get_ref<const std::string &>())) {
        fail("L7", quoted_text(field) + ": expected 64 lowercase hex digits, actual " +
                       quoted_text(digest.get_ref<const std::string &>()));
        return false;
      }
      e.dependencies_sha256.emplace(soname, digest.get<std::string>());
    }
    return true;
  }

  bool options(ManifestEntry &e) {
    auto it = j_.find("options");
    if (it == j_.end()) return true;
    if (!it->is_object()) return type_error("options", "an object", *it);
    e.options_json = it->dump();
    return true;
  }

  const fs::path &origin_;  // the manifest as named, for messages
  const fs::path &real_;    // the manifest file itself, symlinks resolved: L2's base
  std::size_t index_;
  const json &j_;
  std::vector<std::string> &notes_;
  std::string name_;
  Diagnostic error_;
};

Result<Manifest> parse_json(std::string_view text, const fs::path &origin, const fs::path &real) {
  if (std::size_t depth = nesting_depth(text); depth > kMaxNesting) {
    return file_error(origin,
                      "nested " + std::to_string(depth) + " levels deep (expected at most " +
                          std::to_string(kMaxNesting) + ", actual " + std::to_string(depth) + ")",
                      kMaxNesting, depth);
  }
  // The strict reader the checkpoint files use: a manifest decides which code
  // is loaded, so two readers must never see two different manifests (a
  // repeated key, a NUL byte, a byte-order mark are refused).
  auto strict = parse_strict_json(text, ROOTSPAN_ERR_INVALID_MANIFEST, kOperation, "manifest");
  if (!strict) {
    std::string why = strict.error()->cause;
    const std::string subject = "\"manifest\": ";
    if (why.compare(0, subject.size(), subject) == 0) why.erase(0, subject.size());
    return file_error(ROOTSPAN_ERR_INVALID_MANIFEST, origin, "not JSON: " + why);
  }
  json doc = std::move(strict).value();
  if (!doc.is_object()) {
    return file_error(ROOTSPAN_ERR_INVALID_MANIFEST, origin, "expected a JSON object, actual " + json_type(doc));
  }

  Manifest m;
  m.path = origin;

  // L1: the version first; nothing else is read from a file we cannot understand.
  auto version = doc.find("file_format_version");
  if (version == doc.end()) {
    return file_error(ROOTSPAN_ERR_INVALID_MANIFEST, origin,
                      "\"file_format_version\": missing (expected a string \"MAJOR.MINOR.PATCH\")");
  }
  if (!version->is_string()) {
    return file_error(
        ROOTSPAN_ERR_INVALID_MANIFEST, origin,
        "\"file_format_version\": expected a string \"MAJOR.MINOR.PATCH\", actual " + json_type(*version));
  }
  auto parsed = parse_version(version->get<std::string>());
  if (!parsed) {
    return file_error(ROOTSPAN_ERR_INVALID_MANIFEST, origin,
                      "\"file_format_version\": expected \"MAJOR.MINOR.PATCH\" (decimal, no leading zeros), actual " +
                          quoted_text(version->get<std::string>()));
  }
  m.version = *parsed;
  if (m.version.major != kManifestFormatMajor) {
    return file_error(origin,
                      "\"file_format_version\" " + quoted_text(m.version.text) + ": unknown major (expected " +
                          std::to_string(kManifestFormatMajor) + ", actual " + std::to_string(m.version.major) + ")",
                      kManifestFormatMajor, m.version.major);
  }
  if (m.version.minor > kManifestFormatMinor) {
    m.notes.push_back(origin_text(origin) + ": L1: file_format_version " + m.version.text +
                      " is newer than this reader's " + std::to_string(kManifestFormatMajor) + "." +
                      std::to_string(kManifestFormatMinor) + "; read as " + std::to_string(kManifestFormatMajor) + "." +
                      std::to_string(kManifestFormatMinor) + ", unknown keys ignored");
  }

  auto providers = doc.find("providers");
  if (providers == doc.end()) {
    return file_error(ROOTSPAN_ERR_INVALID_MANIFEST, origin, "\"providers\": missing (expected an array)");
  }
  if (!providers->is_array()) {
    return file_error(ROOTSPAN_ERR_INVALID_MANIFEST, origin,
                      "\"providers\": expected an array, actual " + json_type(*providers));
  }
  for (const auto &[key, value] : doc.items()) {
    if (key != "file_format_version" && key != "providers") {
      m.notes.push_back(origin_text(origin) + ": unknown top-level key " + quoted_text(key) + " ignored");
    }
  }

  // L7: each entry stands alone; a bad one is recorded and the rest still load.
  for (std::size_t i = 0; i < providers->size(); ++i) {
    SkippedEntry skipped;
    auto entry = EntryReader(origin, real, i, (*providers)[i], m.notes).read(skipped);
    if (entry) {
      m.entries.push_back(std::move(*entry));
    } else {
      m.skipped.push_back(std::move(skipped));
    }
  }
  return m;
}

}  // namespace

std::string ManifestEntry::describe() const {
  return "manifest " + origin_text(manifest) + " entry " + std::to_string(index) + " " + quoted_text(name);
}

namespace {

Result<Manifest> parse_guarded(std::string_view text, const fs::path &origin, const fs::path &real) {
  try {
    return parse_json(text, origin, real);
  } catch (const std::exception &e) {
    // Only allocation failures or library bugs get here: report, never throw.
    return file_error(ROOTSPAN_ERR_INVALID_MANIFEST, origin, std::string("unexpected error: ") + e.what());
  }
}

}  // namespace

Result<Manifest> parse_manifest(std::string_view text, const fs::path &origin) {
  // A relative origin is taken as the caller's: make it absolute once, here,
  // so that L2 never resolves a library against a later current directory.
  fs::path base = origin;
  if (!base.empty() && !base.is_absolute()) {
    std::error_code ec;
    base = fs::absolute(base, ec);
    if (ec) return file_error(ROOTSPAN_ERR_IO, origin, "cannot make the path absolute: " + ec.message());
  }
  base = base.lexically_normal();
  return parse_guarded(text, base, base);
}

Result<Manifest> read_manifest(const fs::path &path) {
  std::error_code ec;
  fs::path absolute = path.is_absolute() ? path : fs::absolute(path, ec);
  if (ec) return file_error(ROOTSPAN_ERR_IO, path, "cannot make the path absolute: " + ec.message());
  absolute = absolute.lexically_normal();

  // O_NONBLOCK: a FIFO planted in manifest.d must not hang discovery.
  int fd = ::open(absolute.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    return file_error(ROOTSPAN_ERR_IO, absolute, std::string("cannot open: ") + std::strerror(err));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    return file_error(ROOTSPAN_ERR_IO, absolute, std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) return file_error(ROOTSPAN_ERR_IO, absolute, "not a regular file");
  // L3: a manifest names code to run; only a file nobody else can change is read.
  if (auto violation = find_trust_violation(fd)) {
    Diagnostic d = file_error(ROOTSPAN_ERR_INVALID_MANIFEST, absolute, "not trusted: " + violation->describe());
    d.policy = "L3";
    return d;
  }
  if (static_cast<std::uintmax_t>(st.st_size) > kMaxManifestBytes) {
    return file_error(absolute,
                      "is " + std::to_string(st.st_size) + " bytes (expected at most " +
                          std::to_string(kMaxManifestBytes) + ", actual " + std::to_string(st.st_size) + ")",
                      kMaxManifestBytes, static_cast<std::uint64_t>(st.st_size));
  }
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      return file_error(ROOTSPAN_ERR_IO, absolute, std::string("read error: ") + std::strerror(err));
    }
    if (n == 0) break;  // the file shrank while being read: parse what is there
    done += static_cast<std::size_t>(n);
  }
  text.resize(done);

  // L2's base is the directory of the file itself: a manifest.d entry that is
  // a symlink to a package's manifest finds the package's libraries. Asked of
  // the open descriptor, so it is the file that was read.
  fs::path real = fs::read_symlink("/proc/self/fd/" + std::to_string(fd), ec);
  if (ec || !real.is_absolute()) real = absolute;
  return parse_guarded(text, absolute, real);
}

}  // namespace rootspan
