// Text that came from a file, a manifest or a plugin, made safe to print on a
// terminal. A crafted tensor name, metadata value, manifest path or provider
// string must not move the cursor, clear the screen, set the clipboard (OSC
// 52), reorder what follows (bidirectional overrides) or hide its own tail (a
// NUL): every such character is shown as an escape instead.
#pragma once

#include <string>
#include <string_view>

namespace rootspan::cli {

// The text with, escaped: NUL as "\0", the other C0
// controls and DEL as "\xNN" ("\t", "\n", "\r" for those three), the C1
// controls (U+0080-U+009F), the bidirectional controls (U+061C, U+200E,
// U+200F, U+202A-U+202E, U+2066-U+2069) and the line and paragraph separators
// (U+2028, U+2029) as "\uNNNN", and each byte of invalid UTF-8 as "\xNN"
// (a terminal may read a lone 0x9b as the 8-bit CSI). Everything else,
// printable ASCII (a backslash included: messages from the library already
// quote names with escapes of their own, which must stay readable) and valid
// UTF-8, is kept as it is.
std::string terminal_safe(std::string_view text);

// The columns `text` (UTF-8, already terminal_safe) takes on a terminal: one
// per code point, two for wide East Asian characters (CJK ideographs, Hangul,
// kana, fullwidth forms, emoji), none for combining marks and zero-width
// characters. A byte that is not valid UTF-8 counts one.
std::size_t display_width(std::string_view text);

// `text` cut to at most `width` columns: its start and end kept, the middle
// replaced by "…" (names differ at their ends as often as at their starts),
// or with keep_end false its start kept and "…" at the end. Never splits a
// character or separates a combining mark from its base.
std::string fit_width(std::string_view text, std::size_t width, bool keep_end = true);

// A dotted name ("model.layers.7.self_attn.q_proj.weight") cut to at most
// `width` columns by whole segments, so that rows of a table stay apart:
// the last segment is kept first, then the numbers (layer and expert
// indices) from the right, the segment before the last, the first, and the
// others from the right, each where it still fits; each run of dropped
// segments is one "…" ("model.layers.7.….q_proj.weight"). A name that is not dotted, or whose last
// segment alone is too wide, is cut as fit_width cuts it.
std::string elide_name(std::string_view name, std::size_t width);

// The columns of the terminal `fd` is, measured now (TIOCGWINSZ); 0 when it is
// not a terminal or does not say.
std::size_t terminal_columns(int fd);

}  // namespace rootspan::cli
