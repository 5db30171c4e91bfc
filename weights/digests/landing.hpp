// Where a verified load placed the file bytes it read, so that its digests
// are taken of exactly the bytes it hands out (docs/verified-loads.md): each
// row of each segment, as host memory or as a range of a device root's claim.
// After the load's reads are done, `land` rewrites a digest job to read its
// bytes from there, and from the file only where the load placed nothing (a
// header, the tensors it did not select).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "weights/digests/parallel_hasher.hpp"

namespace rootspan::weights {

class Landings {
 public:
  // The bytes `bytes` of `file` landed at `into`, their rows packed one after
  // another, for component `component`.
  void add(const std::string &component, const InputFile &file, const StridedRange &bytes, const LandedRange &into);
  // The first `length` bytes of `file` are its header, whose SHA-256 when it
  // was parsed was `sha256`: a file job reads them again and checks them.
  void note_header(const InputFile &file, std::uint64_t length, std::string sha256);
  // Sets job.pieces (and job.copies): a component job from the memory its
  // component landed in, a file job from the memory each of its ranges
  // landed in and from the file between them. Call after the last add.
  Result<void> land(DigestJob &job);

 private:
  struct Landed {
    std::uint64_t offset;  // in the file
    LandedRange into;
    const std::string *component;
  };
  struct PerFile {
    std::vector<Landed> landed;  // sorted by offset and made disjoint by seal()
    std::vector<LandedCopy> copies;
    std::uint64_t header_length = 0;
    std::string header_sha256;
    bool sealed = false;
  };
  void seal(PerFile &file);
  void land_range(const FileRange &range, PerFile &file, DigestJob &job) const;

  std::map<const InputFile *, PerFile> files_;
  std::map<std::string, std::vector<LandedRange>> components_;
};

}  // namespace rootspan::weights
