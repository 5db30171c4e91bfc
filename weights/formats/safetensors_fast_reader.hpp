// The fast path of the safetensors header reader: nlohmann's SAX events
// turned straight into TensorInfo records, with no JSON document in between.
// It accepts only what a valid header looks like; at the first thing it does
// not expect (a syntax error, a duplicate key, an unknown field or dtype, a
// negative number, a limit passed) it gives up, and the caller parses the
// header again the slow way, which finds the rule that was broken and words
// the error. A valid header of n tensors is read in one pass of O(n) work.
#pragma once

#include <optional>
#include <string_view>

#include "weights/formats/safetensors_fields.hpp"

namespace rootspan::weights {

// The fields of `header_json`, or nothing when it is anything but a
// well-formed header (the caller then parses it strictly, to say why). The
// text must already have passed check_json_text.
std::optional<SafetensorsFields> read_safetensors_fields_fast(std::string_view header_json);

}  // namespace rootspan::weights
