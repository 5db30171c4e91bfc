// Claim bookkeeping (docs/concepts.md): which spans of one root are claimed, shared
// or exclusive, and what each claim has lent out (children, mappings, device
// accesses). One ClaimBook per root, guarded by that root's mutex alone, so
// claims on different roots never contend. Claim and mapping records are
// pooled: after warm-up, claim -> map -> unmap -> release allocates nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "diagnostic.hpp"
#include "rootspan/provider.h"

namespace rootspan {

struct Root;

struct Claim {
  Root *root = nullptr;
  Span span;
  rootspan_claim_mode mode = ROOTSPAN_CLAIM_SHARED;
  Claim *parent = nullptr;     // set for the children of a split
  std::uint32_t children = 0;  // live children of a split
  std::uint32_t mappings = 0;  // live mappings
  std::uint32_t device_accesses = 0;
  // The live device accesses as the provider returned them, so that a
  // context destroyed with accesses live can release them.
  std::vector<rootspan_device_access> accesses;
  std::uint64_t relative_offset() const;  // the span's offset relative to its root
};

struct Mapping {
  Claim *claim = nullptr;
  rootspan_provider_mapping provider{};  // as the provider returned it
  bool write = false;
};

class ClaimBook {
 public:
  // A new claim over `span`, or Conflict naming an overlapping claim when
  // either is exclusive.
  Result<Claim *> acquire(Root *root, const Span &span, rootspan_claim_mode mode);
  // Disjoint exclusive children inside an exclusive parent; on failure none.
  Result<void> split(Claim *parent, const Span *children, std::size_t count, Claim **out);
  // Busy while the claim has children, mappings or device accesses.
  Result<void> release(Claim *claim);

  Mapping *new_mapping(Claim *claim);
  void free_mapping(Mapping *mapping);

  std::size_t live_count() const { return live_.size(); }
  const std::vector<Claim *> &live_claims() const { return live_; }
  // Mappings not yet unmapped.
  std::vector<Mapping *> live_mappings() const;
  const Claim *first_live() const { return live_.empty() ? nullptr : live_.front(); }

 private:
  Claim *new_claim();

  std::vector<Claim *> live_;
  std::vector<std::unique_ptr<Claim>> claim_storage_;
  std::vector<Claim *> free_claims_;
  std::vector<std::unique_ptr<Mapping>> mapping_storage_;
  std::vector<Mapping *> free_mappings_;
};

// "[a,b)" of a claim relative to its root, and its mode's name.
std::string describe_claim(const Claim &claim);

}  // namespace rootspan
