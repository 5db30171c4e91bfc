// The GGUF reader: every type of ggml's table read back, and every rule
// refused with its code, its byte offset and its field.
#include "weights/formats/gguf.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "gguf_writer.hpp"
#include "test_support.hpp"
#include "weights/checkpoints/checkpoint.hpp"
#include "weights/schema/resolve.hpp"
#include "weights/schema/schema.hpp"

namespace rootspan::testing {
namespace {

using namespace rootspan::weights;

Result<GgufFile> parse(const GgufWriter &writer) { return parse_gguf(writer.bytes(), "m.gguf"); }

::testing::AssertionResult Refused(const GgufWriter &writer, std::initializer_list<std::string_view> fragments) {
  return FailsWith(parse(writer), ROOTSPAN_ERR_INVALID_CHECKPOINT, fragments);
}

GgufWriter two_tensors() {
  GgufWriter w;
  w.string("general.architecture", "llama").tensor("a", 0, {8}).tensor("b", 0, {4, 2});
  return w;
}

TEST(GgufTable, MatchesTheTestsOwnTable) {
  ASSERT_EQ(gguf_types().size(), gguf_test_types().size());
  for (const GgufTestType &expected : gguf_test_types()) {
    const GgufType *type = gguf_type(expected.id);
    ASSERT_NE(type, nullptr) << expected.name;
    EXPECT_EQ(type->name, expected.name);
    EXPECT_EQ(type->values_per_block, expected.values_per_block) << expected.name;
    EXPECT_EQ(type->bytes_per_block, expected.bytes_per_block) << expected.name;
    EXPECT_EQ(type->dense.has_value(), expected.dense != nullptr) << expected.name;
  }
  for (std::uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u}) {
    EXPECT_EQ(gguf_type(removed), nullptr);
    EXPECT_TRUE(gguf_removed_type_name(removed).has_value()) << removed;
  }
  EXPECT_EQ(gguf_type(40), nullptr);
}

TEST(Gguf, ReadsEveryTypeWithItsSizeOffsetAndShape) {
  GgufWriter w;
  w.u32("general.alignment", 32).string("general.name", "every type");
  for (const GgufTestType &type : gguf_test_types()) {
    w.tensor(std::string("t.") + type.name, type.id, {2 * type.values_per_block, 3});
  }
  auto file = parse(w);
  ASSERT_TRUE(file) << file.error()->message();
  ASSERT_EQ(file.value().tensors.size(), gguf_test_types().size());
  EXPECT_EQ(file.value().data_offset, w.data_offset());
  EXPECT_EQ(file.value().data_offset % 32, 0u);
  const auto offsets = w.offsets();
  for (std::size_t i = 0; i < w.tensors.size(); ++i) {
    const GgufTensor &tensor = file.value().tensors[i];
    const GgufTestType &type = gguf_test_type(w.tensors[i].type);
    EXPECT_EQ(tensor.name, w.tensors[i].name);
    EXPECT_EQ(tensor.type->id, type.id);
    EXPECT_EQ(tensor.bytes, 6 * type.bytes_per_block) << type.name;
    EXPECT_EQ(tensor.offset, offsets[i]) << type.name;
    EXPECT_EQ(tensor.shape(), (std::vector<std::uint64_t>{3, 2 * type.values_per_block}));
    EXPECT_EQ(tensor.block_grid(), (std::vector<std::uint64_t>{3, 2}));
    EXPECT_EQ(tensor.byte_shape(), (std::vector<std::uint64_t>{3, 2 * type.bytes_per_block}));
    EXPECT_EQ(file.value().find_tensor(tensor.name), &tensor);
  }
}

TEST(Gguf, ReadsTypedMetadataAndArrays) {
  GgufWriter w;
  w.u32("a.u32", 7)
      .u64("a.u64", 1ull << 40)
      .f32("a.f32", 1.5f)
      .boolean("a.bool", true)
      .string("a.string", "héllo")
      .u32_array("a.array", {1, 2, 3})
      .string_array("a.tokens", {"x", "", "yz"});
  w.version = 2;
  auto file = parse(w);
  ASSERT_TRUE(file) << file.error()->message();
  const GgufFile &f = file.value();
  EXPECT_EQ(f.version, 2u);
  EXPECT_EQ(f.metadata.size(), 7u);
  EXPECT_EQ(f.find_value("a.u32")->unsigned_integer(), 7u);
  EXPECT_EQ(f.find_value("a.u64")->unsigned_integer(), 1ull << 40);
  EXPECT_EQ(f.find_value("a.f32")->number(), 1.5);
  EXPECT_EQ(f.find_value("a.bool")->number(), 1.0);
  EXPECT_EQ(*f.find_value("a.string")->string(), "héllo");
  const GgufValue *array = f.find_value("a.array");
  ASSERT_TRUE(array->is_array());
  EXPECT_EQ(array->element_type, GgufValueType::kU32);
  EXPECT_EQ(array->count, 3u);
  EXPECT_EQ(array->unsigned_integer(2), 3u);
  EXPECT_FALSE(array->unsigned_integer(3).has_value());
  const GgufValue *tokens = f.find_value("a.tokens");
  EXPECT_EQ(tokens->count, 3u);
  EXPECT_EQ(*tokens->string(2), "yz");
  EXPECT_EQ(f.alignment, 32u);
  EXPECT_EQ(f.data_offset, w.data_offset());
}

TEST(Gguf, HonoursACustomAlignment) {
  GgufWriter w;
  w.alignment = 64;
  w.u32("general.alignment", 64).tensor("a", 0, {3}).tensor("b", 8, {32});
  auto file = parse(w);
  ASSERT_TRUE(file) << file.error()->message();
  EXPECT_EQ(file.value().alignment, 64u);
  EXPECT_EQ(file.value().data_offset % 64, 0u);
  EXPECT_EQ(file.value().tensors[1].offset, 64u);
}

TEST(Gguf, OpensFromDiskLikeFromMemory) {
  TempDir dir;
  GgufWriter w = two_tensors();
  const auto path = dir.write("m.gguf", w.bytes());
  auto file = open_gguf(path);
  ASSERT_TRUE(file) << file.error()->message();
  EXPECT_EQ(file.value().file_size, w.bytes().size());
  EXPECT_EQ(file.value().tensors.size(), 2u);
  EXPECT_EQ(file.value().data_offset, w.data_offset());
}

// ---- refusals ---------------------------------------------------------------

TEST(GgufRefuses, BadMagic) {
  GgufWriter w = two_tensors();
  w.magic = "GGML";
  EXPECT_TRUE(Refused(w, {"\"m.gguf\": at byte 0: magic", "\"GGML\"", "expected \"GGUF\""}));
  EXPECT_TRUE(FailsWith(parse_gguf(bytes_of("GG"), "m.gguf"), ROOTSPAN_ERR_INVALID_CHECKPOINT,
                        {"too short for the GGUF magic"}));
}

TEST(GgufRefuses, VersionOneAndUnknownVersions) {
  GgufWriter w = two_tensors();
  w.version = 1;
  EXPECT_TRUE(Refused(w, {"at byte 4: version", "version 1 is not supported"}));
  w.version = 4;
  EXPECT_TRUE(Refused(w, {"version 4 is not supported", "versions 2 and 3"}));
  EXPECT_TRUE(HasValues(parse(w), 3, 4));
}

TEST(GgufRefuses, ByteSwappedFiles) {
  GgufWriter w = two_tensors();
  w.version = 0x03000000;
  EXPECT_TRUE(Refused(w, {"version 0x03000000 is byte-swapped", "big-endian", "only little-endian"}));
}

TEST(GgufRefuses, CountsTheFileCannotHold) {
  GgufWriter w = two_tensors();
  w.tensor_count = 1ull << 62;
  EXPECT_TRUE(Refused(w, {"at byte 8: tensor count", "4611686018427387904 tensors cannot fit"}));
  w.tensor_count.reset();
  w.kv_count = ~0ull;
  EXPECT_TRUE(Refused(w, {"at byte 16: key-value count", "cannot fit"}));
  // A count that fits the bound but not the bytes that follow.
  w.kv_count = 5;
  EXPECT_TRUE(Refused(w, {"\"m.gguf\": at byte"}));
}

TEST(GgufRefuses, StringPastTheEndOfTheFile) {
  GgufWriter w;
  w.key("general.name", kGgufString);
  w.kvs.u64(1000);
  w.kvs.raw("short");
  EXPECT_TRUE(
      Refused(w, {"at byte 48: value of \"general.name\"", "string length 1000 runs past the end of the file"}));
}

TEST(GgufRefuses, StringClaimingMoreThanOneGiB) {
  GgufWriter w;
  w.key("general.name", kGgufString);
  w.kvs.u64((1ull << 30) + 1);
  EXPECT_TRUE(Refused(w, {"value of \"general.name\"", "exceeds the limit of 1073741824 bytes"}));
  EXPECT_TRUE(HasValues(parse(w), 1ull << 30, (1ull << 30) + 1));
  // The same for a key.
  GgufWriter k;
  k.kvs.u64(~0ull);
  k.kvs.raw(std::string(16, 'k'));
  k.kv_written = 1;
  EXPECT_TRUE(Refused(k, {"at byte 24: key #0", "exceeds the limit"}));
}

TEST(GgufRefuses, UnknownValueType) {
  GgufWriter w;
  w.key("x", 13);
  w.kvs.u32(0);
  EXPECT_TRUE(Refused(w, {"value of \"x\"", "value type 13 is not one of 0-12"}));
}

TEST(GgufRefuses, NestedArrays) {
  GgufWriter w;
  w.key("x", kGgufArray);
  w.kvs.u32(kGgufArray);
  w.kvs.u64(1);
  w.kvs.u32(kGgufU8);
  w.kvs.u64(1);
  w.kvs.u8(1);
  EXPECT_TRUE(Refused(w, {"value of \"x\"", "nested arrays are not allowed"}));
}

TEST(GgufRefuses, ArraysLongerThanTheFile) {
  GgufWriter w;
  w.key("x", kGgufArray);
  w.kvs.u32(kGgufU64);
  w.kvs.u64(1ull << 61);  // 2^64 bytes: the product itself overflows
  EXPECT_TRUE(Refused(w, {"value of \"x\"", "values of u64 run past the end of the file"}));
  GgufWriter s;
  s.key("tokens", kGgufArray);
  s.kvs.u32(kGgufString);
  s.kvs.u64(1000000);
  EXPECT_TRUE(Refused(s, {"value of \"tokens\"", "1000000 strings need at least 8 bytes each"}));
}

TEST(GgufRefuses, DuplicateKeys) {
  GgufWriter w;
  w.u32("a", 1).u32("b", 2).u32("a", 3);
  EXPECT_TRUE(Refused(w, {"key #2", "duplicate key \"a\""}));
}

TEST(GgufRefuses, KeysThatAreNotUtf8) {
  GgufWriter w;
  w.u32("bad\xff", 1);
  EXPECT_TRUE(Refused(w, {"key #0", "is not valid UTF-8"}));
}

TEST(GgufRefuses, KeysThatAreNotTheFormatsDottedAsciiNames) {
  const auto refused = [](const std::string &key, std::string_view fragment) {
    GgufWriter w;
    w.u32("general.alignment_ok", 1).u32(key, 2);
    return Refused(w, {"key #1", fragment});
  };
  EXPECT_TRUE(refused("", "the key is empty"));
  EXPECT_TRUE(refused("general..name", "key \"general..name\" has an empty segment at byte 8"));
  EXPECT_TRUE(refused(".name", "empty segment at byte 0"));
  EXPECT_TRUE(refused("general.", "ends with '.'"));
  EXPECT_TRUE(refused("general name", "holds \" \" at byte 7"));
  EXPECT_TRUE(refused("g\xc3\xa9n\xc3\xa9ral.name", "at byte 1 of the key"));
  // What converters write is accepted: digits, '_', '-', capitals.
  GgufWriter ok;
  ok.u32("general.base_model.0.name", 1).u32("tokenizer.ggml.pre-v2", 2).u32("Vendor.Key_X", 3);
  EXPECT_TRUE(parse(ok)) << "valid dotted names";
}

TEST(GgufRefuses, DuplicateTensorNames) {
  GgufWriter w;
  w.tensor("a", 0, {4}).tensor("b", 0, {4}).tensor("a", 0, {4});
  EXPECT_TRUE(Refused(w, {"tensor \"a\" name", "duplicate tensor name"}));
}

TEST(GgufRefuses, NamesOf64BytesOrMoreAndEmptyNames) {
  GgufWriter ok;
  ok.tensor(std::string(63, 'n'), 0, {4});
  EXPECT_TRUE(parse(ok));
  GgufWriter w;
  w.tensor(std::string(64, 'n'), 0, {4});
  EXPECT_TRUE(Refused(w, {"tensor #0 name", "string length 64 exceeds the limit of 63 bytes"}));
  GgufWriter e;
  e.tensor("", 0, {4});
  EXPECT_TRUE(Refused(e, {"tensor #0 name", "is empty"}));
}

// C reads a name up to its first NUL: "a\0x" would be taken for "a" (issue 35 item 5).
TEST(GgufRefuses, NamesHoldingANulByte) {
  GgufWriter w;
  w.tensor("a", 0, {8}).tensor(std::string("a\0x", 3), 0, {8});
  // The second name's length is at 24 (the fixed header) + 33 (the first tensor's info).
  EXPECT_TRUE(Refused(w, {"at byte 57: tensor #1 name: \"a\\x00x\" holds a NUL byte at position 1 (its bytes begin "
                          "at byte 65)",
                          "so it would read as \"a\""}));
}

TEST(GgufRefuses, ZeroOrFiveDimensions) {
  GgufWriter w;
  w.tensor("a", 0, {});
  EXPECT_TRUE(Refused(w, {"tensor \"a\" dimension count", "0 dimensions, expected 1 to 4"}));
  GgufWriter five;
  five.tensor("a", 0, {1, 1, 1, 1, 1});
  EXPECT_TRUE(Refused(five, {"tensor \"a\" dimension count", "5 dimensions, expected 1 to 4"}));
  GgufWriter huge;
  huge.tensor("a", 0, {4});
  huge.tensors[0].dims_override = 0xFFFFFFFF;
  EXPECT_TRUE(Refused(huge, {"4294967295 dimensions"}));
}

TEST(GgufRefuses, NegativeDimensions) {
  GgufWriter w;
  w.tensor("a", 0, {4, ~0ull});
  EXPECT_TRUE(Refused(w, {"tensor \"a\" ne[1]", "is negative as a signed 64-bit number (-1)"}));
}

TEST(GgufRefuses, UnknownAndRemovedTypes) {
  GgufWriter w;
  w.tensor("a", 40, {4});
  EXPECT_TRUE(Refused(w, {"tensor \"a\" type", "unknown type id 40", "known: F32, F16, Q4_0"}));
  for (auto [id, name] : {std::pair{4u, "Q4_2"}, std::pair{5u, "Q4_3"}, std::pair{31u, "Q4_0_4_4"},
                          std::pair{36u, "IQ4_NL_4_4"}, std::pair{38u, "IQ4_NL_8_8"}}) {
    GgufWriter r;
    r.tensor("a", id, {32});
    EXPECT_TRUE(Refused(r, {"tensor \"a\" type", std::to_string(id) + " (" + name + ") was removed from ggml"}));
  }
}

TEST(GgufRefuses, PartialBlocks) {
  GgufWriter w;
  w.tensor("q", 12, {300, 2});  // Q4_K: 256 values per block
  EXPECT_TRUE(Refused(w, {"tensor \"q\" ne[0]", "300 values are not a whole number of Q4_K blocks of 256"}));
}

TEST(GgufRefuses, LyingDimensionsWhoseProductWraps) {
  // 2^32 × 2^32 wraps to 0 in 64 bits.
  GgufWriter w;
  w.tensor("a", 0, {1ull << 32, 1ull << 32});
  EXPECT_TRUE(Refused(w, {"tensor \"a\" dimensions", "more elements than a signed 64-bit number can count"}));
  // 2^62 elements fit, but not their 2^65 bytes.
  GgufWriter b;
  b.tensor("a", 28, {1ull << 31, 1ull << 31});
  EXPECT_TRUE(Refused(b, {"tensor \"a\" dimensions", "of F64 hold more bytes than 64 bits can count"}));
  // Plausible dimensions whose bytes the file does not have.
  GgufWriter c;
  c.tensor("a", 0, {1ull << 40});
  c.truncate_to = 200;
  EXPECT_TRUE(Refused(c, {"tensor \"a\" data", "run past the end of the 200-byte file"}));
}

TEST(GgufRefuses, MisalignedAndOverlappingOffsets) {
  GgufWriter w;
  w.tensor("a", 0, {3}).tensor("b", 0, {4});
  w.tensors[1].offset = 12;
  EXPECT_TRUE(Refused(w, {"tensor \"b\" offset", "is 12, expected 32",
                          "the previous tensor \"a\" ends at 12, padded to the alignment of 32"}));
  EXPECT_TRUE(HasValues(parse(w), 32, 12));
  w.tensors[1].offset = 0;
  EXPECT_TRUE(Refused(w, {"tensor \"b\" offset", "is 0, expected 32", "overlap"}));
  GgufWriter first;
  first.tensor("a", 0, {4});
  first.tensors[0].offset = 32;
  EXPECT_TRUE(Refused(first, {"tensor \"a\" offset", "is 32, expected 0"}));
  GgufWriter wrap;
  wrap.tensor("a", 0, {4}).tensor("b", 0, {4});
  wrap.tensors[0].offset = 0;
  wrap.tensors[1].offset = ~0ull - 8;
  EXPECT_TRUE(Refused(wrap, {"tensor \"b\" offset", "expected 32"}));
}

TEST(GgufRefuses, AlignmentThatIsNotAU32PowerOfTwo) {
  for (std::uint32_t bad : {0u, 3u, 48u}) {
    GgufWriter w;
    w.u32("general.alignment", bad).tensor("a", 0, {4});
    EXPECT_TRUE(Refused(w, {"general.alignment", std::to_string(bad) + " is not a power of two"}));
  }
  GgufWriter t;
  t.u64("general.alignment", 32).tensor("a", 0, {4});
  EXPECT_TRUE(Refused(t, {"general.alignment", "is of type u64, expected u32"}));
}

TEST(GgufRefuses, DataPastTheEndOfTheFile) {
  GgufWriter w = two_tensors();
  w.truncate_to = w.bytes().size() - 1;
  EXPECT_TRUE(Refused(w, {"tensor \"b\" data", "run past the end of the"}));
  // Cut inside the tensor infos: the read itself fails.
  GgufWriter h = two_tensors();
  h.truncate_to = h.header().out.size() - 3;
  EXPECT_TRUE(Refused(h, {"tensor \"b\" offset", "the file ends after 5"}));
}

// ---- scale ------------------------------------------------------------------

TEST(GgufScale, OpensTenThousandTensors) {
  TempDir dir;
  GgufWriter w;
  w.string("general.architecture", "scale");
  for (int i = 0; i < 10000; ++i) w.tensor("blk." + std::to_string(i) + ".weight", 8, {64, 2});
  const auto path = dir.write("big.gguf", w.bytes());
  const auto start = std::chrono::steady_clock::now();
  auto file = open_gguf(path);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(file) << file.error()->message();
  EXPECT_EQ(file.value().tensors.size(), 10000u);
  std::printf("open_gguf: 10000 tensors, %zu-byte header, %.2f ms\n", static_cast<std::size_t>(w.data_offset()),
              std::chrono::duration<double, std::milli>(elapsed).count());

  // The whole path a load takes before reading data: the checkpoint, its
  // default schema, and every component resolved.
  const auto begin = std::chrono::steady_clock::now();
  auto checkpoint = Checkpoint::open(path);
  ASSERT_TRUE(checkpoint) << checkpoint.error()->message();
  const auto opened = std::chrono::steady_clock::now();
  auto resolved = resolve_schema(checkpoint.value(), default_schema(checkpoint.value()));
  const auto done = std::chrono::steady_clock::now();
  ASSERT_TRUE(resolved) << resolved.error()->message();
  EXPECT_EQ(resolved.value().payloads.size(), 10000u);
  std::printf("Checkpoint::open: %.2f ms; default schema + resolve: %.2f ms\n",
              std::chrono::duration<double, std::milli>(opened - begin).count(),
              std::chrono::duration<double, std::milli>(done - opened).count());
}

}  // namespace
}  // namespace rootspan::testing
