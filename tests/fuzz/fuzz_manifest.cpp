// libFuzzer target for the manifest reader (docs/troubleshooting.md): any bytes must give a
// Manifest or a Diagnostic, never a crash, hang or exception. Seed corpus:
// tests/fuzz/corpus/manifest/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/loader/manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  auto manifest = rootspan::parse_manifest(text, "/fuzz/rootspan/manifest.d/fuzz.json");
  if (manifest) {
    // Every entry read must satisfy what the reader promises its callers.
    for (const auto &entry : manifest.value().entries) {
      if (entry.name.empty() || entry.kind.empty() || entry.library.empty()) std::abort();
      if (!entry.system_search && !entry.library_path.is_absolute()) std::abort();
      if (entry.sha256 && entry.sha256->size() != 64) std::abort();
      if (entry.options_json.empty() || entry.options_json.front() != '{') std::abort();
    }
    for (const auto &skipped : manifest.value().skipped) {
      if (skipped.error.policy.empty() || skipped.error.message().empty()) std::abort();
    }
  } else if (manifest.error()->policy != "L1") {
    std::abort();
  }
  return 0;
}
