// The trust rule (docs/loader-policies.md, L3 and L4): the one place that decides whether a
// file the loader reads or runs (a plugin, a plugin's dependency, a manifest)
// or a folder it searches (manifest.d, a RUNPATH folder) can be trusted.
//
// A file or folder is trusted when it, and every folder from "/" down to it,
//   - is owned by root or by the effective user, and
//   - is not writable by its group or by others.
// One exception, for the folders above the target only: a group- or
// world-writable folder with the sticky bit (as /tmp) is accepted, because
// there nobody but its owner can remove or rename what it holds, and the next
// component must itself be owned by root or the effective user.
//
// This is the rule of OpenSSH's StrictModes. It is what makes a check of a
// file's bytes mean something: nobody else can rewrite the file, swap it, or
// swap a folder above it between the check and the use. Running as root, a
// folder owned by another user (that user's HOME) is therefore never trusted.
//
// The check starts from an open descriptor and walks the path the kernel
// reports for it, one component at a time (O_PATH | O_NOFOLLOW), then checks
// that the walk arrived at the very file the descriptor holds; so what is
// judged is the opened file, whatever links led to it.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

namespace rootspan {

// Why a path is not trusted: the offending component, its owner and mode.
struct TrustViolation {
  std::filesystem::path offending;  // the file or folder that broke the rule
  std::filesystem::path checked;    // the file or folder whose trust was asked
  uid_t owner = 0;
  mode_t mode = 0;
  std::string problem;  // "owned by uid 1001 (mallory)", "group-writable", ...

  // "/srv/x is group-writable (expected owner root or uid 0 and no g+w or o+w,
  // actual owner uid 0 (root), mode 0775)", naming the checked path when the
  // offending one is a folder above it.
  std::string describe() const;
};

// The rule applied to an open descriptor (a regular file or a folder; O_PATH
// descriptors are fine). nullopt: trusted.
std::optional<TrustViolation> find_trust_violation(int fd);

// The rule applied to the file or folder at path (links followed, then the
// real path checked as above). A path that cannot be opened is a violation
// naming why.
std::optional<TrustViolation> find_trust_violation(const std::filesystem::path &path);

// "uid 1001 (mallory)" or "uid 1001" when the user has no name.
std::string describe_owner(uid_t uid);

}  // namespace rootspan
