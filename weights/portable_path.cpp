#include "weights/portable_path.hpp"

#include <system_error>
#include <utility>

#include "weights/describe.hpp"

namespace rootspan::weights {

namespace {

// The rule `name` breaks, or "" when it breaks none.
std::string broken_rule(std::string_view name) {
  if (name.empty()) return "it is empty";
  if (name.front() == '/') return "it starts with '/' (absolute paths are not allowed)";
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\\') return "it contains '\\'";
    if (c == ':') return "it contains ':' (a drive letter or stream name)";
    if (byte < 0x20 || byte == 0x7F) return "it contains a control character";
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = name.find('/', start);
    const std::string_view segment =
        name.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (segment.empty()) return "it has an empty segment";
    if (segment == ".") return "it has a '.' segment";
    if (segment == "..") return "it has a '..' segment";
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return {};
}

// `inner` lies in or below `outer`, both canonical: compared segment by
// segment, so "/ckpt-evil" is not inside "/ckpt".
bool lies_inside(const std::filesystem::path &inner, const std::filesystem::path &outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty() && std::next(o) == outer.end()) break;  // a trailing '/' of outer
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

}  // namespace

Result<void> check_portable_name(std::string_view name, rootspan_status code, std::string operation,
                                 std::string_view subject) {
  const std::string rule = broken_rule(name);
  if (!rule.empty()) {
    return make_error(
        code, std::move(operation),
        quoted_text(subject) + ": file name " + quoted_text(name) + " is not a portable relative path: " + rule);
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<std::filesystem::path> resolve_inside(const std::filesystem::path &folder, std::string_view name,
                                             rootspan_status code, std::string operation, std::string_view subject) {
  if (auto portable = check_portable_name(name, code, operation, subject); !portable) return portable.error();
  std::error_code error;
  const std::filesystem::path base = std::filesystem::weakly_canonical(folder, error);
  if (error) {
    return make_error(ROOTSPAN_ERR_IO, std::move(operation),
                      quoted_text(folder.string()) + ": cannot resolve the checkpoint folder: " + error.message());
  }
  const std::filesystem::path target = std::filesystem::weakly_canonical(base / std::string(name), error);
  if (error) {
    return make_error(
        ROOTSPAN_ERR_IO, std::move(operation),
        quoted_text(subject) + ": cannot resolve file name " + quoted_text(name) + ": " + error.message());
  }
  if (!lies_inside(target, base)) {
    return make_error(code, std::move(operation),
                      quoted_text(subject) + ": file name " + quoted_text(name) +
                          " leads out of the checkpoint folder " + quoted_text(base.string()) +
                          " through a symbolic link, to " + quoted_text(target.string()));
  }
  return target;
}

}  // namespace rootspan::weights
