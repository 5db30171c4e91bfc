#include "core/text/name_token.hpp"

#include <cstdio>

namespace rootspan {

std::string name_token_problem(std::string_view text) {
  if (text.empty() || text.size() > kMaxNameTokenLength) return std::to_string(text.size()) + " characters";
  const auto ok = [](char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (!first && (c == '_' || c == '-' || c == '.'));
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!ok(text[i], i == 0)) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[i]));
      return "character " + std::to_string(i) + " is byte " + byte;
    }
  }
  if (text == kReservedName) return "reserved: it asks the loader to choose a provider";
  return {};
}

}  // namespace rootspan
