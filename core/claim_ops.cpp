#include "core/claim_ops.hpp"

#include <string>

#include "core/span_derivation.hpp"

namespace rootspan {

namespace {

// The refusals' messages and context, apart from the checks (the hot path).
[[gnu::cold, gnu::noinline]] Diagnostic read_only_root(const Root &root, std::uint64_t offset, std::uint64_t length) {
  return with_request(
      make_error(ROOTSPAN_ERR_READ_ONLY, "", "root is read-only; an exclusive claim needs write access"),
      "claim_acquire", root.request(offset, length));
}

[[gnu::cold, gnu::noinline]] Diagnostic conflict_with(const Claim &other, const Root &root, std::uint64_t offset,
                                                      std::uint64_t length) {
  return with_request(make_error(ROOTSPAN_ERR_CONFLICT, "", "conflict with " + describe_claim(other)), "claim_acquire",
                      root.request(offset, length));
}

// A refusal of `claim`'s bookkeeping, with the claim's range as requested and resolved.
[[gnu::cold, gnu::noinline]] Diagnostic about_claim(Diagnostic d, const Claim &claim) {
  d.requested = claim.root->request(claim.relative_offset(), claim.span.length);
  d.resolution = claim.span;
  return d;
}

[[gnu::cold, gnu::noinline]] Diagnostic still_busy(const Claim &claim) {
  return about_claim(make_error(ROOTSPAN_ERR_BUSY, "claim_release",
                                describe_claim(claim) + " still has " + std::to_string(claim.children) + " children, " +
                                    std::to_string(claim.mappings) + " mappings and " +
                                    std::to_string(claim.device_accesses) + " device accesses"),
                     claim);
}

}  // namespace

Result<Span> span_of(const Root &root, std::uint64_t offset, std::uint64_t length) {
  auto span = derive_span(root.id, root.extent, offset, length);
  if (!span) return with_request(span.error(), "span_derive", root.request(offset, length));
  return span;
}

Result<Claim *> claim_acquire(Root &root, std::uint64_t offset, std::uint64_t length, rootspan_claim_mode mode) {
  auto span = derive_span(root.id, root.extent, offset, length);
  if (!span) return with_request(span.error(), "claim_acquire", root.request(offset, length));
  if (mode == ROOTSPAN_CLAIM_EXCLUSIVE && root.read_only) [[unlikely]] {
    return read_only_root(root, offset, length);
  }
  std::lock_guard lock(root.mutex);
  const Claim *conflict = nullptr;
  Claim *claim = root.claims.acquire(&root, span.value(), mode, conflict);
  if (claim == nullptr) [[unlikely]] {
    return conflict_with(*conflict, root, offset, length);
  }
  return claim;
}

Result<void> claim_split(Claim &parent, const rootspan_range *ranges, std::size_t count, Claim **children) {
  Root &root = *parent.root;
  const std::uint64_t parent_relative = parent.relative_offset();
  // The children as spans of the root, checked like any other span.
  std::vector<Span> spans;
  spans.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t offset = 0;
    if (__builtin_add_overflow(parent_relative, ranges[i].offset, &offset)) {
      Diagnostic d = make_error(ROOTSPAN_ERR_OFFSET_OVERFLOW, "claim_split",
                                "child " + std::to_string(i) + " offset overflows 64 bits");
      d.requested = root.request(parent_relative, parent.span.length);
      return d;
    }
    auto span = derive_span(root.id, root.extent, offset, ranges[i].length);
    if (!span) return with_request(span.error(), "claim_split", root.request(offset, ranges[i].length));
    spans.push_back(span.value());
  }
  std::lock_guard lock(root.mutex);
  auto split = root.claims.split(&parent, spans.data(), count, children);
  if (!split) return about_claim(*split.error(), parent);
  return split;
}

Result<void> claim_release(Claim &claim) {
  Root &root = *claim.root;
  std::lock_guard lock(root.mutex);
  if (!root.claims.release(&claim)) [[unlikely]] {
    return still_busy(claim);
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace rootspan
