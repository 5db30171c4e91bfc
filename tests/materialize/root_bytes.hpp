// A root's bytes as the tests compare them: read back through its provider
// under a shared claim, as any other reader would.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "core/claim_ops.hpp"
#include "core/copy.hpp"

namespace rootspan::testing {

inline std::vector<std::byte> read_root(rootspan::Root &root) {
  std::vector<std::byte> out(root.extent.length);
  auto claim = rootspan::claim_acquire(root, 0, root.extent.length, ROOTSPAN_CLAIM_SHARED);
  if (!claim) {
    ADD_FAILURE() << claim.error()->message();
    return {};
  }
  auto copied = rootspan::copy_to_host(*claim.value(), 0, out.data(), out.size());
  EXPECT_TRUE(copied) << (copied ? "" : copied.error()->message());
  EXPECT_TRUE(rootspan::claim_release(*claim.value()));
  return out;
}

}  // namespace rootspan::testing
