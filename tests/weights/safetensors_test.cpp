// docs/weight-schema.md: the safetensors reader, one test per rule.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "allocation_tracking.hpp"
#include "test_support.hpp"
#include "weights/formats/dtype.hpp"
#include "weights/formats/safetensors.hpp"

namespace rootspan::weights {
namespace {

using testing::bytes_of;
using testing::entry_json;
using testing::FailsWith;
using testing::file_bytes;
using testing::HasValues;
using testing::header_json;
using testing::safetensors_file;
using testing::TempDir;
using testing::TensorSpec;

// Parses a header for a data section of `data_size` bytes, as "t.safetensors".
Result<SafetensorsHeader> parse(std::string_view header, std::uint64_t data_size) {
  return parse_safetensors_header(header, data_size, "t.safetensors");
}

TEST(Safetensors, ReadsAValidFile) {
  TempDir dir;
  const std::vector<TensorSpec> tensors = {
      {"b.weight", "F32", {2, 3}}, {"a.bias", "BF16", {3}}, {"scalar", "I64", {}}, {"empty", "F16", {0, 4}}};
  const auto path = dir.write("model.safetensors", safetensors_file(tensors, {{"format", "pt"}}));
  auto file = open_safetensors(path);
  ASSERT_TRUE(file) << file.error()->message();
  const SafetensorsFile &st = file.value();
  const std::string header = header_json(tensors, {{"format", "pt"}});
  EXPECT_EQ(st.header_size, header.size());
  EXPECT_EQ(st.data_offset(), 8 + header.size());
  EXPECT_EQ(st.file_size, 8 + header.size() + 24 + 6 + 8);
  EXPECT_EQ(st.header.data_size(), 38u);
  EXPECT_EQ(st.header.metadata().at("format"), "pt");
  ASSERT_EQ(st.header.tensors().size(), 4u);
  // Sorted by begin: b.weight [0,24), a.bias [24,30), scalar [30,38), empty [38,38).
  EXPECT_EQ(st.header.tensors()[0].name, "b.weight");
  EXPECT_EQ(st.header.tensors()[3].name, "empty");
  const TensorInfo *bias = st.header.find("a.bias");
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->dtype.dtype, ROOTSPAN_DTYPE_BF16);
  EXPECT_EQ(bias->shape, (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(bias->begin, 24u);
  EXPECT_EQ(bias->end, 30u);
  EXPECT_EQ(st.header.find("scalar")->byte_length(), 8u);
  EXPECT_EQ(st.header.find("missing"), nullptr);
  // The in-memory reader agrees.
  auto in_memory = parse_safetensors(safetensors_file(tensors, {{"format", "pt"}}), "model.safetensors");
  ASSERT_TRUE(in_memory) << in_memory.error()->message();
  EXPECT_EQ(in_memory.value().header.tensors().size(), 4u);
}

TEST(Safetensors, DtypeTableMatchesDesign) {
  const std::vector<std::pair<std::string, std::uint32_t>> table = {
      {"BOOL", 8},        {"U8", 8},          {"I8", 8},      {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8},
      {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}, {"I16", 16},    {"U16", 16},    {"F16", 16},    {"BF16", 16},
      {"I32", 32},        {"U32", 32},        {"F32", 32},    {"C64", 64},    {"F64", 64},    {"I64", 64},
      {"U64", 64},        {"F4", 4},          {"F6_E2M3", 6}, {"F6_E3M2", 6}};
  EXPECT_EQ(safetensors_dtypes().size(), table.size());
  for (const auto &[name, bits] : table) {
    const auto dtype = safetensors_dtype(std::string_view(name));
    ASSERT_TRUE(dtype) << name;
    EXPECT_EQ(dtype->bits, bits) << name;
    EXPECT_EQ(dtype->name, name);
    // Every dtype reads in a file: shape [2, 4] is a whole number of bytes for all.
    const std::vector<TensorSpec> tensors = {{"t", name, {2, 4}}};
    auto header = parse(header_json(tensors), 8 * bits / 8);
    EXPECT_TRUE(header) << name << ": " << header.error()->message();
  }
  // safetensors "C64" is 64 bits in all: two F32, rootspan's C32.
  EXPECT_EQ(safetensors_dtype(std::string_view("C64"))->dtype, ROOTSPAN_DTYPE_C32);
  // Nothing in safetensors is two F64.
  EXPECT_FALSE(safetensors_dtype(ROOTSPAN_DTYPE_C64));
  EXPECT_FALSE(safetensors_dtype(std::string_view("f32")));  // case-sensitive
}

// ---- the length prefix ---------------------------------------------------

TEST(Safetensors, FileShorterThanTheLengthPrefix) {
  TempDir dir;
  auto result = open_safetensors(dir.write_text("short.safetensors", "abc"));
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"open_checkpoint", "short.safetensors", "3 bytes, shorter than the 8-byte header length"}));
  EXPECT_TRUE(HasValues(result, 8, 3));
}

