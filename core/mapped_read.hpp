// Copies out of (or into) memory that may be a file mapping, surviving the
// file being truncated underneath (docs/troubleshooting.md): a read past the file's new end
// raises SIGBUS, which a thread-local recovery point turns into a failed
// copy instead of a dead process. Only the library's own copies are
// protected; an embedder's reads of zero-copy memory are its own (the `read`
// load strategy avoids mappings altogether).
#pragma once

#include <cstddef>

namespace rootspan {

// memcpy(destination, source, length); false when a SIGBUS hit the copy
// (the destination then holds an unspecified prefix). The first call installs
// a process-wide SIGBUS handler that hands every fault outside such a copy to
// the handler that was there before (or the default action).
bool copy_surviving_sigbus(void *destination, const void *source, std::size_t length) noexcept;

}  // namespace rootspan
