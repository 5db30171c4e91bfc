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

}  // namespace rootspan::cli
