// "Did you mean ...?" for a mistyped subcommand or option name: the one home
// of the rule that decides when a name is close enough to suggest.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rootspan::cli {

// The candidate nearest to `typed` (edits: insert, delete, substitute, swap
// two neighbours), or "" when none is near enough to be a typo: at most one
// edit for names of up to four characters, a third of the name's length for
// longer ones.
std::string closest_name(std::string_view typed, const std::vector<std::string> &candidates);

}  // namespace rootspan::cli