TEST(Safetensors, HeaderLengthOverTheLimitIsRefusedBeforeAllocating) {
  TempDir dir;
  const auto path = dir.write("huge.safetensors", file_bytes("{}", 0, 100'000'001));
  testing::reset_largest_allocation();
  auto result = open_safetensors(path);
  EXPECT_LT(testing::largest_allocation.load(), 1u << 20);
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"huge.safetensors", "header length 100000001 exceeds the limit of 100000000"}));
  EXPECT_TRUE(HasValues(result, 100'000'000, 100'000'001));
  // A length near 2^64 is the same error, not an overflow of 8 + N.
  auto wild = parse_safetensors(file_bytes("{}", 0, UINT64_MAX - 3), "wild.safetensors");
  EXPECT_TRUE(FailsWith(wild, ROOTSPAN_ERR_INVALID_CHECKPOINT, {"exceeds the limit"}));
}

TEST(Safetensors, HeaderLengthPastTheEndOfFileIsRefusedBeforeAllocating) {
  TempDir dir;
  // N is within the limit, but the file holds only 2 bytes after the prefix.
  const auto path = dir.write("cut.safetensors", file_bytes("{}", 0, 99'999'999));
  testing::reset_largest_allocation();
  auto result = open_safetensors(path);
  EXPECT_LT(testing::largest_allocation.load(), 1u << 20);
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"cut.safetensors", "header length 99999999 runs past the end of the file", "> 10 bytes"}));
  EXPECT_TRUE(HasValues(result, 10, 8 + 99'999'999));
  auto in_memory = parse_safetensors(file_bytes("{}", 0, 3), "cut.safetensors");
  EXPECT_TRUE(HasValues(in_memory, 10, 11));
}

TEST(Safetensors, OpeningCostsTheHeaderNotTheData) {
  TempDir dir;
  // A 1 GiB tensor in a sparse file: open must read and allocate for the
  // header only.
  const std::uint64_t big = 1ull << 30;
  const std::string header = header_json({{"big", "U8", {big}}});
  const auto path = dir.write("big.safetensors", file_bytes(header, 0));
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(8 + header.size() + big)), 0);
  testing::reset_largest_allocation();
  auto file = open_safetensors(path);
  ASSERT_TRUE(file) << file.error()->message();
  EXPECT_LT(testing::largest_allocation.load(), 1u << 20);
  EXPECT_EQ(file.value().header.find("big")->byte_length(), big);
}

// ---- the JSON header -----------------------------------------------------

TEST(Safetensors, HeaderMustBeUtf8) {
  const std::string header = "{\"__metadata__\":{\"k\":\"caf\xC3\x28\"}}";
  auto result = parse(header, 0);
  EXPECT_TRUE(
      FailsWith(result, ROOTSPAN_ERR_INVALID_CHECKPOINT, {"t.safetensors", "not valid UTF-8: byte 0xC3 at offset 25"}));
  // Overlong encodings and surrogates are not UTF-8 either.
  EXPECT_TRUE(FailsWith(parse("{\"\xC0\xAF\":1}", 0), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"not valid UTF-8"}));
  EXPECT_TRUE(FailsWith(parse("{\"\xED\xA0\x80\":1}", 0), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"not valid UTF-8"}));
  // Valid multi-byte UTF-8 is fine.
  EXPECT_TRUE(parse("{\"__metadata__\":{\"name\":\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"}}", 0));
}

TEST(Safetensors, HeaderMayHaveLeadingAndTrailingSpaces) {
  const std::string header = "  \n" + header_json({{"w", "F32", {2}}}) + "        ";
  auto result = parse(header, 8);
  ASSERT_TRUE(result) << result.error()->message();
  EXPECT_EQ(result.value().tensors().size(), 1u);
  // As a whole file too (safetensors pads headers with spaces).
  EXPECT_TRUE(parse_safetensors(file_bytes(header, 8), "padded.safetensors"));
}

