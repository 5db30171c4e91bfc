// Provider ABI negotiation, policy L6 (docs/writing-a-provider.md): the checks on the table
// a provider's entry function returns, before any other of its functions is
// called.
//   - the entry is called with ROOTSPAN_PROVIDER_ABI_MAJOR/MINOR inside
//     try/catch (a C++ provider may throw anyway); NULL means "cannot serve";
//   - struct_size covers at least every required entry (up to `release`);
//   - the provider's major equals the core's, its minor is at least
//     ROOTSPAN_PROVIDER_ABI_MINOR_MIN (else ROOTSPAN_ERR_ABI_MISMATCH);
//   - name and kind are set and, when the manifest gives them, equal to it;
//   - init, shutdown, device_count, device_info, allocate and release are set;
//     map_read or map_write requires unmap.
// The table is copied into a zero-initialized full-size table, copying only
// the provider's struct_size bytes, so a field past what the provider wrote
// reads as NULL. Refusing a second provider of the same name is the registry's
// part of L6, not this file's. Failures other than the version are
// ROOTSPAN_ERR_PLUGIN_REJECTED; all cite "L6", operation "load_plugin".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/diagnostic.hpp"
#include "core/loader/manifest.hpp"
#include "rootspan/provider.h"

namespace rootspan {

// The smallest table a provider may return: everything up to `release`.
inline constexpr std::size_t kMinimumProviderTableSize =
    offsetof(rootspan_provider_table, release) + sizeof(rootspan_provider_table::release);

// What the caller knows of the provider before asking it.
struct ProviderExpectation {
  std::optional<std::string> name;  // nullopt: any name (a static provider)
  std::optional<std::string> kind;
  std::string where;  // names the provider in messages: manifest file, entry, library
};

// The expectation a manifest entry sets: its name, kind, and where it is.
ProviderExpectation expectation_for(const ManifestEntry &entry);

struct NegotiatedTable {
  rootspan_provider_table table{};       // full size; fields past provider_struct_size are NULL
  std::size_t provider_struct_size = 0;  // as the provider set it
  std::uint32_t abi_major = 0;           // the provider's
  std::uint32_t abi_minor = 0;
  std::string name;
  std::string kind;
  std::string versions;  // "provider ABI 1.1, core ABI 1.1 (minimum minor 1)", to be logged
};

// The ABI a manifest entry declares, checked before its library is opened:
// nullopt when this core can speak it, else why not (the major differs, or
// the minor is below ROOTSPAN_PROVIDER_ABI_MINOR_MIN) with the expected and
// actual numbers. The manifest reader skips the entry with it, citing L6.
struct DeclaredAbiRefusal {
  std::string reason;
  std::uint64_t expected = 0;
  std::uint64_t actual = 0;
};
std::optional<DeclaredAbiRefusal> refuse_declared_abi(std::uint32_t major, std::uint32_t minor);

Result<NegotiatedTable> negotiate(rootspan_provider_entry_fn entry, const ProviderExpectation &expected);
Result<NegotiatedTable> negotiate(rootspan_provider_entry_fn entry, const ManifestEntry &manifest_entry);

}  // namespace rootspan
