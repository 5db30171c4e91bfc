// The program's tables: columns aligned by display width (not bytes), and
// the whole table cut to the terminal's width.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace rootspan::cli {

// Columns a name keeps before a table leaves out its optional columns.
inline constexpr std::size_t kRoomyName = 32;

class TextTable {
 public:
  struct Column {
    std::string header;
    bool right = false;     // numbers: aligned right
    bool elastic = false;   // names: shrunk (elide_name: by whole segments) when the table is too wide
    bool optional = false;  // left out, rightmost first, before a name would be cut below kRoomyName
  };

  explicit TextTable(std::vector<Column> columns);

  // Cells already terminal_safe; one per column.
  void add_row(std::vector<std::string> cells);

  // Every line at most `width` columns (0: no limit): optional columns are
  // left out while an elastic column would otherwise get less than
  // kRoomyName columns (or less than its widest cell); then the elastic
  // columns shrink, the widest first, down to six columns; a line still too
  // wide loses its end.
  void print(std::FILE *out, std::size_t width) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// `text` (terminal_safe, one line) and a newline, wrapped at spaces to
// `width` columns (0: no limit), continuation lines indented by `indent`
// spaces; a word wider than a line is cut.
std::string wrapped(const std::string &text, std::size_t width, std::size_t indent);

// Prints wrapped(text, width, 2) on stdout.
void print_wrapped(const std::string &text, std::size_t width);

// The width the program's text on stdout must fit: the terminal's, or
// $COLUMNS when stdout is no terminal and it is set, else 0 (no limit: a file
// or pipe gets whole names).
std::size_t output_width();

}  // namespace rootspan::cli
