// The one rule for a provider's name and kind, wherever one comes from (a
// manifest, a plugin's table, a built-in provider): shown in reports, typed
// on command lines and looked up by callers, so one plain token.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rootspan {

inline constexpr std::size_t kMaxNameTokenLength = 64;

// "auto" asks the loader to choose a provider (provider_choice.hpp), so no
// provider may be called so.
inline constexpr std::string_view kReservedName = "auto";

// The rule, as errors say what they expected.
inline constexpr std::string_view kNameTokenRule =
    "1-64 characters [A-Za-z0-9_.-] starting with a letter or digit, not \"auto\"";

// "" when `text` follows kNameTokenRule; otherwise which part of it breaks
// the rule ("character 3 is ' '"), for an error that also shows the text.
std::string name_token_problem(std::string_view text);

}  // namespace rootspan
