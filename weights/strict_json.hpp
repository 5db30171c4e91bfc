// Strict JSON parsing for checkpoint headers, shard indexes and component
// schemas. nlohmann::json alone accepts a byte-order mark, and keeps the last
// of two equal keys without a word (a header that names a tensor twice could
// then mean two different things to two readers), and it stops at a NUL byte
// as if the input ended there. This parser rejects all three,
// checks UTF-8 first (reporting the offset of a bad byte), and bounds the
// nesting depth so hostile input cannot run deep.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/diagnostic.hpp"

namespace rootspan::weights {

// Deeper nesting than any header, index or schema needs.
inline constexpr std::size_t kMaxJsonDepth = 64;

// Parses `text` as one JSON document; whitespace before and after it is
// allowed. On failure returns `code`/`operation` with the cause
// "<subject>: <why>", e.g. "model.safetensors: duplicate key "w" in the
// object at "layers.0"".
Result<nlohmann::json> parse_strict_json(std::string_view text, rootspan_status code, std::string operation,
                                         std::string_view subject);

}  // namespace rootspan::weights
