// UTF-8 validation (core/text/utf8.hpp): first_invalid_utf8 answers "valid"
// through simdjson's validator and finds a bad byte's offset by its own walk.
// Both must keep RFC 3629's rules, so the answer is held here to a walk of
// utf8_sequence_length, the rules written out, on every 2-byte string and on
// 3- and 4-byte strings built from every lead byte around the rules' edges
// and continuation bytes at the edges of their ranges; each alone and inside
// ASCII text, across a 64-byte block (where a vectorised validator carries its
// state from one block to the next).
#include "core/text/utf8.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace rootspan {
namespace {

// The offset of the first bad byte by the rules alone, or nullopt.
std::optional<std::size_t> walked(std::string_view text) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t n = utf8_sequence_length(text, at);
    if (n == 0) return at;
    at += n;
  }
  return std::nullopt;
}

// Checks `sequence` alone and placed at a few offsets in ASCII text; counts
// the valid ones.
void check(const std::string &sequence, std::size_t &valid) {
  for (const std::size_t before : {std::size_t{0}, std::size_t{10}, std::size_t{62}}) {
    const std::string text = std::string(before, 'a') + sequence + std::string(before == 0 ? 0 : 67, 'b');
    const auto expected = walked(text);
    ASSERT_EQ(first_invalid_utf8(text), expected) << "bytes of the sequence at offset " << before;
    if (before == 0 && !expected) ++valid;
  }
}

TEST(Utf8, EveryTwoByteStringIsJudgedByTheRules) {
  std::size_t valid = 0;
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) check({static_cast<char>(a), static_cast<char>(b)}, valid);
  }
  // ASCII pairs (128 * 128) and the two-byte sequences C2-DF 80-BF (30 * 64).
  EXPECT_EQ(valid, 128u * 128u + 30u * 64u);
}

TEST(Utf8, LongerSequencesAtTheEdgesOfTheRulesAreJudgedByTheRules) {
  // Lead bytes: the ends of each class and the bytes just outside them.
  const std::vector<int> leads = {0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC,
                                  0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF8, 0xFF};
  // Following bytes: ASCII, and the ends of the continuation range and of the
  // sub-ranges E0, ED, F0 and F4 allow (overlongs, surrogates, past U+10FFFF).
  const std::vector<int> next = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xFF};
  std::size_t valid = 0;
  for (const int lead : leads) {
    for (const int b : next) {
      for (const int c : next) {
        check({static_cast<char>(lead), static_cast<char>(b), static_cast<char>(c)}, valid);
        for (const int d : next) {
          check({static_cast<char>(lead), static_cast<char>(b), static_cast<char>(c), static_cast<char>(d)}, valid);
        }
      }
    }
  }
  EXPECT_GT(valid, 0u);
  // The rules' own cases, by name: an overlong "/" (C0 AF), a surrogate (ED A0 80), past U+10FFFF
  // (F4 90 80 80), a lone continuation byte; and the largest code point, valid.
  EXPECT_EQ(first_invalid_utf8("ab\xC0\xAF"), 2u);
  EXPECT_EQ(first_invalid_utf8("\xED\xA0\x80"), 0u);
  EXPECT_EQ(first_invalid_utf8("x\xF4\x90\x80\x80"), 1u);
  EXPECT_EQ(first_invalid_utf8(std::string(70, 'a') + "\x80"), 70u);
  EXPECT_EQ(first_invalid_utf8("\xF4\x8F\xBF\xBF"), std::nullopt);
}

}  // namespace
}  // namespace rootspan
