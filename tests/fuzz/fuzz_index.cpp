// libFuzzer target for the shard index reader (docs/weight-schema.md): any bytes must
// give an index whose every file name is portable, or a Diagnostic — never a
// crash, hang or exception. Seed corpus: tests/fuzz/corpus/index/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "weights/files/portable_path.hpp"
#include "weights/formats/shard_index.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  auto index = rootspan::weights::parse_shard_index(text, "model.safetensors.index.json");
  if (index) {
    for (const auto &[tensor, file] : index.value().weight_map) {
      if (!rootspan::weights::check_portable_name(file, ROOTSPAN_ERR_INVALID_CHECKPOINT, "fuzz", "fuzz")) std::abort();
    }
  } else if (index.error()->code != ROOTSPAN_ERR_INVALID_CHECKPOINT &&
             index.error()->code != ROOTSPAN_ERR_OUT_OF_MEMORY) {
    std::abort();
  }
  return 0;
}
