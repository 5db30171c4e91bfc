// The fast safetensors header reader against the strict one: on every valid
// header both read the same fields; on every header that breaks a rule the
// fast reader gives up, so that the strict reader is the one that words the
// error (parse_safetensors_header's errors are tested in safetensors_test).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "weights/formats/limits.hpp"
#include "weights/formats/safetensors.hpp"
#include "weights/formats/safetensors_fast_reader.hpp"

namespace rootspan::weights {
namespace {

void expect_same_fields(const SafetensorsFields &a, const SafetensorsFields &b) {
  EXPECT_EQ(a.metadata, b.metadata);
  EXPECT_EQ(a.has_metadata, b.has_metadata);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  // The strict reader yields tensors in key order, the fast one in file order.
  auto sorted = [](std::vector<TensorInfo> t) {
    std::sort(t.begin(), t.end(), [](const TensorInfo &x, const TensorInfo &y) { return x.name < y.name; });
    return t;
  };
  const auto x = sorted(a.tensors), y = sorted(b.tensors);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i].name, y[i].name);
    EXPECT_EQ(x[i].dtype.name, y[i].dtype.name);
    EXPECT_EQ(x[i].shape, y[i].shape);
    EXPECT_EQ(x[i].begin, y[i].begin);
    EXPECT_EQ(x[i].end, y[i].end);
  }
}

// The text read where it lies, padded as kHeaderReadPadding asks; the padding
// is closing braces, which the parser must not take for the header's.
std::optional<SafetensorsFields> read_in_place(const std::string &header) {
  const std::string buffer = header + std::string(kHeaderReadPadding, '}');
  return read_safetensors_fields_fast(std::string_view(buffer.data(), header.size()), buffer.size());
}

TEST(SafetensorsFastReader, ReadsValidHeadersAsTheStrictReaderDoes) {
  const std::vector<std::string> valid = {
      R"({})",
      R"({"__metadata__":{}})",
      R"( {"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
           "a":{"shape":[],"data_offsets":[8,10],"dtype":"BF16"}} )",
      R"({"__metadata__":{"format":"pt","x":"\u00e9"},"w":{"data_offsets":[0,0],"dtype":"U8","shape":[0,3]}})",
      R"({"w":{"dtype":"F64","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"data_offsets":[0,8]}})",
      // minus signs and escaped quotes inside strings are text, not numbers
      R"({"__metadata__":{"date":"2026-12-05","q\"-1":"-0"},"a-\"-0\\":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})",
      R"({"__metadata__":null})",  // no metadata, as the reference reads it
      // offsets past 2^63: unsigned 64-bit integers
      R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[9223372036854775808,18446744073709551615]}})",
  };
  for (const std::string &header : valid) {
    SCOPED_TRACE(header);
    const auto fast = read_safetensors_fields_fast(header);
    const auto strict = read_safetensors_fields_strictly(header, "t.safetensors");
    ASSERT_TRUE(strict) << strict.error()->message();
    ASSERT_TRUE(fast.has_value());
    expect_same_fields(*fast, strict.value());
    const auto in_place = read_in_place(header);
    ASSERT_TRUE(in_place.has_value());
    expect_same_fields(*in_place, strict.value());
  }
}

