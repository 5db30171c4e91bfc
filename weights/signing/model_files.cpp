#include "weights/signing/model_files.hpp"

#include <algorithm>
#include <system_error>

#include "core/text/quoting.hpp"
#include "core/text/utf8.hpp"

namespace rootspan::weights {

namespace fs = std::filesystem;

namespace {

// True when `name` is `ignored` or lies beneath it, part by part.
bool ignored_by(const std::string &name, const std::string &ignored) {
  std::string prefix = ignored;
  while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
  if (prefix.rfind("./", 0) == 0) prefix.erase(0, 2);
  return name == prefix ||
         (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 && name[prefix.size()] == '/');
}

}  // namespace

std::vector<std::string> default_ignored_paths() { return {".git", ".gitattributes", ".github", ".gitignore"}; }

std::string path_within(const fs::path &folder, const fs::path &path) {
  std::error_code ec;
  const fs::path base = fs::canonical(folder, ec);
  if (ec) return "";
  const fs::path parent = fs::weakly_canonical(fs::absolute(path, ec).parent_path(), ec);
  if (ec) return "";
  const fs::path relative = (parent / path.filename()).lexically_relative(base);
  const std::string text = relative.generic_string();
  if (text.empty() || text == "." || text.rfind("..", 0) == 0) return "";
  return text;
}

Result<std::vector<ModelFile>> list_model_files(const fs::path &folder, const ModelFileRules &rules,
                                                const std::string &operation) {
  const auto refuse = [&](const std::string &name, const std::string &why) {
    return make_error(ROOTSPAN_ERR_SIGNATURE_INVALID, operation,
                      "model file " + quoted_text(name) + " in " + quoted_text(folder.string()) + ": " + why);
  };
  std::vector<ModelFile> out;
  std::error_code ec;
  fs::recursive_directory_iterator it(folder, fs::directory_options::none, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::directory_entry &entry = *it;
    const std::string name = entry.path().lexically_relative(folder).generic_string();
    if (first_invalid_utf8(name) || name.find('\0') != std::string::npos) {
      return refuse(name, "its name is not UTF-8 text, which a signature's statement cannot name");
    }
    if (std::any_of(rules.ignore_paths.begin(), rules.ignore_paths.end(),
                    [&](const std::string &p) { return ignored_by(name, p); })) {
      if (entry.is_directory(ec) && !entry.is_symlink(ec)) it.disable_recursion_pending();
      continue;
    }
    std::error_code status_ec;
    if (entry.is_symlink(status_ec)) {
      if (!rules.allow_symlinks) {
        return refuse(name, "it is a symbolic link, and the signature does not allow links (allow_symlinks false)");
      }
      const fs::file_status target = fs::status(entry.path(), status_ec);
      if (status_ec || !fs::exists(target)) return refuse(name, "it is a symbolic link that leads nowhere");
      if (fs::is_directory(target)) return refuse(name, "it is a symbolic link to a folder, which is not followed");
      if (!fs::is_regular_file(target)) continue;
    } else if (!entry.is_regular_file(status_ec)) {
      continue;  // a folder (walked into), a FIFO or a socket
    }
    const std::uintmax_t bytes = fs::file_size(entry.path(), status_ec);
    if (status_ec) {
      return make_error(ROOTSPAN_ERR_IO, operation,
                        "cannot read the size of model file " + quoted_text(name) + ": " + status_ec.message());
    }
    out.push_back({name, entry.path(), bytes});
  }
  if (ec) {
    return make_error(ROOTSPAN_ERR_IO, operation,
                      "cannot list the model folder " + quoted_text(folder.string()) + ": " + ec.message());
  }
  std::sort(out.begin(), out.end(), [](const ModelFile &a, const ModelFile &b) { return a.name < b.name; });
  return out;
}

}  // namespace rootspan::weights
