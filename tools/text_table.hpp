// The program's tables: columns aligned by display width (not bytes), and
// the whole table cut to the terminal's width.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace rootspan::cli {

class TextTable {
 public:
  struct Column {
    std::string header;
    bool right = false;    // numbers: aligned right
    bool elastic = false;  // names: shrunk (cut in the middle) when the table is too wide
  };

  explicit TextTable(std::vector<Column> columns);

  // Cells already terminal_safe; one per column.
  void add_row(std::vector<std::string> cells);

  // Every line at most `width` columns (0: no limit): the elastic columns
  // shrink first, the widest first, down to six columns; a line still too
  // wide loses its end.
  void print(std::FILE *out, std::size_t width) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Prints `text` (terminal_safe) and a newline on stdout, wrapped at spaces to
// `width` columns (0: no limit), continuation lines indented by two spaces; a
// word wider than a line is cut.
void print_wrapped(const std::string &text, std::size_t width);

// The width the program's text on stdout must fit: the terminal's, or
// $COLUMNS when stdout is no terminal and it is set, else 0 (no limit: a file
// or pipe gets whole names).
std::size_t output_width();

}  // namespace rootspan::cli
