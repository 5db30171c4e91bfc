#include "core/text/quoting.hpp"

#include <algorithm>
#include <cstdio>

#include "core/text/utf8.hpp"

namespace rootspan {

namespace {

constexpr std::size_t kMaxShown = 200;

}  // namespace

std::string quoted_text(std::string_view text) {
  std::string out = "\"";
  std::size_t i = 0;
  while (i < text.size() && i < kMaxShown) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\x%02X", c);
      out += buffer;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (std::size_t n = utf8_sequence_length(text, i); n != 0) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    } else {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\x%02X", c);
      out += buffer;
    }
    ++i;
  }
  out += '"';
  if (i < text.size()) out += "...";
  return out;
}

std::string quoted_list(std::span<const std::string> names, std::size_t shown) {
  std::string out;
  for (std::size_t i = 0; i < std::min(names.size(), shown); ++i) out += (i ? ", " : "") + quoted_text(names[i]);
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

std::string shape_text(std::span<const std::uint64_t> shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  out += ']';
  return out;
}

}  // namespace rootspan
