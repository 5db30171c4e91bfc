// Element types: sizes, names, and which types may view which (docs/concepts.md).
// Inline: every mapping asks them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "rootspan/types.h"

namespace rootspan {

namespace dtype_detail {

struct DTypeRow {
  rootspan_dtype dtype;
  const char *name;
  std::uint64_t bits;
  std::uint64_t alignment;
};

// Indexed by the rootspan_dtype value; one row a line, as the enum reads.
// clang-format off
inline constexpr std::array<DTypeRow, 24> kTable = {{
    {ROOTSPAN_DTYPE_NONE, "NONE", 8, 1},
    {ROOTSPAN_DTYPE_BOOL, "BOOL", 8, 1},
    {ROOTSPAN_DTYPE_U8, "U8", 8, 1},
    {ROOTSPAN_DTYPE_I8, "I8", 8, 1},
    {ROOTSPAN_DTYPE_U16, "U16", 16, 2},
    {ROOTSPAN_DTYPE_I16, "I16", 16, 2},
    {ROOTSPAN_DTYPE_U32, "U32", 32, 4},
    {ROOTSPAN_DTYPE_I32, "I32", 32, 4},
    {ROOTSPAN_DTYPE_U64, "U64", 64, 8},
    {ROOTSPAN_DTYPE_I64, "I64", 64, 8},
    {ROOTSPAN_DTYPE_F16, "F16", 16, 2},
    {ROOTSPAN_DTYPE_BF16, "BF16", 16, 2},
    {ROOTSPAN_DTYPE_F32, "F32", 32, 4},
    {ROOTSPAN_DTYPE_F64, "F64", 64, 8},
    {ROOTSPAN_DTYPE_C32, "C32", 64, 4},
    {ROOTSPAN_DTYPE_C64, "C64", 128, 8},
    {ROOTSPAN_DTYPE_F8_E5M2, "F8_E5M2", 8, 1},
    {ROOTSPAN_DTYPE_F8_E4M3, "F8_E4M3", 8, 1},
    {ROOTSPAN_DTYPE_F8_E8M0, "F8_E8M0", 8, 1},
    {ROOTSPAN_DTYPE_F4, "F4", 4, 1},
    {ROOTSPAN_DTYPE_F6_E2M3, "F6_E2M3", 6, 1},
    {ROOTSPAN_DTYPE_F6_E3M2, "F6_E3M2", 6, 1},
    {ROOTSPAN_DTYPE_F8_E4M3FNUZ, "F8_E4M3FNUZ", 8, 1},
    {ROOTSPAN_DTYPE_F8_E5M2FNUZ, "F8_E5M2FNUZ", 8, 1},
}};
// clang-format on

// The row of `dtype`; nullptr for a value out of range.
inline const DTypeRow *row(rootspan_dtype dtype) {
  if (dtype < 0 || static_cast<std::size_t>(dtype) >= kTable.size()) return nullptr;
  return &kTable[static_cast<std::size_t>(dtype)];
}

}  // namespace dtype_detail

inline bool dtype_is_known(rootspan_dtype dtype) { return dtype_detail::row(dtype) != nullptr; }

// Bits per element (F4 is 4, F6_* are 6); 0 for NONE or an unknown value.
inline std::uint64_t dtype_bits(rootspan_dtype dtype) {
  const dtype_detail::DTypeRow *r = dtype_detail::row(dtype);
  return r == nullptr || dtype == ROOTSPAN_DTYPE_NONE ? 0 : r->bits;
}

// Bytes per element; 0 for NONE and for sub-byte types.
inline std::uint64_t dtype_size(rootspan_dtype dtype) {
  const std::uint64_t bits = dtype_bits(dtype);
  return bits % 8 == 0 ? bits / 8 : 0;
}

// Alignment a pointer needs to view this type (C32 needs F32's, C64 F64's).
inline std::uint64_t dtype_alignment(rootspan_dtype dtype) {
  const dtype_detail::DTypeRow *r = dtype_detail::row(dtype);
  return r == nullptr ? 1 : r->alignment;
}

// rootspan's own name ("F32", "C32"); "unknown" for a value out of range.
inline const char *dtype_name(rootspan_dtype dtype) {
  const dtype_detail::DTypeRow *r = dtype_detail::row(dtype);
  return r == nullptr ? "unknown" : r->name;
}

// A typed root of type `root` may be viewed as `view`: the same type, or
// complex and real of the same component width (C32<->F32, C64<->F64).
inline bool dtype_can_view(rootspan_dtype root, rootspan_dtype view) {
  if (root == view) return true;
  auto pair = [&](rootspan_dtype a, rootspan_dtype b) { return (root == a && view == b) || (root == b && view == a); };
  return pair(ROOTSPAN_DTYPE_C32, ROOTSPAN_DTYPE_F32) || pair(ROOTSPAN_DTYPE_C64, ROOTSPAN_DTYPE_F64);
}

}  // namespace rootspan
