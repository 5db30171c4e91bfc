// Which strategy a load reads its files with, and why: the `auto` strategy
// looks at the file system under each file and at the checkpoint's size
// against the memory available (docs/cold-start.md).
//
//   host memory, local block device (ext4, XFS, ...) or tmpfs -> mmap
//       (zero-copy: pages fault in from the page cache or a fast device)
//     ... on a local block device, when fewer than half of the files' pages
//       sampled are in the page cache, and the checkpoint fits in the memory
//       available -> mmap, populated (its pages read in before the load
//       returns, many reads in flight: a cold file faulted in one readahead
//       window at a time reads at a fraction of the device's speed)
//   host memory, NFS, Lustre, GPFS, BeeGFS, SMB, FUSE or overlay -> read
//       (a page fault there is a round trip; many reads in flight are not)
//     ... unless the checkpoint does not fit in the memory available -> mmap
//       (a copy could not be made; mapped pages can be dropped and re-read)
//   a provider without host access (GPUs): always a copy through the staging
//   ring -> read, or direct when the checkpoint is larger than half the
//   memory available on a local block device (the page cache could not keep
//   it, so buffering it only evicts what could be kept)
//
// An explicit strategy is taken as asked; mmap asked for with
// populate_when_cold is also populated where auto would populate it (the
// rows marked "populated" above), and never copies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "weights/checkpoints/checkpoint.hpp"
#include "weights/files/file_system.hpp"

namespace rootspan::weights {

enum class Strategy { kMmap, kRead, kDirect, kAuto };

const char *strategy_name(Strategy strategy);  // "mmap", "read", "direct", "auto"

struct StrategyChoice {
  Strategy strategy = Strategy::kMmap;  // never kAuto
  std::string reason;                   // one sentence, for the load report
  bool populate = false;                // mmap: read the mapped pages in before the load returns
};

// What `auto` decides by.
struct StrategyInputs {
  std::string file{};                        // the deciding file's name ("" when the checkpoint has none)
  FileSystem fs{};                           // the file system it lies on
  bool host = true;                          // the provider's memory is host memory (zero-copy is possible)
  std::uint64_t total_bytes = 0;             // what the load places
  std::optional<std::uint64_t> available{};  // available_memory()
  // The share of the checkpoint's pages in the page cache (a sample,
  // page_cache.hpp); nullopt: not asked.
  std::optional<double> resident{};
  // mmap asked for: populated where auto would populate (LoadOptions).
  bool populate_when_cold = false;
};

// The rule table above.
StrategyChoice choose_strategy(Strategy requested, const StrategyInputs &inputs);

// The same, with the deciding file taken from the checkpoint: the first one
// on a network, FUSE or overlay file system, else the first file. The page
// cache is sampled only for `auto` (or mmap with populate_when_cold) into
// host memory on a local block device.
StrategyChoice choose_strategy(Strategy requested, const Checkpoint &checkpoint, bool host, std::uint64_t total_bytes,
                               std::optional<std::uint64_t> available, bool populate_when_cold = false);

}  // namespace rootspan::weights