TEST(Safetensors, HeaderMustBeJson) {
  EXPECT_TRUE(FailsWith(parse("{\"w\":", 0), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"t.safetensors", "not valid JSON"}));
  EXPECT_TRUE(FailsWith(parse("", 0), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"not valid JSON"}));
  EXPECT_TRUE(FailsWith(parse("{} {}", 0), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"not valid JSON"}));
  // nlohmann alone would stop at the NUL and accept what came before it.
  EXPECT_TRUE(FailsWith(parse(std::string_view("{}\0{\"junk\"", 10), 0), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"NUL byte at offset 2"}));
  EXPECT_TRUE(FailsWith(parse("\xEF\xBB\xBF{}", 0), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"byte-order mark"}));
}

TEST(Safetensors, HeaderMustBeAnObject) {
  EXPECT_TRUE(FailsWith(parse("[1,2]", 0), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"header is an array, not a JSON object"}));
}

TEST(Safetensors, HeaderNestingIsBounded) {
  const std::string deep = std::string(100, '[') + std::string(100, ']');
  EXPECT_TRUE(FailsWith(parse("{\"__metadata__\":" + deep + "}", 0), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"nests deeper than 64"}));
}

TEST(Safetensors, MetadataIsAStringToStringMap) {
  auto empty = parse("{\"__metadata__\":{}}", 0);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty.value().has_metadata());  // present, if empty
  EXPECT_TRUE(FailsWith(parse("{\"__metadata__\":[\"a\"]}", 0), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"t.safetensors", "__metadata__ is an array, not an object or null"}));
}

// The reference library reads "__metadata__": null as no metadata (MLX writes it).
TEST(Safetensors, NullMetadataIsNoMetadata) {
  auto null_metadata = parse("{\"__metadata__\":null," + entry_json("w", "F32", {1}, 0, 4) + "}", 4);
  ASSERT_TRUE(null_metadata);
  EXPECT_FALSE(null_metadata.value().has_metadata());
  EXPECT_TRUE(null_metadata.value().metadata().empty());
  ASSERT_EQ(null_metadata.value().tensors().size(), 1u);
  auto absent = parse("{" + entry_json("w", "F32", {1}, 0, 4) + "}", 4);
  ASSERT_TRUE(absent);
  EXPECT_FALSE(absent.value().has_metadata());
}

TEST(Safetensors, MetadataEntriesAreStrings) {
  EXPECT_TRUE(FailsWith(parse("{\"__metadata__\":{\"epoch\":3}}", 0), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"__metadata__ entry \"epoch\" is 3, not a string"}));
}

TEST(Safetensors, DuplicateTensorNamesAreRejected) {
  const std::string header = "{" + entry_json("w", "F32", {1}, 0, 4) + "," + entry_json("w", "F32", {1}, 4, 8) + "}";
  EXPECT_TRUE(FailsWith(parse(header, 8), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"t.safetensors", "duplicate key \"w\" in the top-level object"}));
}

// Hostile headers of many small objects: parsing once over the text, these
// finish at once; a parser that rescans an object whenever a child closes
// takes minutes on them and the suite times out.
// (Members of the header object: an array that long is refused by the rank
// limit at its 65th element, before it is parsed.)
TEST(Safetensors, ManyEmptyObjectsAreParsedOnceAndRefused) {
  std::string header = "{";
  for (int i = 0; i < 500000; ++i) header += "\"k" + std::to_string(i) + "\":{},";
  header += "\"last\":{}}";
  EXPECT_TRUE(FailsWith(parse(header, 0), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"t.safetensors", "tensor \"k"}));
  std::string array = "[";
  for (int i = 0; i < 500000; ++i) array += "{},";
  array += "{}]";
  EXPECT_TRUE(
      FailsWith(parse(array, 0), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"the top-level array has more than 64 elements"}));
}

TEST(Safetensors, ADuplicateAfterManyKeysIsFoundInItsObject) {
  std::string header = "{\"__metadata__\":{";
  for (int i = 0; i < 200000; ++i) header += "\"k" + std::to_string(i) + "\":{},";
  header += "\"k17\":{}}}";
  // Not a string map either, but the duplicate is found while parsing.
  EXPECT_TRUE(FailsWith(parse(header, 0), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"duplicate key \"k17\" in the object at \"__metadata__\""}));
}

