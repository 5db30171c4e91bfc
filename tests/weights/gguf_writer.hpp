// A GGUF writer for tests, independent of the reader under test: its own type
// table, its own layout code. By default it writes a valid version 3 file;
// every field can be overridden so that each refusal can be provoked alone.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rootspan::testing {

// ggml type id -> (values per block, bytes per block), written out here from
// ggml's block layouts, kept apart from the reader's table.
struct GgufTestType {
  std::uint32_t id;
  const char *name;
  std::uint64_t values_per_block;
  std::uint64_t bytes_per_block;
  const char *dense;  // safetensors dtype name of a dense type, or nullptr
};

inline const std::vector<GgufTestType> &gguf_test_types() {
  static const std::vector<GgufTestType> types = {
      {0, "F32", 1, 4, "F32"},
      {1, "F16", 1, 2, "F16"},
      {2, "Q4_0", 32, 2 + 16, nullptr},
      {3, "Q4_1", 32, 4 + 16, nullptr},
      {6, "Q5_0", 32, 2 + 4 + 16, nullptr},
      {7, "Q5_1", 32, 4 + 4 + 16, nullptr},
      {8, "Q8_0", 32, 2 + 32, nullptr},
      {9, "Q8_1", 32, 4 + 32, nullptr},
      {10, "Q2_K", 256, 16 + 64 + 4, nullptr},
      {11, "Q3_K", 256, 32 + 64 + 12 + 2, nullptr},
      {12, "Q4_K", 256, 4 + 12 + 128, nullptr},
      {13, "Q5_K", 256, 4 + 12 + 32 + 128, nullptr},
      {14, "Q6_K", 256, 128 + 64 + 16 + 2, nullptr},
      {15, "Q8_K", 256, 4 + 256 + 32, nullptr},
      {16, "IQ2_XXS", 256, 2 + 64, nullptr},
      {17, "IQ2_XS", 256, 2 + 64 + 8, nullptr},
      {18, "IQ3_XXS", 256, 2 + 96, nullptr},
      {19, "IQ1_S", 256, 2 + 32 + 16, nullptr},
      {20, "IQ4_NL", 32, 2 + 16, nullptr},
      {21, "IQ3_S", 256, 2 + 64 + 8 + 32 + 4, nullptr},
      {22, "IQ2_S", 256, 2 + 64 + 16, nullptr},
      {23, "IQ4_XS", 256, 2 + 2 + 4 + 128, nullptr},
      {24, "I8", 1, 1, "I8"},
      {25, "I16", 1, 2, "I16"},
      {26, "I32", 1, 4, "I32"},
      {27, "I64", 1, 8, "I64"},
      {28, "F64", 1, 8, "F64"},
      {29, "IQ1_M", 256, 32 + 16 + 8, nullptr},
      {30, "BF16", 1, 2, "BF16"},
      {34, "TQ1_0", 256, 48 + 4 + 2, nullptr},
      {35, "TQ2_0", 256, 64 + 2, nullptr},
      {39, "MXFP4", 32, 1 + 16, nullptr},
  };
  return types;
}

inline const GgufTestType &gguf_test_type(std::uint32_t id) {
  for (const auto &type : gguf_test_types()) {
    if (type.id == id) return type;
  }
  static const GgufTestType unknown{id, "?", 1, 1, nullptr};
  return unknown;
}

// Value type numbers of the format.
enum : std::uint32_t {
  kGgufU8 = 0,
  kGgufI8 = 1,
  kGgufU16 = 2,
  kGgufI16 = 3,
  kGgufU32 = 4,
  kGgufI32 = 5,
  kGgufF32 = 6,
  kGgufBool = 7,
  kGgufString = 8,
  kGgufArray = 9,
  kGgufU64 = 10,
  kGgufI64 = 11,
  kGgufF64 = 12,
};

class GgufBytes {
 public:
  std::vector<std::byte> out;
  void u8(std::uint8_t v) { out.push_back(static_cast<std::byte>(v)); }
  void u32(std::uint32_t v) { le(v, 4); }
  void u64(std::uint64_t v) { le(v, 8); }
  void le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xFF));
  }
  void text(const std::string &s) {
    u64(s.size());
    raw(s);
  }
  void raw(const std::string &s) {
    for (char c : s) out.push_back(static_cast<std::byte>(c));
  }
};

struct GgufTestTensor {
  std::string name;
  std::uint32_t type = 0;
  std::vector<std::uint64_t> ne;               // ggml order
  std::optional<std::uint64_t> offset;         // overrides the computed offset
  std::optional<std::uint32_t> dims_override;  // overrides the written dimension count

