// libFuzzer target for the component schema reader (docs/weight-schema.md): any bytes
// must give components that are each valid with a computable physical size,
// or a Diagnostic — never a crash, hang or exception. Seed corpus:
// tests/fuzz/corpus/schema/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "weights/schema/schema.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  auto schema = rootspan::weights::parse_component_schema(text, "fuzz.json");
  if (schema) {
    std::set<std::string> ids;
    for (const auto &component : schema.value().components) {
      if (!component.validate() || !component.physical_bytes()) std::abort();
      if (!ids.insert(component.id).second) std::abort();
    }
  } else if (schema.error()->code != ROOTSPAN_ERR_INVALID_SCHEMA &&
             schema.error()->code != ROOTSPAN_ERR_OUT_OF_MEMORY) {
    std::abort();
  }
  return 0;
}
