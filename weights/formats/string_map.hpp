// A hash map keyed by std::string that is looked up by std::string_view
// without building a string: the index from tensor names to tensors, built
// once per checkpoint (over all its files) and read once per component.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace rootspan::weights {

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <class Value>
using StringMap = std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;

}  // namespace rootspan::weights
