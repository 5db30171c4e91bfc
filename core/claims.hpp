// Claim bookkeeping (docs/concepts.md): which spans of one root are claimed, shared
// or exclusive, and what each claim has lent out (children, mappings, device
// accesses). One ClaimBook per root, guarded by that root's mutex alone, so
// claims on different roots never contend. Claim and mapping records are
// pooled (record_pool.hpp): after warm-up, claim -> map -> unmap -> release
// allocates nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "diagnostic.hpp"
#include "record_pool.hpp"
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
  std::uint64_t relative_offset() const;  // the span's offset relative to its root (inline, root.hpp)
};

struct Mapping {
  Claim *claim = nullptr;
  rootspan_provider_mapping provider{};  // as the provider returned it
  bool write = false;
};

class ClaimBook {
 public:
  // A new claim over `span`; nullptr, with `conflict` set to it, when a live
  // claim overlaps the span and either is exclusive. (Plain values rather
  // than a Result here: every claim takes this path, and claim_ops.cpp words
  // the refusal.)
  Claim *acquire(Root *root, const Span &span, rootspan_claim_mode mode, const Claim *&conflict);
  // Disjoint exclusive children inside an exclusive parent; on failure none.
  Result<void> split(Claim *parent, const Span *children, std::size_t count, Claim **out);
  // False, and nothing changes, while the claim has children, mappings or
  // device accesses (claim_ops.cpp words it as Busy).
  bool release(Claim *claim);

  // A mapping record for `claim`, counted on the claim, with `provider`
  // cleared for the provider's hook to write into (no copy on the hot path).
  // Both inline below: every mapping takes them.
  Mapping *new_mapping(Claim *claim, bool write);
  void free_mapping(Mapping *mapping);

  std::size_t live_count() const { return live_.size(); }
  std::span<Claim *const> live_claims() const { return {live_.data(), live_.size()}; }
  // Mappings not yet unmapped.
  std::vector<Mapping *> live_mappings();
  const Claim *first_live() const { return live_.empty() ? nullptr : live_.front(); }

 private:
  Claim *new_claim();

  // Room for one inside: a root claimed once, as each of a load's components
  // is, keeps its claim list without an allocation.
  boost::container::small_vector<Claim *, 1> live_;
  RecordPool<Claim> claims_;
  RecordPool<Mapping> mappings_;
};

// "[a,b)" of a claim relative to its root, and its mode's name.
std::string describe_claim(const Claim &claim);

inline Claim *ClaimBook::new_claim() {
  Claim *claim = claims_.take();
  claim->parent = nullptr;
  claim->children = 0;
  claim->mappings = 0;
  claim->device_accesses = 0;
  claim->accesses.clear();  // keeps its capacity: a pooled claim allocates nothing
  return claim;             // the caller sets root, span and mode
}

inline Mapping *ClaimBook::new_mapping(Claim *claim, bool write) {
  Mapping *mapping = mappings_.take();
  mapping->claim = claim;
  mapping->provider = rootspan_provider_mapping{};
  mapping->provider.struct_size = sizeof(rootspan_provider_mapping);
  mapping->write = write;
  ++claim->mappings;
  return mapping;
}

inline void ClaimBook::free_mapping(Mapping *mapping) {
  --mapping->claim->mappings;
  mapping->claim = nullptr;
  mappings_.give_back(mapping);
}

}  // namespace rootspan
