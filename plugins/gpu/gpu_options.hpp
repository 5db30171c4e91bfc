// Part of gpu_provider.hpp: the provider's manifest options.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plugins/kit/provider_kit.hpp"
#include "rootspan/provider.h"

namespace rootspan_gpu {

using rootspan_plugin_kit::fail;

// ---- options --------------------------------------------------------------

// {"devices": [0, 1]}: which runtime devices to expose, in provider order.
inline rootspan_status parse_options(const char *provider, const char *options_json, std::vector<int> *selected,
                                     bool *has_selection, rootspan_provider_message *message) {
  *has_selection = false;
  nlohmann::json options;
  try {
    options = nlohmann::json::parse(options_json == nullptr || *options_json == '\0' ? "{}" : options_json);
  } catch (const nlohmann::json::exception &e) {
    return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "options are not JSON: %s", e.what());
  }
  if (!options.is_object()) {
    return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "options must be a JSON object, got %s", options.type_name());
  }
  for (const auto &[key, value] : options.items()) {
    if (key != "devices") {
      return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT,
                  "unknown option \"%s\" (the %s provider takes only \"devices\": [ordinal, ...])", key.c_str(),
                  provider);
    }
    if (!value.is_array()) {
      return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "option \"devices\" must be an array of device ordinals");
    }
    for (const auto &ordinal : value) {
      if (!ordinal.is_number_unsigned() || ordinal.get<std::uint64_t>() > 1u << 20) {
        return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT,
                    "option \"devices\" holds %s, expected a non-negative device ordinal", ordinal.dump().c_str());
      }
      const int runtime = static_cast<int>(ordinal.get<std::uint64_t>());
      if (std::find(selected->begin(), selected->end(), runtime) != selected->end()) {
        return fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "option \"devices\" names device %d twice", runtime);
      }
      selected->push_back(runtime);
    }
    *has_selection = true;
  }
  return ROOTSPAN_OK;
}

}  // namespace rootspan_gpu
