// The files a model signature covers (OMS v1.0): every regular file beneath
// the model folder, at any depth, but the ignored paths. A symbolic link is
// followed when the signature allows links (a Hugging Face cache snapshot is
// links into the repository's blobs/), and refused, naming it, when it does
// not; a link to a folder is never followed. Other kinds of file (FIFOs,
// sockets) are not part of a model and are passed over, as the reference
// does.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/diagnostic.hpp"

namespace rootspan::weights {

struct ModelFile {
  std::string name;            // relative to the model folder, '/'-separated
  std::filesystem::path path;  // folder / name (a link, where it is one)
  std::uint64_t bytes = 0;     // of the file, or of the file the link leads to
};

struct ModelFileRules {
  bool allow_symlinks = false;
  // Relative to the folder: a path and everything beneath it is left out.
  std::vector<std::string> ignore_paths;
};

// The model's files, sorted by name. Errors: ROOTSPAN_ERR_SIGNATURE_INVALID
// (a link the rules do not allow, a link to a folder or a broken one, a name
// that is not UTF-8 text without NUL), ROOTSPAN_ERR_IO (a folder that cannot
// be listed), with `operation`.
Result<std::vector<ModelFile>> list_model_files(const std::filesystem::path &folder, const ModelFileRules &rules,
                                                const std::string &operation);

// The git files the reference signer leaves out by default.
std::vector<std::string> default_ignored_paths();

// `path` relative to `folder` ('/'-separated) when it lies beneath it (links
// in their parent folders followed), or "".
std::string path_within(const std::filesystem::path &folder, const std::filesystem::path &path);

}  // namespace rootspan::weights