TEST(SafetensorsFastReader, GivesUpOnEveryBrokenRule) {
  const std::string rank65 = [] {
    std::string shape = "[";
    for (int i = 0; i < 65; ++i) shape += i == 0 ? "1" : ",1";
    return shape + "]";
  }();
  const std::vector<std::string> broken = {
      R"([])",                                                     // not an object
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})",  // syntax: unclosed
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
      R"({"w":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})",       // repeated field
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1}})",           // unknown field
      R"({"w":{"dtype":"F32","shape":[1]}})",                                          // missing field
      R"({"w":{"dtype":"F99","shape":[1],"data_offsets":[0,4]}})",                     // unknown dtype
      R"({"w":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})",                         // dtype not a string
      R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",                    // negative
      R"({"w":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})",                   // not an integer
      R"({"w":{"dtype":"F32","shape":1,"data_offsets":[0,4]}})",                       // shape not an array
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})",                   // three offsets
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})",                     // end before begin
      R"({"w":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})",                   // nested array
      R"({"w":[]})",                                                                   // entry not an object
      R"({"__metadata__":{"k":1}})",                                                   // metadata not string
      R"({"__metadata__":{"k":"a","k":"b"}})",                                         // metadata duplicate
      R"({"__metadata__":{},"__metadata__":{}})",                                      // metadata twice
      R"({"__metadata__":"x"})",                                                       // metadata not object
      R"({"w":{"dtype":"F32","shape":)" + rank65 + R"(,"data_offsets":[0,4]}})",       // rank over the limit
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} trailing)",            // text after the end
      R"({"w\u0000x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",              // a NUL in a name
      R"({"w":{"dtype":"F32","shape":[-0],"data_offsets":[0,0]}})",                    // -0 is not non-negative
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551616]}})",  // past 2^64 - 1
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4e0]}})",                   // an exponent
      R"({"w\ud800":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",               // a lone surrogate
      R"({"w\ud800\u0041":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",  // a high surrogate, then no low one
      R"({"w\ud800\ud800":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",  // two high surrogates
      R"({"w\udc00":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",        // a lone low surrogate
      R"({"__metadata__":{"k":{"a":[1]}}})",                                    // nested four deep
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},})",             // a trailing comma
  };
  for (const std::string &header : broken) {
    SCOPED_TRACE(header);
    EXPECT_FALSE(read_safetensors_fields_fast(header).has_value());
    EXPECT_FALSE(read_in_place(header).has_value());
    EXPECT_FALSE(read_safetensors_fields_strictly(header, "t.safetensors"));
  }
}

TEST(SafetensorsFastReader, GivesUpPastEveryLimitAndReadsUpToIt) {
  auto shape_of = [](std::size_t rank) {
    std::string shape = "[";
    for (std::size_t i = 0; i < rank; ++i) shape += i == 0 ? "0" : ",0";
    return shape + "]";
  };
  auto header_of_shape = [&](std::size_t rank) {
    return R"({"t":{"dtype":"U8","shape":)" + shape_of(rank) + R"(,"data_offsets":[0,0]}})";
  };
  auto object_of = [](std::size_t members, const std::string &value) {
    std::string text = "{";
    for (std::size_t i = 0; i < members; ++i) text += (i ? ",\"" : "\"") + std::to_string(i) + "\":" + value;
    return text + "}";
  };
  const auto rank_64 = read_safetensors_fields_fast(header_of_shape(kMaxTensorRank));
  ASSERT_TRUE(rank_64.has_value());
  EXPECT_EQ(rank_64->tensors.at(0).shape.size(), kMaxTensorRank);
  EXPECT_FALSE(read_safetensors_fields_fast(header_of_shape(kMaxTensorRank + 1)).has_value());
  EXPECT_FALSE(
      read_safetensors_fields_fast(header_of_shape(5'000'000)).has_value());  // the audit's header, scaled down
  // One member more than a header may hold, each a valid entry: refused once counted, before any is read.
  const std::string entry = R"({"dtype":"U8","shape":[0],"data_offsets":[0,0]})";
  EXPECT_FALSE(read_safetensors_fields_fast(object_of(kMaxTensorsPerFile + 1, entry)).has_value());
  const std::string strings = object_of(kMaxTensorsPerFile + 1, R"("v")");
  EXPECT_FALSE(read_safetensors_fields_fast(R"({"__metadata__":)" + strings + "}").has_value());
  // Text after the header's object, even a whole second object, is not a header.
  const std::string one = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  ASSERT_TRUE(read_safetensors_fields_fast(one).has_value());
  EXPECT_FALSE(read_safetensors_fields_fast(one + " {}").has_value());
  EXPECT_FALSE(read_safetensors_fields_fast(one + "}").has_value());
  EXPECT_FALSE(read_safetensors_fields_fast(one + " 0").has_value());
}

}  // namespace
}  // namespace rootspan::weights