TEST(Safetensors, DuplicateKeysAreRejectedAtAnyDepth) {
  EXPECT_TRUE(FailsWith(parse("{\"w\":{\"dtype\":\"F32\",\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"duplicate key \"dtype\" in the object at \"w\""}));
  EXPECT_TRUE(FailsWith(parse("{\"__metadata__\":{\"a\":\"1\",\"a\":\"2\"}}", 0), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"duplicate key \"a\" in the object at \"__metadata__\""}));
  EXPECT_TRUE(FailsWith(parse("{\"__metadata__\":{},\"__metadata__\":{}}", 0), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"duplicate key \"__metadata__\""}));
}

// ---- entries -------------------------------------------------------------

TEST(Safetensors, EntryMustBeAnObjectWithExactlyItsThreeFields) {
  EXPECT_TRUE(FailsWith(parse("{\"w\":[1]}", 0), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"t.safetensors", "tensor \"w\": entry is an array, not an object"}));
  EXPECT_TRUE(FailsWith(parse("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"tensor \"w\": missing field \"dtype\""}));
  EXPECT_TRUE(FailsWith(parse("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"tensor \"w\": missing field \"shape\""}));
  EXPECT_TRUE(FailsWith(parse("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"tensor \"w\": missing field \"data_offsets\""}));
  EXPECT_TRUE(FailsWith(parse("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"strides\":[1]}}", 4),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"tensor \"w\": unknown field \"strides\""}));
  // A field renamed is missing before it is unknown: the reference reader refuses the one, not the other.
  EXPECT_TRUE(FailsWith(parse("{\"w\":{\"zz\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"tensor \"w\": missing field \"dtype\""}));
}

TEST(Safetensors, DtypeMustBeKnown) {
  EXPECT_TRUE(FailsWith(parse("{" + entry_json("w", "Q4_0", {1}, 0, 1) + "}", 1), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"t.safetensors", "tensor \"w\": unknown dtype \"Q4_0\"", "F6_E3M2"}));
  EXPECT_TRUE(FailsWith(parse("{\"w\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"tensor \"w\": dtype is 32, not a string"}));
}

TEST(Safetensors, ShapeIsAnArrayOfNonNegativeIntegers) {
  EXPECT_TRUE(FailsWith(parse("{\"w\":{\"dtype\":\"U8\",\"shape\":4,\"data_offsets\":[0,4]}}", 4),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"tensor \"w\": shape is 4, not an array"}));
  EXPECT_TRUE(FailsWith(parse("{\"w\":{\"dtype\":\"U8\",\"shape\":[2,-2],\"data_offsets\":[0,4]}}", 4),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"tensor \"w\": shape[1] is -2, not a non-negative integer"}));
  EXPECT_TRUE(FailsWith(parse("{\"w\":{\"dtype\":\"U8\",\"shape\":[4.0],\"data_offsets\":[0,4]}}", 4),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"shape[0] is 4.0, not a non-negative integer"}));
  EXPECT_TRUE(FailsWith(parse("{\"w\":{\"dtype\":\"U8\",\"shape\":[18446744073709551616],\"data_offsets\":[0,4]}}", 4),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"shape[0]", "not a non-negative integer"}));
}

TEST(Safetensors, DataOffsetsArePairsThatDoNotRunBackwards) {
  EXPECT_TRUE(FailsWith(parse("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,2,4]}}", 4),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"tensor \"w\": data_offsets has 3 entries, expected 2"}));
  EXPECT_TRUE(HasValues(parse("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4]}}", 4), 2, 1));
  EXPECT_TRUE(FailsWith(parse("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":\"0-4\"}}", 4),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"data_offsets is \"0-4\", not an array"}));
  auto backwards = parse("{" + entry_json("w", "U8", {4}, 4, 0) + "}", 4);
  EXPECT_TRUE(FailsWith(backwards, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"tensor \"w\": data_offsets [4, 0) end before they begin"}));
  EXPECT_TRUE(HasValues(backwards, 4, 0));
}

// ---- tiling the data section ---------------------------------------------

