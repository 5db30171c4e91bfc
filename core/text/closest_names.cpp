#include "core/text/closest_names.hpp"

#include <algorithm>
#include <utility>

namespace rootspan {

namespace {

// A typo is at most this many edits away.
std::size_t allowed_edits(std::string_view typed) { return std::max<std::size_t>(1, typed.size() / 3); }

// Optimal string alignment distance (Levenshtein plus adjacent swaps), three
// rows at a time.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) row[j] = std::min(row[j], before[j - 2] + 1);
    }
    std::swap(before, previous);
    std::swap(previous, row);
  }
  return previous[b.size()];
}

}  // namespace

std::optional<std::size_t> typo_distance(std::string_view typed, std::string_view candidate) {
  const std::size_t allowed = allowed_edits(typed);
  const std::size_t length_gap =
      typed.size() > candidate.size() ? typed.size() - candidate.size() : candidate.size() - typed.size();
  if (length_gap > allowed) return std::nullopt;  // each edit changes the length by one at most
  const std::size_t distance = edit_distance(typed, candidate);
  if (distance > allowed) return std::nullopt;
  return distance;
}

std::string closest_name(std::string_view typed, const std::vector<std::string> &candidates) {
  std::vector<std::string_view> views(candidates.begin(), candidates.end());
  const std::vector<std::string_view> nearest = closest_names(typed, views, 1);
  return nearest.empty() ? std::string() : std::string(nearest.front());
}

std::vector<std::string_view> closest_names(std::string_view typed, const std::vector<std::string_view> &candidates,
                                            std::size_t most) {
  std::vector<std::pair<std::size_t, std::size_t>> near;  // distance, position
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (const auto distance = typo_distance(typed, candidates[i])) near.emplace_back(*distance, i);
  }
  std::stable_sort(near.begin(), near.end());
  std::vector<std::string_view> out;
  for (std::size_t i = 0; i < near.size() && i < most; ++i) out.push_back(candidates[near[i].second]);
  return out;
}

}  // namespace rootspan
