// Releasing a group of roots as one step (the roots of a weights load): the
// claim checks and the removal from the root table happen while every root's
// lock is held, so a claim taken by another thread either comes before (and
// nothing is released) or finds the roots gone.
#include <algorithm>

#include "context.hpp"

namespace rootspan {

Result<void> Context::release_together(const std::vector<Root *> &roots,
                                       const std::function<std::string(std::size_t)> &name_of) {
  // Lock order: the table, then roots by address (release() takes the table
  // and one root; claims take one root).
  std::vector<Root *> ordered(roots);
  std::sort(ordered.begin(), ordered.end());
  ordered.erase(std::unique(ordered.begin(), ordered.end()), ordered.end());
  std::vector<std::unique_ptr<Root>> owned;
  {
    std::lock_guard table_lock(mutex_);
    std::vector<std::unique_lock<std::mutex>> root_locks;
    root_locks.reserve(ordered.size());
    for (Root *root : ordered) root_locks.emplace_back(root->mutex);
    for (std::size_t i = 0; i < roots.size(); ++i) {
      const Root &root = *roots[i];
      if (root.claims.live_count() != 0) {
        const std::string what = name_of ? name_of(i) : "root " + std::to_string(root.id);
        Diagnostic d = make_error(
            ROOTSPAN_ERR_BUSY, "weights_free",
            what + " is still claimed (" + describe_claim(*root.claims.first_live()) + "); nothing was released", 0,
            root.claims.live_count());
        d.requested = root.request(0, root.extent.length);
        return d;
      }
    }
    owned.reserve(ordered.size());
    for (Root *root : ordered) {
      auto found = roots_.find(root->extent.key);
      owned.push_back(std::move(found->second));
      roots_.erase(found);
    }
  }
  // The roots are out of the table and unclaimed: release outside the locks.
  for (const auto &root : owned) release_allocation(*root->provider, root->allocation);
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace rootspan
