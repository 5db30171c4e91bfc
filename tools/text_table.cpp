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
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = display_width(columns_[c].header);
    for (const auto &row : rows_) widths[c] = std::max(widths[c], display_width(row[c]));
  }
  const auto total = [&] {
    return std::accumulate(widths.begin(), widths.end(), std::size_t{0}) + kGap * (widths.size() - 1);
  };
  if (width != 0) {
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
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c != 0) line += std::string(kGap, ' ');
      const std::string cell = fit_width(cells[c], widths[c]);
      // The last column is not padded: no trailing blanks.
      line += c + 1 == cells.size() && !columns_[c].right ? cell : padded(cell, widths[c], columns_[c].right);
    }
    if (width != 0) line = fit_width(line, width, false);
    std::fprintf(out, "%s\n", line.c_str());
  };
  std::vector<std::string> headers;
  for (const auto &column : columns_) headers.push_back(column.header);
  print_line(headers);
  for (const auto &row : rows_) print_line(row);
}

void print_wrapped(const std::string &text, std::size_t width) {
  if (width == 0 || display_width(text) <= width) {
    std::printf("%s\n", text.c_str());
    return;
  }
  constexpr const char *kIndent = "  ";
  std::string line;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t space = text.find(' ', start);
    if (space == std::string::npos) space = text.size();
    const std::string word = text.substr(start, space - start);
    const std::string joined = line.empty() ? word : line + " " + word;
    if (!line.empty() && display_width(joined) > width) {
      std::printf("%s\n", fit_width(line, width).c_str());
      line = kIndent + word;
    } else {
      line = joined;
    }
    start = space + 1;
  }
  std::printf("%s\n", fit_width(line, width).c_str());
}

std::size_t output_width() {
  if (isatty(STDOUT_FILENO) != 0) return terminal_columns(STDOUT_FILENO);
  const char *columns = std::getenv("COLUMNS");
  if (columns == nullptr) return 0;
  char *end = nullptr;
  const unsigned long value = std::strtoul(columns, &end, 10);
  return end != columns && *end == '\0' ? value : 0;
}

}  // namespace rootspan::cli
