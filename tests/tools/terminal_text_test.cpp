// terminal_safe: every control a crafted string could use on a terminal is
// shown escaped; ordinary text, UTF-8 included, is kept.
#include "terminal_text.hpp"

#include <gtest/gtest.h>

namespace rootspan::cli {
namespace {

using namespace std::string_literals;

TEST(TerminalSafe, PlainTextAndUtf8AreKept) {
  EXPECT_EQ(terminal_safe("model.layers.0.weight"), "model.layers.0.weight");
  EXPECT_EQ(terminal_safe("gewichte-\xc3\xa4\xe2\x82\xac"), "gewichte-\xc3\xa4\xe2\x82\xac");  // ä €
  EXPECT_EQ(terminal_safe(""), "");
}

TEST(TerminalSafe, C0ControlsDelAndBackslashAreEscaped) {
  EXPECT_EQ(terminal_safe("\x1b[2J\x1b[Hverified"), "\\x1b[2J\\x1b[Hverified");
  EXPECT_EQ(terminal_safe("a\tb\nc\rd"), "a\\tb\\nc\\rd");
  EXPECT_EQ(terminal_safe("\x7f\x01"), "\\x7f\\x01");
  EXPECT_EQ(terminal_safe("already \\x1B escaped"), "already \\x1B escaped");  // kept, not escaped twice
}

TEST(TerminalSafe, NulIsShownAndDoesNotHideTheTail) {
  EXPECT_EQ(terminal_safe("name\0hidden tail"s), "name\\0hidden tail");
}

TEST(TerminalSafe, Osc52ClipboardWriteIsEscaped) {
  EXPECT_EQ(terminal_safe("\x1b]52;c;ZXZpbA==\x07"), "\\x1b]52;c;ZXZpbA==\\x07");
}

TEST(TerminalSafe, C1ControlsAreEscapedEncodedOrRaw) {
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "2J"),
            "\\u009b2J");  // U+009B, CSI
  EXPECT_EQ(terminal_safe("\xc2\x85"), "\\u0085");
  EXPECT_EQ(terminal_safe("\x9b"
                          "2J"),
            "\\x9b2J");  // a raw 8-bit CSI byte: invalid UTF-8
}

TEST(TerminalSafe, BidirectionalControlsAreEscaped) {
  EXPECT_EQ(terminal_safe("abc\xe2\x80\xae"
                          "cba"),
            "abc\\u202ecba");                                                // RIGHT-TO-LEFT OVERRIDE
  EXPECT_EQ(terminal_safe("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u2066x\\u2069");  // isolates
  EXPECT_EQ(terminal_safe("\xe2\x80\x8f\xd8\x9c"), "\\u200f\\u061c");
  EXPECT_EQ(terminal_safe("\xe2\x80\xa8"), "\\u2028");
}

TEST(TerminalSafe, InvalidUtf8IsShownByteByByte) {
  EXPECT_EQ(terminal_safe("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(terminal_safe("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(terminal_safe("\xe2\x80"), "\\xe2\\x80");           // cut short
  EXPECT_EQ(terminal_safe("\xf5\x80\x80\x80"), "\\xf5\\x80\\x80\\x80");
}

}  // namespace
}  // namespace rootspan::cli
