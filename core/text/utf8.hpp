// UTF-8 validation (RFC 3629): no overlong forms, no surrogates, nothing past
// U+10FFFF. Headers, indexes and schemas are checked with it before JSON
// parsing, so a bad byte is reported with its offset rather than as a JSON
// syntax error somewhere later.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace rootspan {

// Length (1-4) of the valid UTF-8 sequence starting at text[at], or 0 when
// the bytes there are not valid UTF-8.
std::size_t utf8_sequence_length(std::string_view text, std::size_t at);

// Offset of the first byte that is not valid UTF-8, or nullopt.
std::optional<std::size_t> first_invalid_utf8(std::string_view text);

}  // namespace rootspan
