#include "help_text.hpp"

#include <algorithm>
#include <sstream>

#include "terminal_text.hpp"
#include "text_table.hpp"

namespace rootspan::cli {

namespace {

// Below this many columns left for it, a description wraps under a plain
// indent instead of its own column.
constexpr std::size_t kNarrowestDescription = 24;

// Where the description of a two-column line ("  --json   write ...")
// starts, or 0 when the line is not one.
std::size_t description_column(const std::string &line) {
  const std::size_t name = line.find_first_not_of(' ');
  if (name == std::string::npos || name == 0) return 0;
  const std::size_t gap = line.find("  ", name);
  if (gap == std::string::npos) return 0;
  const std::size_t description = line.find_first_not_of(' ', gap);
  return description == std::string::npos ? 0 : description;
}

}  // namespace

std::string fit_help(const std::string &help, std::size_t width) {
  if (width == 0) return help;
  std::istringstream lines(help);
  std::string out, line;
  while (std::getline(lines, line)) {
    const std::size_t column = description_column(line);
    const std::size_t lead = std::min(line.find_first_not_of(' '), line.size());
    if (column != 0 && column + kNarrowestDescription > width && display_width(line) > width) {
      // Too narrow for two columns: the name on its line, the description under it.
      const std::string name = line.substr(0, line.find_last_not_of(' ', column - 1) + 1);
      out += wrapped(name, width, lead);
      out += wrapped(std::string(lead + 2, ' ') + line.substr(column), width, lead + 2);
      continue;
    }
    out += wrapped(line, width, column != 0 ? column : lead);
  }
  return out;
}

std::string FittedFormatter::make_help(const CLI::App *app, std::string name, CLI::AppFormatMode mode) const {
  return fit_help(CLI::Formatter::make_help(app, std::move(name), mode), output_width());
}

}  // namespace rootspan::cli
