// Helpers for the weights tests: a temporary folder, a builder of
// safetensors bytes (independent of the reader under test: its own dtype
// table, its own layout), and assertions on diagnostics.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/diagnostic.hpp"
#include "tests/support/temp_dir.hpp"

namespace rootspan::testing {

namespace fs = std::filesystem;

// The test's own dtype table (docs/weight-schema.md), kept apart from the reader's.
inline std::uint64_t dtype_bits(std::string_view dtype) {
  static const std::map<std::string_view, std::uint64_t> bits = {
      {"BOOL", 8},        {"U8", 8},          {"I8", 8},      {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8},
      {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}, {"I16", 16},    {"U16", 16},    {"F16", 16},    {"BF16", 16},
      {"I32", 32},        {"U32", 32},        {"F32", 32},    {"C64", 64},    {"F64", 64},    {"I64", 64},
      {"U64", 64},        {"F4", 4},          {"F6_E2M3", 6}, {"F6_E3M2", 6}};
  const auto found = bits.find(dtype);
  return found == bits.end() ? 8 : found->second;
}

struct TensorSpec {
  std::string name;
  std::string dtype;
  std::vector<std::uint64_t> shape;
};

inline std::uint64_t tensor_bytes(const TensorSpec &tensor) {
  std::uint64_t count = 1;
  for (auto d : tensor.shape) count *= d;
  return count * dtype_bits(tensor.dtype) / 8;
}

inline std::string shape_json(const std::vector<std::uint64_t> &shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

inline std::string entry_json(const std::string &name, const std::string &dtype,
                              const std::vector<std::uint64_t> &shape, std::uint64_t begin, std::uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape_json(shape) + ",\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

// A header with the tensors laid back to back in the order given. Names are
// written as they are (no escaping): tests pass plain names.
inline std::string header_json(const std::vector<TensorSpec> &tensors,
                               const std::map<std::string, std::string> &metadata = {}) {
  std::string out = "{";
  bool first = true;
  if (!metadata.empty()) {
    out += "\"__metadata__\":{";
    bool first_meta = true;
    for (const auto &[key, value] : metadata) {
      out += (first_meta ? "" : ",") + ("\"" + key + "\":\"" + value + "\"");
      first_meta = false;
    }
    out += "}";
    first = false;
  }
  std::uint64_t offset = 0;
  for (const auto &tensor : tensors) {
    const std::uint64_t end = offset + tensor_bytes(tensor);
    out += (first ? "" : ",") + entry_json(tensor.name, tensor.dtype, tensor.shape, offset, end);
    first = false;
    offset = end;
  }
  return out + "}";
}

inline std::uint64_t data_bytes(const std::vector<TensorSpec> &tensors) {
  std::uint64_t total = 0;
  for (const auto &tensor : tensors) total += tensor_bytes(tensor);
  return total;
}

// The byte at position `i` of every data section the builder writes.
inline std::byte pattern_byte(std::uint64_t i) { return static_cast<std::byte>((i * 31 + 7) & 0xFF); }

// 8-byte little-endian `header_length` (by default the header's size), the
// header, then `data_size` pattern bytes.
inline std::vector<std::byte> file_bytes(std::string_view header, std::uint64_t data_size,
                                         std::uint64_t header_length = UINT64_MAX) {
  if (header_length == UINT64_MAX) header_length = header.size();
  std::vector<std::byte> out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((header_length >> (8 * i)) & 0xFF));
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  for (std::uint64_t i = 0; i < data_size; ++i) out.push_back(pattern_byte(i));
  return out;
}

inline std::vector<std::byte> safetensors_file(const std::vector<TensorSpec> &tensors,
                                               const std::map<std::string, std::string> &metadata = {}) {
  return file_bytes(header_json(tensors, metadata), data_bytes(tensors));
}

inline std::vector<std::byte> bytes_of(std::string_view text) {
  return {reinterpret_cast<const std::byte *>(text.data()),
          reinterpret_cast<const std::byte *>(text.data()) + text.size()};
}

// Fails unless `result` failed with `code` and its message contains every
// fragment.
template <class T>
::testing::AssertionResult FailsWith(const Result<T> &result, rootspan_status code,
                                     std::initializer_list<std::string_view> fragments) {
  if (result) return ::testing::AssertionFailure() << "succeeded, expected code " << code;
  const Diagnostic &error = result.error();
  const std::string message = error.message();
  if (error.code != code) {
    return ::testing::AssertionFailure() << "code " << error.code << ", expected " << code << ": " << message;
  }
  for (std::string_view fragment : fragments) {
    if (message.find(fragment) == std::string::npos) {
      return ::testing::AssertionFailure() << "message lacks '" << fragment << "': " << message;
    }
  }
  return ::testing::AssertionSuccess() << message;
}

// Fails unless `result` failed with expected and actual values.
template <class T>
::testing::AssertionResult HasValues(const Result<T> &result, std::uint64_t expected, std::uint64_t actual) {
  if (result) return ::testing::AssertionFailure() << "succeeded";
  const auto &values = result.error()->values;
  if (!values) return ::testing::AssertionFailure() << "no values: " << result.error()->message();
  if (values->first != expected || values->second != actual) {
    return ::testing::AssertionFailure() << "values (" << values->first << ", " << values->second << "), expected ("
                                         << expected << ", " << actual << "): " << result.error()->message();
  }
  return ::testing::AssertionSuccess();
}

}  // namespace rootspan::testing
