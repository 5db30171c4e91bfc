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

// The bounds on one search, so that a miss among long names costs
// milliseconds, not seconds (each comparison costs the typed name's length
// times its band of a third of that length):
//   - a typed name longer than kLongestTypedName is compared with nothing
//     (no typo of a name that long is worth suggesting);
//   - the cells of distance tables one closest_names computes, and the row
//     cells it clears for each candidate, stop at kClosestNamesBudget: the
//     search then ends with the names it holds, the nearest of the
//     candidates it compared.
inline constexpr std::size_t kLongestTypedName = 512;
inline constexpr std::size_t kClosestNamesBudget = std::size_t{1} << 26;

// What one closest_names did: the work it counted against the budget, and
// whether it stopped there before comparing every candidate.
struct ClosestNamesWork {
  std::size_t cells = 0;
  bool stopped_early = false;
};

// How many edits (insert, delete, substitute, swap two neighbours) turn
// `typed` into `candidate`, when that is few enough to be a typo: at most one
// for names of up to five characters, a third of `typed`'s length for longer
// ones; nullopt otherwise, and for a typed name past kLongestTypedName. Only
// the cells within that distance of the diagonal are computed, and a
// candidate is given up as soon as it is out of reach; closest_names also
// narrows the reach once it holds enough names, so a miss among a million
// names costs a fraction of a second.
std::optional<std::size_t> typo_distance(std::string_view typed, std::string_view candidate);

// The candidate nearest to `typed` within a typo's distance (the first of
// equals), or "" when none is.
std::string closest_name(std::string_view typed, const std::vector<std::string> &candidates);

// Up to `most` candidates within a typo's distance of `typed`, nearest first
// (equals in the candidates' order), within the bounds above; `work`, when
// given, says what the search cost.
std::vector<std::string_view> closest_names(std::string_view typed, const std::vector<std::string_view> &candidates,
                                            std::size_t most, ClosestNamesWork *work = nullptr);

}  // namespace rootspan
