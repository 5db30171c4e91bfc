#include "core/loader/manifest_quoting.hpp"

#include <cstdio>

namespace rootspan {

// Quotes a manifest string for a message: escaped, and cut short, since a
// hostile file may hold megabytes in one string.
std::string in_quotes(std::string_view s) {
  constexpr std::size_t kShown = 120;
  const bool cut = s.size() > kShown;
  if (cut) {
    s = s.substr(0, kShown);
    // Never end inside a UTF-8 sequence: drop continuation bytes, then their lead.
    while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.remove_suffix(1);
    if (!s.empty() && static_cast<unsigned char>(s.back()) >= 0xC0) s.remove_suffix(1);
  }
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + (cut ? "\"..." : "\"");
}

}  // namespace rootspan