TEST(Safetensors, AHoleBetweenTensorsIsRejected) {
  const std::string header = "{" + entry_json("a", "F32", {1}, 0, 4) + "," + entry_json("b", "F32", {1}, 6, 10) + "}";
  auto result = parse(header, 10);
  EXPECT_TRUE(FailsWith(
      result, ROOTSPAN_ERR_INVALID_CHECKPOINT,
      {"t.safetensors", "tensor \"b\": begins at 6 but the previous tensor \"a\" ends at 4", "a hole of 2 bytes"}));
  EXPECT_TRUE(HasValues(result, 4, 6));
}

TEST(Safetensors, TheFirstTensorMustStartTheDataSection) {
  auto result = parse("{" + entry_json("a", "F32", {1}, 2, 6) + "}", 6);
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"tensor \"a\": begins at 2 but the data section starts at 0"}));
  EXPECT_TRUE(HasValues(result, 0, 2));
}

TEST(Safetensors, OverlappingTensorsAreRejected) {
  const std::string header = "{" + entry_json("a", "F32", {2}, 0, 8) + "," + entry_json("b", "F32", {1}, 4, 8) + "}";
  auto result = parse(header, 8);
  EXPECT_TRUE(
      FailsWith(result, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                {"tensor \"b\": begins at 4 but the previous tensor \"a\" ends at 8", "an overlap of 4 bytes"}));
  EXPECT_TRUE(HasValues(result, 8, 4));
  // Two tensors over the very same bytes overlap too.
  const std::string same = "{" + entry_json("a", "F32", {1}, 0, 4) + "," + entry_json("b", "F32", {1}, 0, 4) + "}";
  EXPECT_TRUE(FailsWith(parse(same, 4), ROOTSPAN_ERR_INVALID_CHECKPOINT, {"overlap of 4 bytes"}));
}

TEST(Safetensors, TensorsListedOutOfFileOrderAreCheckedInFileOrder) {
  // Listed last to first: read in file order, and the tiling checked so.
  const std::string header = "{" + entry_json("c", "F32", {1}, 8, 12) + "," + entry_json("b", "F32", {1}, 4, 8) + "," +
                             entry_json("a", "F32", {1}, 0, 4) + "}";
  auto parsed = parse(header, 12);
  ASSERT_TRUE(parsed) << parsed.error()->message();
  std::vector<std::string> names;
  for (const TensorInfo &info : parsed.value().tensors()) names.push_back(info.name);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c"}));
  // An overlap between tensors listed apart is still found.
  const std::string overlap = "{" + entry_json("b", "F32", {1}, 4, 8) + "," + entry_json("c", "F32", {1}, 8, 12) + "," +
                              entry_json("a", "F32", {2}, 0, 8) + "}";
  EXPECT_TRUE(
      FailsWith(parse(overlap, 12), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                {"tensor \"b\": begins at 4 but the previous tensor \"a\" ends at 8", "an overlap of 4 bytes"}));
}

TEST(Safetensors, TrailingBytesAfterTheLastTensorAreRejected) {
  auto result = parse(header_json({{"a", "F32", {2}}}), 11);
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"t.safetensors", "the tensors end at 8 but the data section has 11 bytes: 3 trailing bytes"}));
  EXPECT_TRUE(HasValues(result, 11, 8));
  // No tensors at all, but data.
  EXPECT_TRUE(HasValues(parse("{}", 5), 5, 0));
  // As a whole file.
  EXPECT_TRUE(FailsWith(parse_safetensors(file_bytes(header_json({{"a", "F32", {2}}}), 9), "x.safetensors"),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"x.safetensors", "1 trailing bytes"}));
}

TEST(Safetensors, ATensorPastTheEndOfTheFileIsRejected) {
  auto result = parse(header_json({{"a", "F32", {4}}}), 12);
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"tensor \"a\": ends at 16, past the end of the data section (12 bytes)"}));
  EXPECT_TRUE(HasValues(result, 12, 16));
}

// ---- sizes ---------------------------------------------------------------