  std::uint64_t bytes() const {
    const GgufTestType &t = gguf_test_type(type);
    std::uint64_t n = t.bytes_per_block * (ne.empty() ? 0 : ne[0] / t.values_per_block);
    for (std::size_t i = 1; i < ne.size(); ++i) n *= ne[i];
    return n;
  }
};

// The byte at absolute file offset `i` of a data section this writer fills.
inline std::byte gguf_data_byte(std::uint64_t i) { return static_cast<std::byte>((i * 131 + 17) & 0xFF); }

struct GgufWriter {
  std::string magic = "GGUF";
  std::uint32_t version = 3;
  std::uint64_t alignment = 32;               // the layout's; add general.alignment to say it in the file
  std::optional<std::uint64_t> tensor_count;  // override
  std::optional<std::uint64_t> kv_count;      // override
  GgufBytes kvs;
  std::uint64_t kv_written = 0;
  std::vector<GgufTestTensor> tensors;
  std::optional<std::uint64_t> truncate_to;  // cut the file after this many bytes

  void key(const std::string &k, std::uint32_t type) {
    kvs.text(k);
    kvs.u32(type);
    ++kv_written;
  }
  GgufWriter &u32(const std::string &k, std::uint32_t v) {
    key(k, kGgufU32);
    kvs.u32(v);
    return *this;
  }
  GgufWriter &u64(const std::string &k, std::uint64_t v) {
    key(k, kGgufU64);
    kvs.u64(v);
    return *this;
  }
  GgufWriter &f32(const std::string &k, float v) {
    key(k, kGgufF32);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &v, 4);
    kvs.u32(bits);
    return *this;
  }
  GgufWriter &boolean(const std::string &k, bool v) {
    key(k, kGgufBool);
    kvs.u8(v ? 1 : 0);
    return *this;
  }
  GgufWriter &string(const std::string &k, const std::string &v) {
    key(k, kGgufString);
    kvs.text(v);
    return *this;
  }
  GgufWriter &u32_array(const std::string &k, const std::vector<std::uint32_t> &v) {
    key(k, kGgufArray);
    kvs.u32(kGgufU32);
    kvs.u64(v.size());
    for (auto x : v) kvs.u32(x);
    return *this;
  }
  GgufWriter &string_array(const std::string &k, const std::vector<std::string> &v) {
    key(k, kGgufArray);
    kvs.u32(kGgufString);
    kvs.u64(v.size());
    for (const auto &x : v) kvs.text(x);
    return *this;
  }
  GgufWriter &tensor(const std::string &name, std::uint32_t type, std::vector<std::uint64_t> ne) {
    tensors.push_back({name, type, std::move(ne), std::nullopt, std::nullopt});
    return *this;
  }

  static std::uint64_t pad(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }

  // Where tensor i's bytes start in the data section, when not overridden.
  std::vector<std::uint64_t> offsets() const {
    std::vector<std::uint64_t> out;
    std::uint64_t at = 0;
    for (const auto &t : tensors) {
      out.push_back(at);
      at = pad(at + t.bytes(), alignment);
    }
    return out;
  }

  std::uint64_t data_offset() const { return pad(header().out.size(), alignment); }

  GgufBytes header() const {
    GgufBytes b;
    b.raw(magic);
    b.u32(version);
    b.u64(tensor_count.value_or(tensors.size()));
    b.u64(kv_count.value_or(kv_written));
    b.out.insert(b.out.end(), kvs.out.begin(), kvs.out.end());
    const auto at = offsets();
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const auto &t = tensors[i];
      b.text(t.name);
      b.u32(t.dims_override.value_or(static_cast<std::uint32_t>(t.ne.size())));
      for (auto d : t.ne) b.u64(d);
      b.u32(t.type);
      b.u64(t.offset.value_or(at[i]));
    }
    return b;
  }

  std::vector<std::byte> bytes() const {
    GgufBytes b = header();
    std::uint64_t end = pad(b.out.size(), alignment);
    if (!tensors.empty()) end += offsets().back() + tensors.back().bytes();
    if (truncate_to) end = std::min(end, *truncate_to);
    for (std::uint64_t i = b.out.size(); i < end; ++i) b.out.push_back(gguf_data_byte(i));
    if (truncate_to && *truncate_to < b.out.size()) b.out.resize(*truncate_to);
    return b.out;
  }

  // The bytes of tensor i as written.
  std::vector<std::byte> tensor_bytes(std::size_t i) const {
    std::vector<std::byte> out;
    const std::uint64_t begin = data_offset() + offsets()[i];
    for (std::uint64_t k = 0; k < tensors[i].bytes(); ++k) out.push_back(gguf_data_byte(begin + k));
    return out;
  }
};

}  // namespace rootspan::testing
