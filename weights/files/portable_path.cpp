#include "weights/files/portable_path.hpp"

#include <system_error>
#include <utility>

#include "core/text/quoting.hpp"

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

// "\"a\", \"b\"".
std::string folder_list(std::span<const std::filesystem::path> folders) {
  std::string out;
  for (const auto &folder : folders) out += (out.empty() ? "" : ", ") + quoted_text(folder.string());
  return out;
}

}  // namespace

bool lies_inside(const std::filesystem::path &inner, const std::filesystem::path &outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty() && std::next(o) == outer.end()) break;  // a trailing '/' of outer
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

bool is_portable_name(std::string_view name) { return broken_rule(name).empty(); }

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
                                             std::span<const std::filesystem::path> trusted, rootspan_status code,
                                             std::string operation, std::string_view subject) {
  if (auto portable = check_portable_name(name, code, operation, subject); !portable) return portable.error();
  const std::filesystem::path named = folder / std::string(name);
  std::error_code error;
  const std::filesystem::path target = std::filesystem::weakly_canonical(named, error);
  if (error && error != std::errc::too_many_symbolic_link_levels) {
    return make_error(
        ROOTSPAN_ERR_IO, std::move(operation),
        quoted_text(subject) + ": cannot resolve file name " + quoted_text(name) + ": " + error.message());
  }
  if (error) {
    // A loop of links, or a link chain too long to follow: nothing to open.
    return make_error(code, std::move(operation),
                      quoted_text(subject) + ": file name " + quoted_text(name) + " cannot be resolved (" +
                          quoted_text(named.string()) + "): " + error.message() +
                          "; replace the symbolic links with the files they should lead to");
  }
  for (const auto &folder_ok : trusted) {
    if (lies_inside(target, folder_ok)) return target;
  }
  return make_error(code, std::move(operation),
                    quoted_text(subject) + ": file name " + quoted_text(name) +
                        " leads out of the checkpoint's trusted folders (" + folder_list(trusted) +
                        ") through a symbolic link, to " + quoted_text(target.string()) + "; copy the file into " +
                        quoted_text(folder.string()) + ", or pass the folder that really holds the checkpoint's files");
}

}  // namespace rootspan::weights