TEST(Safetensors, ByteLengthMustMatchShapeAndDtype) {
  auto result = parse("{" + entry_json("w", "F32", {2, 3}, 0, 20) + "}", 20);
  EXPECT_TRUE(
      FailsWith(result, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                {"t.safetensors", "tensor \"w\": data_offsets [0, 20) hold 20 bytes", "shape [2, 3] of F32 needs 24"}));
  EXPECT_TRUE(HasValues(result, 24, 20));
  // Sub-byte types count bits: 8 F4 values are 4 bytes, 4 F6 values 3 bytes.
  EXPECT_TRUE(parse("{" + entry_json("w", "F4", {8}, 0, 4) + "}", 4));
  EXPECT_TRUE(parse("{" + entry_json("w", "F6_E2M3", {4}, 0, 3) + "}", 3));
  EXPECT_TRUE(HasValues(parse("{" + entry_json("w", "F4", {8}, 0, 8) + "}", 8), 4, 8));
}

TEST(Safetensors, ABitCountThatIsNotWholeBytesIsRejected) {
  auto result = parse("{" + entry_json("w", "F4", {3}, 0, 2) + "}", 2);
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"tensor \"w\": shape [3] of F4 is 12 bits, not a whole number of bytes"}));
  EXPECT_TRUE(FailsWith(parse("{" + entry_json("w", "F6_E3M2", {5}, 0, 4) + "}", 4), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"30 bits, not a whole number of bytes"}));
}

TEST(Safetensors, ShapeProductOverflowIsRejected) {
  // 2^32 * 2^32 elements overflow 64 bits.
  auto result = parse("{" + entry_json("w", "U8", {4294967296, 4294967296}, 0, 0) + "}", 0);
  EXPECT_TRUE(
      FailsWith(result, ROOTSPAN_ERR_INVALID_CHECKPOINT,
                {"tensor \"w\": shape [4294967296, 4294967296] of U8 has more elements than 64 bits can count"}));
  // 2^62 F32 elements fit, their bits do not.
  EXPECT_TRUE(FailsWith(parse("{" + entry_json("w", "F32", {4611686018427387904}, 0, 0) + "}", 0),
                        ROOTSPAN_ERR_INVALID_CHECKPOINT, {"has more bits than 64 bits can count"}));
  // A zero dimension makes an empty tensor whatever the others are.
  EXPECT_TRUE(parse("{" + entry_json("w", "U8", {4294967296, 4294967296, 0}, 0, 0) + "}", 0));
}

TEST(Safetensors, ErrorsNameTheFileOnOpen) {
  TempDir dir;
  const auto path = dir.write("named.safetensors", file_bytes(header_json({{"w", "F32", {2}}}), 4));
  auto result = open_safetensors(path);
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_CHECKPOINT, {path.string(), "tensor \"w\"", "past the end"}));
  EXPECT_TRUE(FailsWith(open_safetensors(dir.path() / "absent.safetensors"), ROOTSPAN_ERR_IO, {"absent.safetensors"}));
}

// C reads a name up to its first NUL: "a\0x" would be taken for "a" (issue 35 item 5).
TEST(Safetensors, ANameHoldingANulByteIsRefusedWhereItLies) {
  const std::string second = R"("a\u0000x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]})";
  const std::string header = "{" + entry_json("a", "F32", {1}, 0, 4) + ", " + second + "}";
  const std::size_t at = 8 + header.find(second);
  EXPECT_TRUE(
      FailsWith(parse(header, 8), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                {"t.safetensors", "tensor \"a\\x00x\": the name holds a NUL byte at position 1",
                 "(the name begins at byte " + std::to_string(at) + " of the file)", "so it would read as \"a\""}));
  // The same key nested in a value, or as a metadata key, is not where the name lies.
  const std::string decoy = R"("__metadata__":{"a\u0000x":"m"}, )";
  const std::string later = "{" + decoy + entry_json("a", "F32", {1}, 0, 4) + ", " + second + "}";
  EXPECT_TRUE(FailsWith(parse(later, 8), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"(the name begins at byte " + std::to_string(8 + later.find(second)) + " of the file)"}));
  // Only NUL: other control bytes are escaped in messages, and read as the reference reads them.
  auto tab = parse("{" + entry_json("a\\tb", "F32", {1}, 0, 4) + "}", 4);
  ASSERT_TRUE(tab) << tab.error()->message();
  EXPECT_EQ(tab.value().tensors()[0].name, "a\tb");
}

TEST(Safetensors, HostileNamesAreEscapedInMessages) {
  auto result = parse("{\"a\\nb\\u0001\":[]}", 0);
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_CHECKPOINT, {"tensor \"a\\nb\\x01\": entry is"}));
}

}  // namespace
}  // namespace rootspan::weights
