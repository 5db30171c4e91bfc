#include "weights/formats/tensor_table.hpp"

#include <algorithm>

namespace rootspan::weights {

const TensorInfo *TensorTable::find(std::string_view name) const {
  const auto found =
      std::find_if(tensors_.begin(), tensors_.end(), [&](const TensorInfo &t) { return t.name == name; });
  return found == tensors_.end() ? nullptr : &*found;
}

}  // namespace rootspan::weights
