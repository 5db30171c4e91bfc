// Sizes as people read them (KiB, MiB, GiB) in the program's text output;
// --json keeps exact byte counts.
#pragma once

#include <cstdint>
#include <string>

namespace rootspan::cli {

// "512 B", "8.00 KiB", "16.0 KiB", "410 MiB", "1.50 GiB": binary units, three
// significant digits.
std::string byte_size(std::uint64_t bytes);

// "1 component", "5 components".
std::string counted(std::uint64_t count, const std::string &singular, const std::string &plural = "");

}  // namespace rootspan::cli
