// libFuzzer target for the safetensors reader (docs/weight-schema.md): any bytes, read
// as a whole file and as a header alone, must give a validated header or a
// Diagnostic — never a crash, hang, exception or a header that breaks the
// tiling rules, and never a header the fast reader accepts and the strict
// one refuses, or reads otherwise in place than from its own copy.
// Seed corpus: tests/fuzz/corpus/safetensors_header/.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>

#include "core/text/strict_json.hpp"
#include "weights/files/checked_math.hpp"
#include "weights/formats/safetensors.hpp"
#include "weights/formats/safetensors_fast_reader.hpp"

namespace {

using rootspan::weights::SafetensorsHeader;

// What a successful parse promises: sorted tensors that tile [0, data_size)
// exactly, each holding exactly the bytes its shape and dtype need.
void check_promises(const SafetensorsHeader &header) {
  std::uint64_t cursor = 0;
  std::unordered_set<std::string_view> names;
  for (const auto &tensor : header.tensors()) {
    if (tensor.begin != cursor || tensor.end < tensor.begin) std::abort();
    const auto count = rootspan::weights::checked_product(tensor.shape);
    if (!count) std::abort();
    const auto bits = rootspan::weights::checked_bits(*count, tensor.dtype.bits);
    if (!bits || !bits->whole_bytes() || bits->bytes() != tensor.byte_length()) std::abort();
    if (!names.insert(tensor.name).second) std::abort();  // names are unique
    cursor = tensor.end;
  }
  if (cursor != header.data_size()) std::abort();
}

// The same metadata and tensors, field by field (the readers give tensors in
// different orders).
bool same_fields(rootspan::weights::SafetensorsFields a, rootspan::weights::SafetensorsFields b) {
  using rootspan::weights::TensorInfo;
  const auto by_name = [](const TensorInfo &x, const TensorInfo &y) { return x.name < y.name; };
  std::sort(a.tensors.begin(), a.tensors.end(), by_name);
  std::sort(b.tensors.begin(), b.tensors.end(), by_name);
  const auto same = [](const TensorInfo &x, const TensorInfo &y) {
    return x.name == y.name && x.dtype.dtype == y.dtype.dtype && x.shape == y.shape && x.begin == y.begin &&
           x.end == y.end;
  };
  return a.metadata == b.metadata && a.has_metadata == b.has_metadata &&
         std::equal(a.tensors.begin(), a.tensors.end(), b.tensors.begin(), b.tensors.end(), same);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  // 1. The bytes as a whole file: length prefix, header, data.
  auto file = rootspan::weights::parse_safetensors(std::as_bytes(std::span(data, size)), "fuzz.safetensors");
  if (file) check_promises(file.value().header);

  // 2. The bytes as a header alone. The data section size is taken from what
  //    the header claims (an error's expected/actual values say where the
  //    tensors end), so the tiling and size rules are reached, not just the
  //    trailing-bytes check.
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  std::uint64_t data_size = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    auto header = rootspan::weights::parse_safetensors_header(text, data_size, "fuzz.safetensors");
    if (header) {
      check_promises(header.value());
      break;
    }
    const auto &values = header.error()->values;
    if (!values || values->first != data_size || values->second <= data_size) break;
    data_size = values->second;
  }

  // 3. The fast header reader agrees with the strict one: whatever it
  //    accepts, the strict reader accepts with the same fields. Read where
  //    it lies, padded with closing braces (kHeaderReadPadding), it gives
  //    what it gives from its own copy.
  if (rootspan::check_json_text(text, ROOTSPAN_ERR_INVALID_CHECKPOINT, "fuzz", "fuzz")) {
    auto fast = rootspan::weights::read_safetensors_fields_fast(text);
    if (fast) {
      auto strict = rootspan::weights::read_safetensors_fields_strictly(text, "fuzz.safetensors");
      if (!strict || !same_fields(*fast, strict.value())) std::abort();
    }
    const std::string padded = std::string(text) + std::string(rootspan::weights::kHeaderReadPadding, '}');
    auto in_place =
        rootspan::weights::read_safetensors_fields_fast(std::string_view(padded.data(), size), padded.size());
    if (in_place.has_value() != fast.has_value() || (fast && !same_fields(*fast, *in_place))) std::abort();
  }
  return 0;
}
