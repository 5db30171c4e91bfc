// Prints what manifest discovery (L3) finds from the process environment, one
// manifest per line, after a first line "secure=N euid=N": the set-uid test
// runs copies of this program as an unprivileged user.
#include <sys/auxv.h>
#include <unistd.h>

#include <cstdio>

#include "core/loader/manifest_discovery.hpp"

int main() {
  std::printf("secure=%lu euid=%u\n", ::getauxval(AT_SECURE), static_cast<unsigned>(::geteuid()));
  for (const auto &manifest : rootspan::discover_manifests(rootspan::DiscoveryInputs{})) {
    std::printf("%s\n", manifest.c_str());
  }
  return 0;
}
