#include "weights/formats/dtype.hpp"

#include <array>

namespace rootspan::weights {

namespace {

constexpr std::array<SafetensorsDtype, 22> kDtypes{{
    {"BOOL", ROOTSPAN_DTYPE_BOOL, 8},
    {"U8", ROOTSPAN_DTYPE_U8, 8},
    {"I8", ROOTSPAN_DTYPE_I8, 8},
    {"F8_E5M2", ROOTSPAN_DTYPE_F8_E5M2, 8},
    {"F8_E4M3", ROOTSPAN_DTYPE_F8_E4M3, 8},
    {"F8_E8M0", ROOTSPAN_DTYPE_F8_E8M0, 8},
    {"F8_E4M3FNUZ", ROOTSPAN_DTYPE_F8_E4M3FNUZ, 8},
    {"F8_E5M2FNUZ", ROOTSPAN_DTYPE_F8_E5M2FNUZ, 8},
    {"I16", ROOTSPAN_DTYPE_I16, 16},
    {"U16", ROOTSPAN_DTYPE_U16, 16},
    {"F16", ROOTSPAN_DTYPE_F16, 16},
    {"BF16", ROOTSPAN_DTYPE_BF16, 16},
    {"I32", ROOTSPAN_DTYPE_I32, 32},
    {"U32", ROOTSPAN_DTYPE_U32, 32},
    {"F32", ROOTSPAN_DTYPE_F32, 32},
    {"C64", ROOTSPAN_DTYPE_C32, 64},
    {"F64", ROOTSPAN_DTYPE_F64, 64},
    {"I64", ROOTSPAN_DTYPE_I64, 64},
    {"U64", ROOTSPAN_DTYPE_U64, 64},
    {"F4", ROOTSPAN_DTYPE_F4, 4},
    {"F6_E2M3", ROOTSPAN_DTYPE_F6_E2M3, 6},
    {"F6_E3M2", ROOTSPAN_DTYPE_F6_E3M2, 6},
}};

}  // namespace

std::span<const SafetensorsDtype> safetensors_dtypes() { return kDtypes; }

std::optional<SafetensorsDtype> safetensors_dtype(std::string_view name) {
  for (const auto &entry : kDtypes) {
    if (entry.name == name) return entry;
  }
  return std::nullopt;
}

std::optional<SafetensorsDtype> safetensors_dtype(rootspan_dtype dtype) {
  for (const auto &entry : kDtypes) {
    if (entry.dtype == dtype) return entry;
  }
  return std::nullopt;
}

}  // namespace rootspan::weights
