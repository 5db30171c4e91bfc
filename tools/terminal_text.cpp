#include "terminal_text.hpp"

#include <sys/ioctl.h>
#include <cstdint>

#include <cstdio>
#include <vector>

namespace rootspan::cli {

namespace {

void append_hex_byte(std::string &out, unsigned char byte) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(byte));
  out += buf;
}

// The code point of the well-formed UTF-8 sequence at text[i] and its length,
// or length 0 (overlong, surrogate, out of range, truncated).
std::pair<std::uint32_t, std::size_t> decode(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t length = 0;
  std::uint32_t code = 0, minimum = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, code = lead & 0x1Fu, minimum = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, code = lead & 0x0Fu, minimum = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, code = lead & 0x07u, minimum = 0x10000;
  } else {
    return {0, 0};
  }
  if (i + length > text.size()) return {0, 0};
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return {0, 0};
    code = (code << 6) | (byte(i + k) & 0x3Fu);
  }
  if (code < minimum || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return {0, 0};
  return {code, length};
}

bool must_escape(std::uint32_t code) {
  return (code >= 0x80 && code <= 0x9F) || code == 0x061C || code == 0x200E || code == 0x200F ||
         (code >= 0x202A && code <= 0x202E) || (code >= 0x2066 && code <= 0x2069) || code == 0x2028 || code == 0x2029;
}

}  // namespace

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '\0':
          out += "\\0";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        default:
          if (c < 0x20 || c == 0x7F) {
            append_hex_byte(out, c);
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    auto [code, length] = decode(text, i);
    if (length == 0) {
      append_hex_byte(out, c);
      ++i;
    } else if (must_escape(code)) {
      char buf[12];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(code));
      out += buf;
      i += length;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

}  // namespace rootspan::cli

namespace rootspan::cli {

namespace {

bool is_zero_width(std::uint32_t c) {
  return (c >= 0x0300 && c <= 0x036F) || (c >= 0x0483 && c <= 0x0489) || (c >= 0x0591 && c <= 0x05BD) ||
         (c >= 0x0610 && c <= 0x061A) || (c >= 0x064B && c <= 0x065F) ||
         (c >= 0x0E31 && c <= 0x0E3A && c != 0x0E32 && c != 0x0E33) || (c >= 0x1AB0 && c <= 0x1AFF) ||
         (c >= 0x1DC0 && c <= 0x1DFF) || (c >= 0x200B && c <= 0x200F) || (c >= 0x20D0 && c <= 0x20FF) ||
         (c >= 0x302A && c <= 0x302F) || c == 0x3099 || c == 0x309A || (c >= 0xFE00 && c <= 0xFE0F) ||
         (c >= 0xFE20 && c <= 0xFE2F) || c == 0xFEFF || (c >= 0xE0100 && c <= 0xE01EF);
}

bool is_wide(std::uint32_t c) {
  return (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0x303E) || (c >= 0x3041 && c <= 0x33FF) ||
         (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xA000 && c <= 0xA4CF) ||
         (c >= 0xA960 && c <= 0xA97F) || (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) ||
         (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) || (c >= 0xFFE0 && c <= 0xFFE6) ||
         (c >= 0x1F300 && c <= 0x1F64F) || (c >= 0x1F900 && c <= 0x1F9FF) || (c >= 0x20000 && c <= 0x3FFFD);
}

// The width of the character at text[i] and its length in bytes.
std::pair<std::size_t, std::size_t> character_at(std::string_view text, std::size_t i) {
  if (static_cast<unsigned char>(text[i]) < 0x80) return {1, 1};
  const auto [code, length] = decode(text, i);
  if (length == 0) return {1, 1};
  return {is_zero_width(code) ? 0 : is_wide(code) ? 2 : 1, length};
}

}  // namespace

std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto [columns, length] = character_at(text, i);
    width += columns;
    i += length;
  }
  return width;
}

std::string fit_width(std::string_view text, std::size_t width, bool keep_end) {
  if (display_width(text) <= width) return std::string(text);
  if (width == 0) return "";
  // Characters with their combining marks, as (byte offset, length, columns).
  struct Cluster {
    std::size_t offset, length, columns;
  };
  std::vector<Cluster> clusters;
  for (std::size_t i = 0; i < text.size();) {
    const auto [columns, length] = character_at(text, i);
    if (columns == 0 && !clusters.empty()) {
      clusters.back().length += length;
    } else {
      clusters.push_back({i, length, columns});
    }
    i += length;
  }
  const std::size_t room = width - 1;  // "…" takes one column
  std::size_t head_room = keep_end ? (room + 1) / 2 : room, tail_room = room - head_room;
  std::string head, tail;
  std::size_t used = 0, front = 0;
  for (; front < clusters.size() && used + clusters[front].columns <= head_room; ++front) {
    used += clusters[front].columns;
    head.append(text.substr(clusters[front].offset, clusters[front].length));
  }
  tail_room += head_room - used;  // a wide character that did not fit leaves room at the end
  used = 0;
  std::size_t back = clusters.size();
  while (back > front && used + clusters[back - 1].columns <= tail_room) {
    --back;
    used += clusters[back].columns;
  }
  for (std::size_t k = back; k < clusters.size(); ++k) tail.append(text.substr(clusters[k].offset, clusters[k].length));
  return head + "\u2026" + tail;
}

std::string elide_name(std::string_view name, std::size_t width) {
  if (display_width(name) <= width) return std::string(name);
  std::vector<std::string_view> segments;
  for (std::size_t start = 0;;) {
    const std::size_t dot = name.find('.', start);
    segments.push_back(name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  const std::size_t n = segments.size();
  if (n < 3) return fit_width(name, width);
  const auto numeric = [&](std::size_t i) {
    return !segments[i].empty() && segments[i].find_first_not_of("0123456789") == std::string_view::npos;
  };
  // The order segments are given room in.
  std::vector<std::size_t> order = {n - 1};
  for (std::size_t i = n - 1; i-- > 0;) {
    if (numeric(i)) order.push_back(i);
  }
  if (!numeric(n - 2)) order.push_back(n - 2);
  order.push_back(0);
  for (std::size_t i = n - 2; i-- > 1;) {
    if (!numeric(i)) order.push_back(i);
  }
  std::vector<bool> kept(n, false);
  const auto render = [&] {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
      if (!kept[i] && i > 0 && !kept[i - 1]) continue;  // one "…" for a run
      if (i > 0) out += '.';
      out += kept[i] ? std::string(segments[i]) : std::string("\u2026");
    }
    return out;
  };
  for (const std::size_t i : order) {
    kept[i] = true;
    if (display_width(render()) > width) kept[i] = false;
  }
  if (!kept[n - 1]) return fit_width(name, width);
  return render();
}

std::size_t terminal_columns(int fd) {
  winsize size{};
  if (ioctl(fd, TIOCGWINSZ, &size) != 0) return 0;
  return size.ws_col;
}

}  // namespace rootspan::cli
