// Checked 64-bit arithmetic for sizes read from files and schemas. Every
// product of a shape and every offset sum goes through here, so that a
// hostile header can never wrap a size into something small and plausible.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace rootspan::weights {

inline std::optional<std::uint64_t> checked_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

inline std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

// Number of elements of a shape: the empty shape (a scalar) has one. A zero
// dimension makes the product exactly zero, whatever the other dimensions are,
// so [0, 2^40, 2^40] is an empty tensor, not an overflow.
inline std::optional<std::uint64_t> checked_product(std::span<const std::uint64_t> dims) {
  for (std::uint64_t d : dims) {
    if (d == 0) return 0;
  }
  std::uint64_t product = 1;
  for (std::uint64_t d : dims) {
    if (__builtin_mul_overflow(product, d, &product)) return std::nullopt;
  }
  return product;
}

// Size of `count` elements of `bits_per_element` bits. Sub-byte types (F4,
// F6) make the bit count the unit that must come out whole: `whole_bytes` is
// false when it does not. nullopt when the bit count overflows.
struct BitSize {
  std::uint64_t bits = 0;
  bool whole_bytes() const { return bits % 8 == 0; }
  std::uint64_t bytes() const { return bits / 8; }
};

inline std::optional<BitSize> checked_bits(std::uint64_t count, std::uint32_t bits_per_element) {
  auto bits = checked_mul(count, bits_per_element);
  if (!bits) return std::nullopt;
  return BitSize{*bits};
}

}  // namespace rootspan::weights
