// What a safetensors header holds, before its tensors are checked against
// each other and the data section: what both header readers give (the
// strict one in safetensors.hpp, the fast one in safetensors_fast_reader.hpp),
// so that neither includes the other.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "weights/formats/tensor_table.hpp"

namespace rootspan::weights {

struct SafetensorsFields {
  std::map<std::string, std::string> metadata;  // "__metadata__"
  bool has_metadata = false;                    // an object was given (null is none, as the reference reads it)
  std::vector<TensorInfo> tensors;              // in no particular order
};

}  // namespace rootspan::weights
