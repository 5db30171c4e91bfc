// How a string read from a manifest is shown in a message, for every loader
// message that quotes one (docs/loader-policies.md).
#pragma once

#include <string>
#include <string_view>

namespace rootspan {

// The string escaped and in double quotes, cut short after 120 bytes (never
// inside a UTF-8 sequence) with "..." after the closing quote: a hostile file
// may hold megabytes in one string.
std::string in_quotes(std::string_view s);

}  // namespace rootspan
