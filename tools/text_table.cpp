#include "text_table.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "terminal_text.hpp"

namespace rootspan::cli {

namespace {

constexpr std::size_t kGap = 2;         // columns between two cells
constexpr std::size_t kMinElastic = 6;  // an elastic column keeps at least this much of its names

std::string padded(const std::string &cell, std::size_t width, bool right) {
  const std::size_t w = display_width(cell);
  const std::string pad(w < width ? width - w : 0, ' ');
  return right ? pad + cell : cell + pad;
}

}  // namespace

TextTable::TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

void TextTable::print(std::FILE *out, std::size_t width) const {
  std::vector<std::size_t> widths(columns_.size());
  std::vector<bool> shown(columns_.size(), true);
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = display_width(columns_[c].header);
    for (const auto &row : rows_) widths[c] = std::max(widths[c], display_width(row[c]));
  }
  const auto total = [&] {
    std::size_t sum = 0, count = 0;
    for (std::size_t c = 0; c < widths.size(); ++c) {
      if (shown[c]) sum += widths[c], ++count;
    }
    return sum + kGap * (count == 0 ? 0 : count - 1);
  };
  if (width != 0) {
    // What the elastic columns would have to give up, and whether a name
    // would then be cut short of kRoomyName.
    const auto cramped = [&] {
      const std::size_t over = total() > width ? total() - width : 0;
      for (std::size_t c = 0; c < widths.size(); ++c) {
        if (columns_[c].elastic && over > 0 &&
            widths[c] - std::min(widths[c], over) < std::min(widths[c], kRoomyName)) {
          return true;
        }
      }
      return false;
    };
    for (std::size_t c = columns_.size(); c-- > 0 && total() > width && cramped();) {
      if (columns_[c].optional) shown[c] = false;
    }
    // Take from the widest elastic column, one column at a time.
    while (total() > width) {
      std::size_t widest = widths.size();
      for (std::size_t c = 0; c < widths.size(); ++c) {
        if (columns_[c].elastic && widths[c] > kMinElastic && (widest == widths.size() || widths[c] > widths[widest])) {
          widest = c;
        }
      }
      if (widest == widths.size()) break;
      --widths[widest];
    }
  }
  const auto print_line = [&](const std::vector<std::string> &cells) {
    std::string line;
    std::size_t last = cells.size();
    while (last > 0 && !shown[last - 1]) --last;
    for (std::size_t c = 0; c < last; ++c) {
      if (!shown[c]) continue;
      if (!line.empty() || c != 0) line += std::string(kGap, ' ');
      const std::string cell = columns_[c].elastic ? elide_name(cells[c], widths[c]) : fit_width(cells[c], widths[c]);
      // The last column is not padded: no trailing blanks.
      line += c + 1 == last && !columns_[c].right ? cell : padded(cell, widths[c], columns_[c].right);
    }
    if (width != 0) line = fit_width(line, width, false);
    std::fprintf(out, "%s\n", line.c_str());
  };
  std::vector<std::string> headers;
  for (const auto &column : columns_) headers.push_back(column.header);
  print_line(headers);
  for (const auto &row : rows_) print_line(row);
}

std::string wrapped(const std::string &text, std::size_t width, std::size_t indent) {
  if (width == 0 || display_width(text) <= width) return text + "\n";
  // The line's own indent, and runs of spaces inside it (a help line's two
  // columns), are kept; a continuation line starts at `indent`.
  const std::size_t lead = std::min(text.find_first_not_of(' '), text.size());
  std::string out, line(lead, ' ');
  bool fresh = true;  // `line` holds nothing but its indent
  for (std::size_t start = lead; start <= text.size();) {
    std::size_t space = text.find(' ', start);
    if (space == std::string::npos) space = text.size();
    const std::string word = text.substr(start, space - start);
    start = space + 1;
    std::string next = fresh ? line + word : line + " " + word;
    if (!fresh && display_width(next) > width) {
      out += fit_width(line, width) + "\n";
      line.assign(indent, ' ');
      fresh = true;
      next = line + word;
    }
    line = std::move(next);
    fresh = fresh && word.empty();
  }
  return out + fit_width(line, width) + "\n";
}

void print_wrapped(const std::string &text, std::size_t width) { std::fputs(wrapped(text, width, 2).c_str(), stdout); }

std::size_t output_width() {
  if (isatty(STDOUT_FILENO) != 0) return terminal_columns(STDOUT_FILENO);
  const char *columns = std::getenv("COLUMNS");
  if (columns == nullptr) return 0;
  char *end = nullptr;
  const unsigned long value = std::strtoul(columns, &end, 10);
  return end != columns && *end == '\0' ? value : 0;
}

}  // namespace rootspan::cli
