#include "byte_size.hpp"

#include <cstdio>

namespace rootspan::cli {

std::string byte_size(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  // 1023.9 KiB would print as "1024 KiB": move up before rounding does.
  while (value >= 999.95 && unit + 1 < std::size(units)) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  const int decimals = value < 9.995 ? 2 : value < 99.95 ? 1 : 0;
  std::snprintf(text, sizeof text, "%.*f %s", decimals, value, units[unit]);
  return text;
}

std::string counted(std::uint64_t count, const std::string &singular, const std::string &plural) {
  return std::to_string(count) + " " + (count == 1 ? singular : plural.empty() ? singular + "s" : plural);
}

}  // namespace rootspan::cli
