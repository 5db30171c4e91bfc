// libFuzzer target for the GGUF reader: any bytes must give a validated file
// or a Diagnostic — never a crash, hang, exception, read outside the input or
// a file that breaks the layout rules. Seed corpus: tests/fuzz/corpus/gguf/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "weights/api/gguf_describe.hpp"
#include "weights/files/checked_math.hpp"
#include "weights/formats/gguf.hpp"

namespace {

using rootspan::weights::GgufFile;

// What a successful parse promises: tensors in offset order, each at the
// running sum padded to the alignment, each inside the file, each of the
// size its type and dimensions give; every metadata value describable as
// valid JSON.
void check_promises(const GgufFile &file, std::uint64_t size) {
  const std::uint64_t alignment = file.alignment;
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) std::abort();
  if (file.data_offset % alignment != 0) std::abort();
  std::uint64_t expected = 0;
  for (const auto &tensor : file.tensors) {
    if (tensor.name.empty() || tensor.name.size() >= 64) std::abort();
    if (tensor.ne.empty() || tensor.ne.size() > 4 || tensor.type == nullptr) std::abort();
    if (tensor.offset != expected) std::abort();
    if (tensor.ne[0] % tensor.type->values_per_block != 0) std::abort();
    auto blocks = tensor.ne;
    blocks[0] /= tensor.type->values_per_block;
    const auto count = rootspan::weights::checked_product(blocks);
    if (!count || *count * tensor.type->bytes_per_block != tensor.bytes) std::abort();
    if (file.data_offset + tensor.offset + tensor.bytes > size) std::abort();
    if (file.find_tensor(tensor.name) != &tensor) std::abort();
    const std::uint64_t end = tensor.offset + tensor.bytes;
    expected = (end + alignment - 1) / alignment * alignment;
  }
  for (const auto &[key, value] : file.metadata) {
    if (file.find_value(key) != &value) std::abort();
    (void)rootspan::weights::describe_gguf_value(value).dump();  // throws on invalid UTF-8
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  auto file = rootspan::weights::parse_gguf(std::as_bytes(std::span(data, size)), "fuzz.gguf");
  if (file) check_promises(file.value(), size);
  return 0;
}
