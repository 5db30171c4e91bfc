#include "weights/checkpoints/hf_cache.hpp"

#include <algorithm>
#include <span>
#include <system_error>
#include <vector>

#include "core/text/quoting.hpp"
#include "weights/files/input_file.hpp"
#include "weights/files/open_beneath.hpp"
#include "weights/formats/limits.hpp"

namespace rootspan::weights {

namespace {

namespace fs = std::filesystem;

constexpr const char *kOperation = "open_checkpoint";

Diagnostic invalid(const std::string &cause) { return make_error(ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, cause); }

bool is_folder(const fs::path &path) {
  std::error_code error;
  return fs::is_directory(path, error);
}

// The rule a revision or commit name breaks, or "" when it breaks none: it
// becomes one path segment under refs/ or snapshots/, so it must not reach
// anywhere else.
std::string broken_rule(std::string_view name) {
  if (name.empty()) return "it is empty";
  if (name == ".") return "it is '.'";
  if (name.find("..") != std::string_view::npos) return "it contains '..'";
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '/') return "it contains '/'";
    if (c == '\\') return "it contains '\\'";
    if (byte < 0x20 || byte == 0x7F) return "it contains a control character";
  }
  return {};
}

// A folder itself, not a link to one.
bool is_real_folder(const fs::path &path) {
  std::error_code error;
  return fs::is_directory(fs::symlink_status(path, error));
}

// The snapshot folders' names, sorted, quoted: "\"abc\", \"def\"" or "none".
// Only real folders in a real snapshots/ count: a link there may lead to a
// folder whose names are not the repository's to show.
std::string snapshot_list(const fs::path &repository) {
  std::vector<std::string> names;
  std::error_code error;
  if (!is_real_folder(repository / "snapshots")) return "none";
  for (fs::directory_iterator it(repository / "snapshots", error), end; !error && it != end; it.increment(error)) {
    if (is_real_folder(it->path())) names.push_back(it->path().filename().string());
  }
  if (names.empty()) return "none";
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto &name : names) out += (out.empty() ? "" : ", ") + quoted_text(name);
  return out;
}

// A pull-request ref as the Hugging Face hub names it ("refs/pr/12", or
// "pr/12"), as the cache stores it: the name under refs/ ("pr/12"); nullopt
// for anything else.
std::optional<std::string> pull_request_ref(std::string_view revision) {
  if (revision.starts_with("refs/")) revision.remove_prefix(5);
  if (!revision.starts_with("pr/") || revision.size() == 3 || revision.size() > 3 + 9) return std::nullopt;
  if (revision.substr(3).find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  return std::string(revision);
}

std::string trimmed(std::string text) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!text.empty() && is_space(text.back())) text.pop_back();
  const auto first = std::find_if_not(text.begin(), text.end(), is_space);
  return std::string(first, text.end());
}

}  // namespace

bool is_cache_repository(const fs::path &folder) {
  return is_folder(folder / "snapshots") && (is_folder(folder / "blobs") || is_folder(folder / "refs"));
}

bool is_cache_blob(const fs::path &real) {
  return real.parent_path().filename() == "blobs" && is_folder(real.parent_path().parent_path() / "snapshots");
}

bool is_git_object_id(std::string_view text) {
  return text.size() == 40 && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

Result<fs::path> cache_snapshot(const fs::path &repository, const std::optional<std::string> &revision) {
  const std::string repo = quoted_text(repository.string());
  const std::string given = revision.value_or("main");
  // A pull request's ref is the one name with a '/' the cache keeps (refs/pr/N).
  const std::optional<std::string> pull_request = pull_request_ref(given);
  const std::string wanted = pull_request.value_or(given);
  if (const std::string rule = pull_request ? "" : broken_rule(wanted); !rule.empty()) {
    return invalid(repo + ": revision " + quoted_text(wanted) + " is not a single branch, tag or commit name: " + rule +
                   " (a pull request is refs/pr/N or pr/N; snapshots: " + snapshot_list(repository) + ")");
  }

  std::string commit;
  const fs::path ref = repository / "refs" / wanted;
  std::error_code error;
  const bool from_ref = fs::exists(fs::symlink_status(ref, error)) && !error;
  if (from_ref) {
    // Read beneath the repository with no link leading out (a ref, or refs/
    // itself, linked to a secret file must not be read), and its text used
    // only once it is a commit hash: never echoed as it is.
    const fs::path real_repository = fs::canonical(repository, error);
    if (error) return invalid(repo + ": cannot resolve the repository folder: " + error.message());
    auto input = open_beneath(repository, "refs/" + wanted, std::span(&real_repository, 1),
                              ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, repo + ": refs/" + wanted);
    if (!input) return input.error();
    auto text = read_whole_file(*input.value(), kMaxRefBytes, ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation);
    if (!text) return text.error();
    commit = trimmed(std::move(text).value());
    if (!is_git_object_id(commit)) {
      return invalid(repo + ": refs/" + wanted + " does not hold a commit hash (40 lowercase hex digits; it holds " +
                     std::to_string(commit.size()) + " bytes, not shown) (snapshots: " + snapshot_list(repository) +
                     ")");
    }
  } else if (pull_request) {
    return invalid(repo + ": there is no refs/" + wanted +
                   "; the pull request was never downloaded (snapshots: " + snapshot_list(repository) + ")");
  } else if (revision) {
    commit = wanted;  // not a branch or tag: a commit, the snapshot folder's own name
  } else {
    return invalid(repo +
                   ": a Hugging Face cache repository without refs/main, so the snapshot to read is not "
                   "known; pass a revision naming one of its snapshots: " +
                   snapshot_list(repository));
  }

  const fs::path snapshot = repository / "snapshots" / commit;
  if (!is_real_folder(repository / "snapshots")) {
    return invalid(repo + ": snapshots/ is not a folder of the repository (a symbolic link, or missing)");
  }
  if (!is_folder(snapshot)) {
    const std::string named_by = from_ref ? "refs/" + wanted + " names commit " + quoted_text(commit) + ", but there is"
                                          : "revision " + quoted_text(wanted) + " names no ref in refs/ and there is";
    return invalid(repo + ": " + named_by + " no snapshot folder snapshots/" + commit +
                   " (snapshots: " + snapshot_list(repository) +
                   "); download that revision again, or pass a revision naming a snapshot that exists");
  }
  return snapshot;
}

}  // namespace rootspan::weights
