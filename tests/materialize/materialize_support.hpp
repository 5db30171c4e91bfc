// Helpers for the materialization tests: checkpoints written byte by byte
// with a chosen data-section alignment and distinct pseudo-random data per
// file (so that the order of a packed component's segments shows in its
// bytes), an independent SHA-256 (OpenSSL EVP), and C API handle owners.
#pragma once

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../weights/test_support.hpp"
#include "rootspan/rootspan.h"
#include "rootspan/weights.h"
#include "tests/support/c_api_owners.hpp"
#include "tests/support/sha256.hpp"

namespace rootspan::testing {

namespace fs = std::filesystem;

// One safetensors file as written: its path, its bytes, and where each
// tensor's bytes lie in it.
struct WrittenFile {
  fs::path path;
  std::vector<std::byte> bytes;
  std::uint64_t data_offset = 0;                                           // 8 + header length
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> tensors;  // name -> (file offset, length)

  std::vector<std::byte> tensor(const std::string &name) const {
    const auto &[offset, length] = tensors.at(name);
    return {bytes.begin() + static_cast<std::ptrdiff_t>(offset),
            bytes.begin() + static_cast<std::ptrdiff_t>(offset + length)};
  }
};

// Writes `tensors` back to back into dir/name. The header is padded with
// trailing spaces (allowed by docs/weight-schema.md) until the data section starts at a
// file offset that is `remainder` modulo `modulus`. Data bytes come from a
// generator seeded by `seed`.
inline WrittenFile write_safetensors(const TempDir &dir, const fs::path &name, const std::vector<TensorSpec> &tensors,
                                     std::uint32_t seed, std::uint64_t modulus = 64, std::uint64_t remainder = 0) {
  std::string header = header_json(tensors);
  while ((8 + header.size()) % modulus != remainder) header += ' ';
  WrittenFile out;
  out.data_offset = 8 + header.size();
  for (int i = 0; i < 8; ++i) out.bytes.push_back(static_cast<std::byte>((header.size() >> (8 * i)) & 0xFF));
  for (char c : header) out.bytes.push_back(static_cast<std::byte>(c));
  std::uint64_t offset = out.data_offset;
  for (const TensorSpec &t : tensors) {
    const std::uint64_t n = tensor_bytes(t);
    out.tensors[t.name] = {offset, n};
    for (std::uint64_t i = 0; i < n; ++i) {
      seed = seed * 1664525u + 1013904223u;
      out.bytes.push_back(static_cast<std::byte>(seed >> 24));
    }
    offset += n;
  }
  out.path = dir.write(name, out.bytes);
  return out;
}

// model.safetensors.index.json mapping each file's tensors to the file.
inline fs::path write_index(const TempDir &dir, const std::vector<std::pair<std::string, const WrittenFile *>> &files) {
  std::string map;
  for (const auto &[name, file] : files) {
    for (const auto &[tensor, _] : file->tensors) {
      map += (map.empty() ? "" : ",") + ("\"" + tensor + "\":\"" + name + "\"");
    }
  }
  return dir.write_text("model.safetensors.index.json", "{\"metadata\":{},\"weight_map\":{" + map + "}}");
}

inline std::vector<std::byte> concat(std::initializer_list<std::vector<std::byte>> parts) {
  std::vector<std::byte> out;
  for (const auto &part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

// One component schema entry (dense).
inline std::string dense_component(const std::string &id, const std::string &role,
                                   const std::vector<std::string> &sources, const std::vector<std::uint64_t> &dims,
                                   const std::string &dtype, bool required = true) {
  std::string s;
  for (const auto &source : sources) s += (s.empty() ? "\"" : ",\"") + source + "\"";
  return "{\"id\":\"" + id + "\",\"role\":\"" + role + "\",\"sources\":[" + s +
         "],\"dimensions\":" + rootspan::testing::shape_json(dims) + ",\"encoding\":{\"dense\":{\"element_type\":\"" +
         dtype + "\"}},\"required\":" + (required ? "true" : "false") + "}";
}

inline std::string schema_json(const std::vector<std::string> &components) {
  std::string s;
  for (const auto &c : components) s += (s.empty() ? "" : ",") + c;
  return "{\"schema_version\":\"1.0.0\",\"components\":[" + s + "]}";
}

// ---- C API owners ----------------------------------------------------------

inline std::string describe(const rootspan_error *e) {
  if (e == nullptr) return "(no error object)";
  return std::string(rootspan_status_name(rootspan_error_code(e))) + ": " + rootspan_error_message(e);
}

}  // namespace rootspan::testing
