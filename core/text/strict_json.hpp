// Strict JSON parsing for checkpoint headers, shard indexes and component
// schemas. nlohmann::json alone accepts a byte-order mark, and keeps the last
// of two equal keys without a word (a header that names a tensor twice could
// then mean two different things to two readers), and it stops at a NUL byte
// as if the input ended there. This parser rejects all three,
// checks UTF-8 first (reporting the offset of a bad byte), and bounds the
// nesting depth so hostile input cannot run deep, and the length of arrays
// and objects (JsonLimits) so it cannot grow far past its text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/diagnostic.hpp"

namespace rootspan {

// Deeper nesting than any header, index or schema needs.
inline constexpr std::size_t kMaxJsonDepth = 64;

// Bounds on what one document may hold, checked while it is parsed, before
// the parsed value grows: a parsed JSON value costs 16 bytes or more, so a
// long array of one-byte numbers would otherwise cost far more memory than
// its text (a 99 MB header holding one shape of 49.5 million numbers).
struct JsonLimits {
  std::size_t max_array_elements = SIZE_MAX;  // in any one array
  std::size_t max_object_members = SIZE_MAX;  // in any one object
  std::string why;                            // said after a refusal, e.g. "a shape has at most 64 dimensions"
};

// The checks on the text before it is parsed: no byte-order mark, valid
// UTF-8 (the offset of the first bad byte), no NUL byte. Errors as
// parse_strict_json's.
Result<void> check_json_text(std::string_view text, rootspan_status code, const std::string &operation,
                             std::string_view subject);

// Parses `text` as one JSON document (check_json_text first); whitespace before and after it is
// allowed. An array or object longer than `limits` allows is refused. On
// failure returns `code`/`operation` with the cause "<subject>: <why>",
// e.g. "model.safetensors: duplicate key "w" in the
// object at "layers.0"".
Result<nlohmann::json> parse_strict_json(std::string_view text, rootspan_status code, std::string operation,
                                         std::string_view subject, const JsonLimits &limits = {});

}  // namespace rootspan
