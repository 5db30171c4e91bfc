// The program's help, as CLI11 writes it, fitted to the terminal: CLI11 2.1
// never wraps, so a description ran to 170 columns and the terminal broke it
// mid-word.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>

namespace rootspan::cli {

// Each line of `help` wider than `width` (0: no limit) wrapped at spaces: an
// option's or command's description goes on under its own column, any other
// line at its own indent.
std::string fit_help(const std::string &help, std::size_t width);

// CLI11's formatter, its help passed through fit_help at output_width().
class FittedFormatter : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App *app, std::string name, CLI::AppFormatMode mode) const override;
};

}  // namespace rootspan::cli
