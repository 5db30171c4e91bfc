// How names and shapes are written into error causes. Tensor names and file
// names come from untrusted files: they are quoted, control and non-UTF-8
// bytes are escaped, and very long names are cut, so a hostile name cannot
// forge or flood a message.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace rootspan {

// "name" with \n, \t, \", \\ and \xNN escapes; at most 200 bytes of the name
// are shown, then "...".
std::string quoted_text(std::string_view text);

// The first `shown` names, each quoted_text, then how many were left out:
// ""a", "b" and 3 more"; "" for none.
std::string quoted_list(std::span<const std::string> names, std::size_t shown);

// "[2, 64, 32]"; "[]" for a scalar.
std::string shape_text(std::span<const std::uint64_t> shape);

}  // namespace rootspan
