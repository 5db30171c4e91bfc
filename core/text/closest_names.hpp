// "Did you mean ...?": the one home of the rule that decides when a name is
// close enough to a mistyped one to suggest it, for the rootspan program's
// subcommands and options and for a component id that missed.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rootspan {

// How many edits (insert, delete, substitute, swap two neighbours) turn
// `typed` into `candidate`, when that is few enough to be a typo: at most one
// for names of up to five characters, a third of `typed`'s length for longer
// ones; nullopt otherwise. Only the cells within that distance of the
// diagonal are computed, and a candidate is given up as soon as it is out of
// reach; closest_names also narrows the reach once it holds enough names, so
// a miss among a million names costs a fraction of a second.
std::optional<std::size_t> typo_distance(std::string_view typed, std::string_view candidate);

// The candidate nearest to `typed` within a typo's distance (the first of
// equals), or "" when none is.
std::string closest_name(std::string_view typed, const std::vector<std::string> &candidates);

// Up to `most` candidates within a typo's distance of `typed`, nearest first
// (equals in the candidates' order).
std::vector<std::string_view> closest_names(std::string_view typed, const std::vector<std::string_view> &candidates,
                                            std::size_t most);

}  // namespace rootspan
