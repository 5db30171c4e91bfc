// A test hook that replaces a file right after the loader opens it: the next
// open() of `path` (not an O_PATH open) gets the original file, and before
// the call returns the original is renamed to `path`.orig and `replacement`
// takes its place. So from then on the path names other bytes than the
// descriptor the loader holds, deterministically, with no race to win.
#pragma once

#include <string>

namespace rootspan::testing {

// Arms the hook for one open; returns false if it was already armed.
bool swap_on_next_open(const std::string &path, const std::string &replacement);

// True once the armed open happened and the swap was done.
bool swap_happened();

// Disarms the hook (the destructor of a test fixture calls this).
void disarm_swap_on_open();

}  // namespace rootspan::testing
