// An unprivileged local user for the security tests: the suite runs as root
// (as CI does), creates this user once (useradd, idempotent) and acts as it
// with setpriv, so that "another user" wrote a file or owns a folder for real.
// When the suite does not run as root, the tests that need the user are
// skipped with that reason.
#pragma once

#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace rootspan::testing {

inline constexpr const char *kAttackerName = "rootspan-attacker";

struct Attacker {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;

  // Runs a /bin/sh command line as this user, with no supplementary groups;
  // returns its exit status (-1 when it did not run).
  int run(const std::string &command) const {
    const std::string line = "setpriv --reuid=" + std::to_string(uid) + " --regid=" + std::to_string(gid) +
                             " --clear-groups -- /bin/sh -c '" + command + "'";
    const int status = std::system(line.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // Hands a file or folder to this user.
  void own(const std::filesystem::path &path) const {
    if (::chown(path.c_str(), uid, gid) != 0) throw std::runtime_error("chown failed: " + path.string());
  }
};

// The attacker user, created when missing; nullopt with why_not set when the
// suite cannot create or act as another user.
inline std::optional<Attacker> attacker(std::string &why_not) {
  if (::geteuid() != 0) {
    why_not = "not running as root: cannot create a second user or act as one (CI runs the suite as root)";
    return std::nullopt;
  }
  auto lookup = []() -> std::optional<Attacker> {
    struct passwd *entry = ::getpwnam(kAttackerName);
    if (entry == nullptr) return std::nullopt;
    return Attacker{entry->pw_uid, entry->pw_gid, entry->pw_name};
  };
  if (auto found = lookup()) return found;
  // Another test process may create it at the same moment: look again after.
  std::system(
      (std::string("useradd --system --no-create-home --shell /usr/sbin/nologin ") + kAttackerName + " >/dev/null 2>&1")
          .c_str());
  if (auto found = lookup()) return found;
  why_not = std::string("useradd ") + kAttackerName + " failed (is useradd installed?)";
  return std::nullopt;
}

}  // namespace rootspan::testing

#define ROOTSPAN_NEED_ATTACKER(var)                                \
  std::string var##_why_not;                                       \
  auto var##_found = ::rootspan::testing::attacker(var##_why_not); \
  if (!var##_found) GTEST_SKIP() << var##_why_not;                 \
  const ::rootspan::testing::Attacker &var = *var##_found
