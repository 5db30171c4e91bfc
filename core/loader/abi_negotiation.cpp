#include "core/loader/abi_negotiation.hpp"

#include <algorithm>
#include <cstring>
#include <exception>

#include "core/text/name_token.hpp"
#include "core/text/quoting.hpp"

namespace rootspan {

namespace {

constexpr const char *kOperation = "load_plugin";

// Names and kinds are static C strings of the provider; a bound keeps a
// pointer to garbage from being read without end (past it, or past the
// name-token rule's 64 characters, the name is refused).
constexpr std::size_t kMaxNameLength = 255;

static_assert(sizeof(rootspan_provider_table) >= kMinimumProviderTableSize);

Diagnostic refuse(const ProviderExpectation &expected, const std::string &cause,
                  rootspan_status code = ROOTSPAN_ERR_PLUGIN_REJECTED) {
  Diagnostic d = make_error(code, kOperation, (expected.where.empty() ? "provider" : expected.where) + ": " + cause);
  d.policy = "L6";
  return d;
}

Diagnostic refuse(const ProviderExpectation &expected, const std::string &cause, std::uint64_t want, std::uint64_t got,
                  rootspan_status code = ROOTSPAN_ERR_PLUGIN_REJECTED) {
  Diagnostic d = refuse(expected, cause, code);
  d.values = std::make_pair(want, got);
  return d;
}

std::string version(std::uint32_t major, std::uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// A provider string: set, bounded, and as the manifest says when it says.
std::optional<Diagnostic> check_string(const ProviderExpectation &expected, const char *field, const char *value,
                                       const std::optional<std::string> &want, std::string &out) {
  if (value == nullptr) {
    return refuse(expected, std::string("table field ") + field + " is NULL (expected " +
                                (want ? quoted_text(*want) : std::string("a name")) + ")");
  }
  std::size_t length = ::strnlen(value, kMaxNameLength + 1);
  if (length == 0 || length > kMaxNameLength) {
    return refuse(expected,
                  std::string("table field ") + field + " has length " +
                      (length > kMaxNameLength ? "over " + std::to_string(kMaxNameLength) : std::string("0")) +
                      " (expected 1-" + std::to_string(kMaxNameLength) + " characters)",
                  kMaxNameLength, length);
  }
  out.assign(value, length);
  if (const std::string problem = name_token_problem(out); !problem.empty()) {
    return refuse(expected, std::string("table field ") + field + ": expected " + std::string(kNameTokenRule) +
                                ", actual " + quoted_text(out) + " (" + problem + ")");
  }
  if (want && out != *want) {
    return refuse(expected, std::string("provider ") + field + " differs from the manifest (expected " +
                                quoted_text(*want) + ", actual " + quoted_text(out) + ")");
  }
  return std::nullopt;
}

}  // namespace

ProviderExpectation expectation_for(const ManifestEntry &entry) {
  return {entry.name, entry.kind, entry.describe() + " library " + entry.library_path.string()};
}

std::optional<DeclaredAbiRefusal> refuse_declared_abi(std::uint32_t major, std::uint32_t minor) {
  if (major != ROOTSPAN_PROVIDER_ABI_MAJOR) {
    return DeclaredAbiRefusal{"declares provider ABI major " + std::to_string(major) + " (expected " +
                                  std::to_string(ROOTSPAN_PROVIDER_ABI_MAJOR) + ", actual " + std::to_string(major) +
                                  ")",
                              ROOTSPAN_PROVIDER_ABI_MAJOR, major};
  }
  if (minor < ROOTSPAN_PROVIDER_ABI_MINOR_MIN) {
    return DeclaredAbiRefusal{"declares provider ABI minor " + std::to_string(minor) + " (expected at least " +
                                  std::to_string(ROOTSPAN_PROVIDER_ABI_MINOR_MIN) + ", actual " +
                                  std::to_string(minor) + ")",
                              ROOTSPAN_PROVIDER_ABI_MINOR_MIN, minor};
  }
  return std::nullopt;
}

Result<NegotiatedTable> negotiate(rootspan_provider_entry_fn entry, const ManifestEntry &manifest_entry) {
  return negotiate(entry, expectation_for(manifest_entry));
}

Result<NegotiatedTable> negotiate(rootspan_provider_entry_fn entry, const ProviderExpectation &expected) {
  if (entry == nullptr) return refuse(expected, std::string("no entry function ") + ROOTSPAN_PROVIDER_ENTRY_SYMBOL);

  const rootspan_provider_table *provided = nullptr;
  try {
    provided = entry(ROOTSPAN_PROVIDER_ABI_MAJOR, ROOTSPAN_PROVIDER_ABI_MINOR);
  } catch (const std::exception &e) {
    return refuse(expected, std::string(ROOTSPAN_PROVIDER_ENTRY_SYMBOL) + " threw: " + e.what() +
                                " (expected a table or NULL; providers must not throw)");
  } catch (...) {
    return refuse(expected, std::string(ROOTSPAN_PROVIDER_ENTRY_SYMBOL) +
                                " threw a non-standard exception (expected a table or NULL; providers must not throw)");
  }
  if (provided == nullptr) {
    return refuse(expected, std::string(ROOTSPAN_PROVIDER_ENTRY_SYMBOL) + "(" +
                                version(ROOTSPAN_PROVIDER_ABI_MAJOR, ROOTSPAN_PROVIDER_ABI_MINOR) +
                                ") returned NULL (expected a provider table; the provider cannot serve this core)");
  }

  // Only struct_size may be read before it is known to cover the rest.
  NegotiatedTable out;
  out.provider_struct_size = provided->struct_size;
  if (out.provider_struct_size < kMinimumProviderTableSize) {
    return refuse(expected,
                  "table struct_size " + std::to_string(out.provider_struct_size) +
                      " does not reach the required entries (expected at least " +
                      std::to_string(kMinimumProviderTableSize) + ", actual " +
                      std::to_string(out.provider_struct_size) + ")",
                  kMinimumProviderTableSize, out.provider_struct_size);
  }
  // Past the required entries every field is one function pointer: an older
  // table ends between two of them, never inside one.
  constexpr std::size_t kFirstHook = offsetof(rootspan_provider_table, init);
  if (out.provider_struct_size < ROOTSPAN_PROVIDER_TABLE_STRUCT_SIZE &&
      (out.provider_struct_size - kFirstHook) % sizeof(void (*)()) != 0) {
    return refuse(expected,
                  "table struct_size " + std::to_string(out.provider_struct_size) +
                      " ends inside a function pointer (rootspan_provider_table: expected " +
                      std::to_string(ROOTSPAN_PROVIDER_TABLE_STRUCT_SIZE) + " or the end of an older entry, actual " +
                      std::to_string(out.provider_struct_size) + ")",
                  ROOTSPAN_PROVIDER_TABLE_STRUCT_SIZE, out.provider_struct_size);
  }
  std::memcpy(&out.table, provided,
              std::min<std::size_t>(out.provider_struct_size, ROOTSPAN_PROVIDER_TABLE_STRUCT_SIZE));
  const rootspan_provider_table &t = out.table;
  out.abi_major = t.abi_major;
  out.abi_minor = t.abi_minor;
  out.versions = "provider ABI " + version(t.abi_major, t.abi_minor) + ", core ABI " +
                 version(ROOTSPAN_PROVIDER_ABI_MAJOR, ROOTSPAN_PROVIDER_ABI_MINOR) + " (minimum minor " +
                 std::to_string(ROOTSPAN_PROVIDER_ABI_MINOR_MIN) + ")";

  if (t.abi_major != ROOTSPAN_PROVIDER_ABI_MAJOR) {
    return refuse(expected,
                  "ABI major differs (expected " + std::to_string(ROOTSPAN_PROVIDER_ABI_MAJOR) + ", actual " +
                      std::to_string(t.abi_major) + "; " + out.versions + ")",
                  ROOTSPAN_PROVIDER_ABI_MAJOR, t.abi_major, ROOTSPAN_ERR_ABI_MISMATCH);
  }
  if (t.abi_minor < ROOTSPAN_PROVIDER_ABI_MINOR_MIN) {
    return refuse(expected,
                  "ABI minor too old (expected at least " + std::to_string(ROOTSPAN_PROVIDER_ABI_MINOR_MIN) +
                      ", actual " + std::to_string(t.abi_minor) + "; " + out.versions + ")",
                  ROOTSPAN_PROVIDER_ABI_MINOR_MIN, t.abi_minor, ROOTSPAN_ERR_ABI_MISMATCH);
  }

  if (auto error = check_string(expected, "name", t.name, expected.name, out.name)) return *error;
  if (auto error = check_string(expected, "kind", t.kind, expected.kind, out.kind)) return *error;

  struct Required {
    const char *field;
    bool present;
  };
  const Required required[] = {
      {"init", t.init != nullptr},
      {"shutdown", t.shutdown != nullptr},
      {"device_count", t.device_count != nullptr},
      {"device_info", t.device_info != nullptr},
      {"allocate", t.allocate != nullptr},
      {"release", t.release != nullptr},
  };
  for (const auto &r : required) {
    if (!r.present) {
      return refuse(expected, std::string("required entry ") + r.field + " is NULL (expected a function)");
    }
  }
  // unmap lies past the required prefix: a short table reads it as NULL, and
  // then may not offer mappings either.
  if ((t.map_read != nullptr || t.map_write != nullptr) && t.unmap == nullptr) {
    return refuse(expected, std::string("entry ") + (t.map_read ? "map_read" : "map_write") +
                                " is set but unmap is NULL (expected unmap whenever map_read or map_write is set)");
  }
  return out;
}

}  // namespace rootspan
