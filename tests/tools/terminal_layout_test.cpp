// The program's text layout: display widths (CJK, combining marks), names cut
// to fit (by whole segments, so rows stay apart), tables aligned and cut to
// the terminal (optional columns first), help wrapped to it, sizes in binary
// units, and the suggestions for mistyped names.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "byte_size.hpp"
#include "core/text/closest_names.hpp"
#include "help_text.hpp"
#include "terminal_text.hpp"
#include "text_table.hpp"

namespace rootspan::cli {
namespace {

TEST(DisplayWidth, CountsColumnsNotBytes) {
  EXPECT_EQ(display_width("weight"), 6u);
  EXPECT_EQ(display_width("重み"), 4u);           // two wide ideographs, 6 bytes
  EXPECT_EQ(display_width("cafe\u0301"), 4u);     // e + combining acute
  EXPECT_EQ(display_width("\uff21\uff22"), 4u);   // fullwidth A B
  EXPECT_EQ(display_width("\xff"), 1u);           // invalid UTF-8: one column per byte
  EXPECT_EQ(display_width("\u00e9t\u00e9"), 3u);  // precomposed: one column each
}

TEST(FitWidth, CutsTheMiddleAndNeverSplitsACharacter) {
  EXPECT_EQ(fit_width("short", 10), "short");
  const std::string cut = fit_width("model.layers.10.mlp.weight", 12);
  EXPECT_EQ(display_width(cut), 12u) << cut;
  EXPECT_EQ(cut, "model.\u2026eight");
  // Wide characters: never more than the width, even when one does not fit.
  const std::string wide = fit_width("重み重み重み重み", 7);
  EXPECT_LE(display_width(wide), 7u) << wide;
  EXPECT_NE(wide.find("\u2026"), std::string::npos);
  // A combining mark stays with its base.
  const std::string marks = fit_width("e\u0301e\u0301e\u0301e\u0301e\u0301", 3);
  EXPECT_EQ(marks, "e\u0301\u2026e\u0301");
  EXPECT_EQ(fit_width("abc", 0), "");
}

TEST(ByteSize, BinaryUnitsThreeDigits) {
  EXPECT_EQ(byte_size(0), "0 B");
  EXPECT_EQ(byte_size(1023), "1023 B");
  EXPECT_EQ(byte_size(1024), "1.00 KiB");
  EXPECT_EQ(byte_size(16384), "16.0 KiB");
  EXPECT_EQ(byte_size(42112), "41.1 KiB");
  EXPECT_EQ(byte_size(430u << 20), "430 MiB");
  EXPECT_EQ(byte_size((1ull << 20) - 1), "1.00 MiB");  // not "1024 KiB"
  EXPECT_EQ(byte_size(3ull << 29), "1.50 GiB");
  EXPECT_EQ(counted(1, "component"), "1 component");
  EXPECT_EQ(counted(5, "component"), "5 components");
}

TEST(ClosestName, SuggestsOnlyNearNames) {
  const std::vector<std::string> commands = {"version", "providers", "inspect", "load", "plan", "help"};
  EXPECT_EQ(closest_name("inspekt", commands), "inspect");
  EXPECT_EQ(closest_name("lod", commands), "load");
  EXPECT_EQ(closest_name("lpan", commands), "plan");  // a swap is one edit
  EXPECT_EQ(closest_name("frobnicate", commands), "");
  EXPECT_EQ(closest_name("--verfy", {"--verify", "--json", "--schema"}), "--verify");
}

TEST(ClosestName, ListsTheNearestFirstAndAtMostAsMany) {
  const std::vector<std::string_view> ids = {"layers.1.up", "layers.10.up", "layers.1.down", "layers.11.up", "norm"};
  EXPECT_EQ(closest_names("layers.1.up", ids, 3),
            (std::vector<std::string_view>{"layers.1.up", "layers.10.up", "layers.11.up"}));
  EXPECT_EQ(closest_names("layers.1.upp", ids, 1), (std::vector<std::string_view>{"layers.1.up"}));
  EXPECT_TRUE(closest_names("embed_tokens", ids, 3).empty());
  EXPECT_EQ(typo_distance("norm", "norn"), 1u);
  EXPECT_EQ(typo_distance("norm", "nrom"), 1u);                 // a swap is one edit
  EXPECT_EQ(typo_distance("norm", "normalize"), std::nullopt);  // the length alone rules it out
}

// A miss among long names does bounded work (issue 35 item 8): twenty names
// of 20 KB sharing all but their last bytes with the typed one took 20 s.
TEST(ClosestName, AMissAmongLongNamesStopsAtTheBudget) {
  const std::string stem(20000, 'x');
  std::vector<std::string> owned;
  for (int i = 0; i < 20; ++i) owned.push_back(stem + std::to_string(100 + i));
  const std::vector<std::string_view> names(owned.begin(), owned.end());
  rootspan::ClosestNamesWork work;
  EXPECT_TRUE(closest_names(stem + "999", names, 3, &work).empty());  // too long to be worth suggesting for
  EXPECT_EQ(work.cells, 0u);

  // A typed name at the longest compared, against many names a hundred
  // edits away at its end (each comparison runs almost every row of a wide
  // band): the work stops at the budget, with the nearest of those compared;
  // the exact name placed last is never reached.
  const std::string prefix(rootspan::kLongestTypedName - 100, 'y');
  const std::string typed = prefix + std::string(100, 'a');
  std::vector<std::string> many = {prefix + std::string(99, 'a') + "b"};
  for (int i = 0; i < 2000; ++i) many.push_back(prefix + std::string(100, 'b'));
  many.push_back(typed);
  const std::vector<std::string_view> views(many.begin(), many.end());
  const auto near = closest_names(typed, views, 3, &work);
  EXPECT_LE(work.cells, rootspan::kClosestNamesBudget);
  EXPECT_TRUE(work.stopped_early);
  ASSERT_EQ(near.size(), 3u);
  EXPECT_EQ(near.front(), views.front());

  // Short names are compared in full, well within it.
  const std::vector<std::string_view> ids = {"layers.1.up", "layers.10.up", "norm"};
  EXPECT_EQ(closest_names("layers.1.upp", ids, 1, &work), (std::vector<std::string_view>{"layers.1.up"}));
  EXPECT_FALSE(work.stopped_early);
  EXPECT_GT(work.cells, 0u);
  EXPECT_EQ(typo_distance(stem + "1", stem + "2"), std::nullopt);
}

std::string printed(const TextTable &table, std::size_t width) {
  char *buffer = nullptr;
  std::size_t size = 0;
  std::FILE *out = open_memstream(&buffer, &size);
  table.print(out, width);
  std::fclose(out);
  std::string text(buffer, size);
  std::free(buffer);
  return text;
}

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> lines;
  for (std::size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(text.substr(start, end - start));
  }
  return lines;
}

TEST(TextTable, AlignsByDisplayWidthAndFitsTheWidth) {
  TextTable table({{"NAME", false, true}, {"SIZE", true}});
  table.add_row({"層.0.重み", "16 B"});
  table.add_row({"cafe\u0301", "1.00 KiB"});
  table.add_row({"a.very.long.tensor.name.that.does.not.fit", "8 B"});
  for (const std::size_t width : {0u, 30u, 20u}) {
    const auto lines = lines_of(printed(table, width));
    ASSERT_EQ(lines.size(), 4u);
    for (const auto &line : lines) {
      EXPECT_EQ(display_width(line), display_width(lines[0])) << "width " << width << ": " << line;
      if (width != 0) EXPECT_LE(display_width(line), width) << line;
    }
  }
  EXPECT_NE(printed(table, 0).find("a.very.long.tensor.name.that.does.not.fit"), std::string::npos);
  EXPECT_NE(printed(table, 20).find("\u2026"), std::string::npos);
}

TEST(ElideName, KeepsTheLayerNumberAndTheLastSegmentsSoRowsStayApart) {
  const std::string q = "model.layers.7.self_attn.q_proj.weight", k = "model.layers.7.self_attn.k_proj.weight";
  EXPECT_EQ(elide_name(q, 100), q);
  EXPECT_EQ(elide_name(q, 30), "model.layers.7.\u2026.q_proj.weight");
  EXPECT_EQ(elide_name(q, 20), "\u2026.7.\u2026.q_proj.weight");
  for (const std::size_t width : {20u, 24u, 30u, 37u}) {  // below 20 the two cannot both fit
    EXPECT_LE(display_width(elide_name(q, width)), width) << width;
    EXPECT_NE(elide_name(q, width), elide_name(k, width)) << width;
    EXPECT_NE(elide_name(q, width), elide_name("model.layers.8.self_attn.q_proj.weight", width)) << width;
  }
  // A name with too few segments, or a last segment too wide, is cut as fit_width cuts.
  EXPECT_EQ(elide_name("a_single_long_name", 10), fit_width("a_single_long_name", 10));
  EXPECT_EQ(elide_name("a.b.a_very_long_last_segment", 10), fit_width("a.b.a_very_long_last_segment", 10));
}

TEST(TextTable, LeavesOutOptionalColumnsBeforeCuttingANameShort) {
  TextTable table({{"NAME", false, true}, {"EXTRA", false, false, true}, {"SIZE", true}});
  table.add_row({"model.layers.0.self_attn.q_proj.weight", "1234567890", "16 B"});
  const std::string wide = printed(table, 0), narrow = printed(table, 48);
  EXPECT_NE(wide.find("EXTRA"), std::string::npos);
  EXPECT_EQ(narrow.find("EXTRA"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("model.layers.0.self_attn.q_proj.weight"), std::string::npos) << narrow;
  for (const auto &line : lines_of(narrow)) EXPECT_LE(display_width(line), 48u) << line;
}

TEST(FitHelp, WrapsDescriptionsUnderTheirColumnAndKeepsEveryWord) {
  const std::string help =
      "Usage: rootspan load [OPTIONS] PATH\n"
      "  --tensors PATTERN ...       only the components whose id matches this glob, or a tensor name outside the "
      "id rule (repeatable)\n"
      "PATH is a .safetensors or .gguf file (a split GGUF by any of its parts), a folder, or an index file.\n";
  EXPECT_EQ(fit_help(help, 0), help);
  for (const std::size_t width : {40u, 60u, 80u}) {
    const std::string fitted = fit_help(help, width);
    std::vector<std::string> before, after;
    for (const auto *text : {&help, &fitted}) {
      std::istringstream words(*text);
      auto &into = text == &help ? before : after;
      for (std::string word; words >> word;) into.push_back(word);
    }
    EXPECT_EQ(before, after) << "no word is cut or lost at " << width << ":\n" << fitted;
    for (const auto &line : lines_of(fitted)) EXPECT_LE(display_width(line), width) << line;
  }
  // At 80 columns the description goes on under its own column.
  const auto lines = lines_of(fit_help(help, 80));
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[2].find_first_not_of(' '), std::string("  --tensors PATTERN ...       ").size()) << lines[2];
}

}  // namespace
}  // namespace rootspan::cli
