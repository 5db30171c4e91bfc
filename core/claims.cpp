#include "claims.hpp"

#include <algorithm>
#include <string>

#include "core/span.hpp"
#include "root.hpp"

namespace rootspan {

namespace {

const char *mode_name(rootspan_claim_mode mode) { return mode == ROOTSPAN_CLAIM_EXCLUSIVE ? "exclusive" : "shared"; }

std::string range_text(std::uint64_t offset, std::uint64_t length) {
  return "[" + std::to_string(offset) + "," + std::to_string(offset + length) + ")";
}

}  // namespace

std::string describe_claim(const Claim &claim) {
  return std::string(mode_name(claim.mode)) + " claim " + range_text(claim.relative_offset(), claim.span.length);
}

Claim *ClaimBook::acquire(Root *root, const Span &span, rootspan_claim_mode mode, const Claim *&conflict) {
  for (const Claim *other : live_) {
    if ((mode == ROOTSPAN_CLAIM_EXCLUSIVE || other->mode == ROOTSPAN_CLAIM_EXCLUSIVE) &&
        spans_overlap(span, other->span)) [[unlikely]] {
      conflict = other;
      return nullptr;
    }
  }
  // Reserve first so that a failed push_back cannot lose the claim record.
  live_.reserve(live_.size() + 1);
  Claim *claim = new_claim();
  claim->root = root;
  claim->span = span;
  claim->mode = mode;
  live_.push_back(claim);
  return claim;
}

Result<void> ClaimBook::split(Claim *parent, const Span *children, std::size_t count, Claim **out) {
  if (parent->mode != ROOTSPAN_CLAIM_EXCLUSIVE) {
    return make_error(ROOTSPAN_ERR_CONFLICT, "claim_split",
                      "only an exclusive claim can be split; the parent is a " + describe_claim(*parent));
  }
  if (parent->mappings != 0 || parent->device_accesses != 0 || parent->children != 0) {
    return make_error(ROOTSPAN_ERR_BUSY, "claim_split",
                      "the parent " + describe_claim(*parent) + " is mapped, accessed or already split");
  }
  const std::uint64_t base = parent->root->extent.offset;
  for (std::size_t i = 0; i < count; ++i) {
    const Span &child = children[i];
    if (child.offset < parent->span.offset || child.end() > parent->span.end()) {
      return make_error(ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT, "claim_split",
                        "child " + std::to_string(i) + " " + range_text(child.offset - base, child.length) +
                            " lies outside the parent " + describe_claim(*parent));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (spans_overlap(child, children[j])) {
        return make_error(ROOTSPAN_ERR_CONFLICT, "claim_split",
                          "child " + std::to_string(i) + " " + range_text(child.offset - base, child.length) +
                              " overlaps child " + std::to_string(j) + " " +
                              range_text(children[j].offset - base, children[j].length));
      }
    }
  }
  // Everything that can fail to allocate, before anything changes.
  live_.reserve(live_.size() + count);
  claims_.ready(count);
  for (std::size_t i = 0; i < count; ++i) {
    Claim *claim = new_claim();
    claim->root = parent->root;
    claim->span = children[i];
    claim->mode = ROOTSPAN_CLAIM_EXCLUSIVE;
    claim->parent = parent;
    live_.push_back(claim);
    out[i] = claim;
  }
  parent->children += static_cast<std::uint32_t>(count);
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

bool ClaimBook::release(Claim *claim) {
  if (claim->children != 0 || claim->mappings != 0 || claim->device_accesses != 0) [[unlikely]] {
    return false;
  }
  auto it = std::find(live_.begin(), live_.end(), claim);
  live_.erase(it);
  if (claim->parent != nullptr) --claim->parent->children;
  claim->root = nullptr;
  claims_.give_back(claim);
  return true;
}

std::vector<Mapping *> ClaimBook::live_mappings() {
  std::vector<Mapping *> live;
  mappings_.for_each([&live](Mapping &mapping) {
    if (mapping.claim != nullptr) live.push_back(&mapping);
  });
  return live;
}

}  // namespace rootspan
