#include "weights/digests/landing.hpp"

#include <algorithm>

namespace rootspan::weights {

namespace {

// `length` bytes of `r` from `skip` on.
LandedRange part(const LandedRange &r, std::uint64_t skip, std::uint64_t length) {
  LandedRange out = r;
  if (out.host != nullptr) out.host += skip;
  out.offset += skip;
  out.length = length;
  return out;
}

void add_file_piece(DigestJob &job, const FileRange &range, std::uint64_t begin, std::uint64_t end) {
  if (end > begin) job.pieces.emplace_back(FileRange{range.file, {begin, end - begin, 1, end - begin}, {}});
}

}  // namespace

void Landings::add(const std::string &component, const InputFile &file, const StridedRange &bytes,
                   const LandedRange &into) {
  if (bytes.bytes() == 0) return;
  auto &rows = components_[component];
  const std::string &name = components_.find(component)->first;
  PerFile &per_file = files_[&file];
  for (std::uint64_t row = 0; row < bytes.rows; ++row) {
    const LandedRange landed = part(into, row * bytes.row_length, bytes.row_length);
    per_file.landed.push_back({bytes.offset + row * bytes.stride, landed, &name});
  }
  // A component's rows are hashed in the order they were packed: one range.
  rows.push_back(part(into, 0, bytes.bytes()));
}

void Landings::note_header(const InputFile &file, std::uint64_t length, std::string sha256) {
  PerFile &per_file = files_[&file];
  per_file.header_length = length;
  per_file.header_sha256 = std::move(sha256);
}

// Sorts the rows of a file and keeps each file byte in one of them; where two
// components hold the same bytes, the later one must equal the one hashed.
void Landings::seal(PerFile &file) {
  if (file.sealed) return;
  file.sealed = true;
  std::stable_sort(file.landed.begin(), file.landed.end(),
                   [](const Landed &a, const Landed &b) { return a.offset < b.offset; });
  std::vector<Landed> disjoint;
  for (const Landed &next : file.landed) {
    const std::uint64_t end = next.offset + next.into.length;
    Landed rest = next;
    // Every earlier row that overlaps this one: the overlap is a copy.
    for (auto it = disjoint.rbegin(); it != disjoint.rend(); ++it) {
      const std::uint64_t it_end = it->offset + it->into.length;
      if (it_end <= next.offset) break;
      const std::uint64_t from = std::max(it->offset, next.offset);
      const std::uint64_t to = std::min(it_end, end);
      if (to > from) {
        file.copies.push_back({part(it->into, from - it->offset, to - from),
                               part(next.into, from - next.offset, to - from), *next.component});
      }
    }
    const std::uint64_t covered = disjoint.empty() ? 0 : disjoint.back().offset + disjoint.back().into.length;
    if (covered >= end) continue;
    if (covered > rest.offset) {
      rest.into = part(next.into, covered - next.offset, end - covered);
      rest.offset = covered;
    }
    disjoint.push_back(rest);
  }
  file.landed = std::move(disjoint);
}

void Landings::land_range(const FileRange &range, PerFile &file, DigestJob &job) const {
  const StridedRange &bytes = range.bytes;
  for (std::uint64_t row = 0; row < bytes.rows; ++row) {
    std::uint64_t at = bytes.offset + row * bytes.stride;
    const std::uint64_t end = at + bytes.row_length;
    // A header read again is checked against its digest at parse.
    if (at == 0 && file.header_length != 0 && end >= file.header_length) {
      job.pieces.emplace_back(
          FileRange{range.file, {0, file.header_length, 1, file.header_length}, file.header_sha256});
      at = file.header_length;
    }
    auto it = std::upper_bound(file.landed.begin(), file.landed.end(), at,
                               [](std::uint64_t offset, const Landed &l) { return offset < l.offset; });
    if (it != file.landed.begin() && std::prev(it)->offset + std::prev(it)->into.length > at) --it;
    for (; it != file.landed.end() && at < end && it->offset < end; ++it) {
      add_file_piece(job, range, at, it->offset);
      const std::uint64_t from = std::max(at, it->offset);
      const std::uint64_t to = std::min(end, it->offset + it->into.length);
      job.pieces.emplace_back(part(it->into, from - it->offset, to - from));
      at = to;
    }
    add_file_piece(job, range, at, end);
  }
}

Result<void> Landings::land(DigestJob &job) {
  job.pieces.clear();
  job.copies.clear();
  if (job.kind == "component") {
    const auto found = components_.find(job.name);
    if (found != components_.end()) job.pieces.assign(found->second.begin(), found->second.end());
  } else {
    for (const FileRange &range : job.ranges) {
      PerFile &file = files_[range.file.get()];
      seal(file);
      land_range(range, file, job);
      job.copies.insert(job.copies.end(), file.copies.begin(), file.copies.end());
    }
  }
  std::uint64_t landed = 0;
  for (const DigestPiece &piece : job.pieces) {
    landed += std::holds_alternative<LandedRange>(piece) ? std::get<LandedRange>(piece).length
                                                         : std::get<FileRange>(piece).bytes.bytes();
  }
  if (landed != job.bytes()) {
    return make_error(ROOTSPAN_ERR_DIGEST_MISMATCH, "check_digests",
                      job.kind + " \"" + job.name + "\": the load placed " + std::to_string(landed) +
                          " of the bytes its digest covers, expected " + std::to_string(job.bytes()),
                      job.bytes(), landed);
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace rootspan::weights
