// Writing an output file the user named (`hash --output FILE`) without
// following a link planted at that name: the text goes to a new file beside
// it, made with O_CREAT | O_EXCL (mkstemp), which is then renamed over the
// name. A link at the name is replaced, never written through, so a program
// run as root cannot be led to overwrite a file the link points at.
#pragma once

#include <string>
#include <string_view>

namespace rootspan::cli {

// Writes `text` to `path` as a new regular file with the mode a plain
// creation gives (0666 less the umask). Returns "" when written, else why
// not (the step that failed and the system's reason); on failure `path` is
// as it was and no temporary file is left.
std::string write_replacing(const std::string &path, std::string_view text);

}  // namespace rootspan::cli
