#include "core/text/closest_names.hpp"

#include <algorithm>
#include <utility>

namespace rootspan {

namespace {

// A typo is at most this many edits away.
std::size_t allowed_edits(std::string_view typed) { return std::max<std::size_t>(1, typed.size() / 3); }

// Optimal string alignment distance (Levenshtein plus adjacent swaps) from
// one typed name to many candidates, bounded: only the cells within `limit`
// of the diagonal are computed, a candidate is given up once a whole row
// exceeds the limit, and the three rows are kept between candidates, so a
// name far from `typed` costs little and nothing is allocated per candidate.
class BoundedDistance {
 public:
  explicit BoundedDistance(std::string_view typed) : typed_(typed) {}

  // The distance when it is at most `limit`, else nullopt; `cells` grows by
  // the work done.
  std::optional<std::size_t> operator()(std::string_view candidate, std::size_t limit, std::size_t &cells) {
    const std::string_view a = typed_, b = candidate;
    if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > limit) {
      return std::nullopt;  // each edit changes the length by one at most
    }
    const std::size_t over = limit + 1;  // stands for every distance past the limit
    cells += 3 * (b.size() + 1);         // the rows cleared
    before_.assign(b.size() + 1, over);
    previous_.assign(b.size() + 1, over);
    row_.assign(b.size() + 1, over);
    for (std::size_t j = 0; j <= std::min(b.size(), limit); ++j) previous_[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      const std::size_t low = i > limit ? i - limit : 1;
      const std::size_t high = std::min(b.size(), i + limit);
      row_[low - 1] = low == 1 ? std::min(i, over) : over;
      std::size_t row_min = row_[low - 1];
      cells += high + 1 - low;
      for (std::size_t j = low; j <= high; ++j) {
        const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
        std::size_t d = std::min({previous_[j] + 1, row_[j - 1] + 1, previous_[j - 1] + cost});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d = std::min(d, before_[j - 2] + 1);
        row_[j] = std::min(d, over);
        row_min = std::min(row_min, row_[j]);
      }
      if (high < b.size()) row_[high + 1] = over;  // the next row reads one cell past this band
      if (row_min > limit) return std::nullopt;
      std::swap(before_, previous_);
      std::swap(previous_, row_);
    }
    if (previous_[b.size()] > limit) return std::nullopt;
    return previous_[b.size()];
  }

 private:
  std::string_view typed_;
  std::vector<std::size_t> before_, previous_, row_;
};

}  // namespace

std::optional<std::size_t> typo_distance(std::string_view typed, std::string_view candidate) {
  if (typed.size() > kLongestTypedName) return std::nullopt;
  std::size_t cells = 0;
  return BoundedDistance(typed)(candidate, allowed_edits(typed), cells);
}

std::string closest_name(std::string_view typed, const std::vector<std::string> &candidates) {
  std::vector<std::string_view> views(candidates.begin(), candidates.end());
  const std::vector<std::string_view> nearest = closest_names(typed, views, 1);
  return nearest.empty() ? std::string() : std::string(nearest.front());
}

std::vector<std::string_view> closest_names(std::string_view typed, const std::vector<std::string_view> &candidates,
                                            std::size_t most, ClosestNamesWork *work) {
  ClosestNamesWork done;
  if (work != nullptr) *work = done;
  if (most == 0 || typed.size() > kLongestTypedName) return {};
  BoundedDistance distance(typed);
  // One comparison costs at most this much (the rows it clears for the
  // longest candidate compared, and a band of 2 * edits + 1 cells in each
  // row), so the budget is never passed.
  const std::size_t edits = allowed_edits(typed);
  const std::size_t most_cells = 3 * (typed.size() + edits + 1) + typed.size() * (2 * edits + 1);
  std::vector<std::pair<std::size_t, std::size_t>> kept;  // (distance, position), nearest first, at most `most`
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (done.cells + most_cells > kClosestNamesBudget) {
      done.stopped_early = true;
      break;
    }
    // Once `most` are kept, only a nearer one can enter (equals lose to the earlier).
    std::size_t limit = allowed_edits(typed);
    if (kept.size() == most) {
      if (kept.back().first == 0) break;
      limit = std::min(limit, kept.back().first - 1);
    }
    const auto d = distance(candidates[i], limit, done.cells);
    if (!d) continue;
    const std::pair<std::size_t, std::size_t> entry{*d, i};
    kept.insert(std::upper_bound(kept.begin(), kept.end(), entry), entry);
    if (kept.size() > most) kept.pop_back();
  }
  if (work != nullptr) *work = done;
  std::vector<std::string_view> out;
  for (const auto &[_, position] : kept) out.push_back(candidates[position]);
  return out;
}

}  // namespace rootspan
