#include "weights/placement/read_strategy.hpp"

#include <utility>

#include "core/text/quoting.hpp"
#include "weights/files/file_system.hpp"
#include "weights/files/page_cache.hpp"

namespace rootspan::weights {

namespace {

bool is_remote(FileSystemKind kind) {
  return kind == FileSystemKind::kNetwork || kind == FileSystemKind::kFuse || kind == FileSystemKind::kOverlay;
}

const char *kind_text(FileSystemKind kind) {
  switch (kind) {
    case FileSystemKind::kLocal:
      return "a local file system";
    case FileSystemKind::kMemory:
      return "a file system in memory";
    case FileSystemKind::kNetwork:
      return "a network file system";
    case FileSystemKind::kFuse:
      return "a FUSE file system";
    case FileSystemKind::kOverlay:
      return "an overlay file system";
    case FileSystemKind::kUnknown:
      break;
  }
  return "a file system of unknown kind";
}

// The share of the checkpoint's pages in the page cache, each file weighed
// by its size; nullopt when no file could be sampled.
std::optional<double> resident_share(const Checkpoint &checkpoint) {
  double resident = 0;
  double sampled = 0;
  for (const Shard &shard : checkpoint.shards()) {
    if (!shard.input) continue;
    const auto size = static_cast<double>(shard.input->size());
    if (const auto share = page_cache_resident_share(shard.input->fd(), shard.input->size())) {
      resident += *share * size;
      sampled += size;
    }
  }
  if (sampled == 0) return std::nullopt;
  return resident / sampled;
}

std::string percent(double share) { return std::to_string(static_cast<int>(share * 100 + 0.5)) + "%"; }

// Whether a mapping of host memory is populated before the load returns,
// and why (a clause): only mostly cold files on a local block device, in a
// checkpoint that fits in the memory available.
std::pair<bool, std::string> populate_decision(const StrategyInputs &in) {
  if (!in.host) return {false, "the memory is not host memory"};
  if (in.fs.kind != FileSystemKind::kLocal) return {false, "not a local block device"};
  if (!in.resident) return {false, "the page cache could not be sampled"};
  if (*in.resident >= 0.5) return {false, percent(*in.resident) + " of the pages sampled were in the page cache"};
  if (!in.available) return {false, "the memory available is unknown"};
  if (in.total_bytes > *in.available) {
    return {false, "the checkpoint is " + std::to_string(in.total_bytes) + " bytes against " +
                       std::to_string(*in.available) + " bytes of memory available"};
  }
  return {true, percent(*in.resident) +
                    " of the pages sampled were in the page cache, so they are read in before the load returns, many "
                    "reads in flight"};
}

}  // namespace

const char *strategy_name(Strategy strategy) {
  switch (strategy) {
    case Strategy::kMmap:
      return "mmap";
    case Strategy::kRead:
      return "read";
    case Strategy::kDirect:
      return "direct";
    case Strategy::kAuto:
      break;
  }
  return "auto";
}

StrategyChoice choose_strategy(Strategy requested, const Checkpoint &checkpoint, bool host, std::uint64_t total_bytes,
                               std::optional<std::uint64_t> available, bool populate_when_cold) {
  StrategyInputs inputs{
      .host = host, .total_bytes = total_bytes, .available = available, .populate_when_cold = populate_when_cold};
  if (requested == Strategy::kAuto || (requested == Strategy::kMmap && populate_when_cold)) {
    for (const Shard &shard : checkpoint.shards()) {
      if (!shard.input) continue;
      const FileSystem here = file_system_of(shard.input->fd());
      if (inputs.file.empty() || (is_remote(here.kind) && !is_remote(inputs.fs.kind))) {
        inputs.file = shard.path.filename().string();
        inputs.fs = here;
      }
    }
    if (host && inputs.fs.kind == FileSystemKind::kLocal) inputs.resident = resident_share(checkpoint);
  }
  return choose_strategy(requested, inputs);
}

StrategyChoice choose_strategy(Strategy requested, const StrategyInputs &in) {
  const FileSystem &fs = in.fs;
  const auto where = [&] {
    return in.file.empty() ? std::string("no file")
                           : quoted_text(in.file) + " is on " + fs.name + ", " + kind_text(fs.kind);
  };
  if (requested != Strategy::kAuto) {
    const std::string asked = std::string("asked for ") + strategy_name(requested);
    if (requested != Strategy::kMmap || !in.populate_when_cold) return {requested, asked};
    const auto [populate, why] = populate_decision(in);
    return {requested,
            asked + ", populate when cold: " + where() + ": " + (populate ? "populated: " : "not populated: ") + why,
            populate};
  }
  const std::string sizes =
      std::to_string(in.total_bytes) + " bytes" +
      (in.available ? " against " + std::to_string(*in.available) + " bytes of memory available" : "");
  if (!in.host) {
    if (fs.kind == FileSystemKind::kLocal && in.available && in.total_bytes > *in.available / 2) {
      return {Strategy::kDirect, "auto: " + where() + " and the checkpoint is " + sizes +
                                     ", more than the page cache could keep: read direct into the staging buffers"};
    }
    return {Strategy::kRead, "auto: " + where() + ": read into the staging buffers with many reads in flight"};
  }
  if (is_remote(fs.kind)) {
    if (in.available && in.total_bytes > *in.available) {
      return {Strategy::kMmap,
              "auto: " + where() + ", but the checkpoint is " + sizes + ", too big to copy: mapped instead"};
    }
    return {Strategy::kRead,
            "auto: " + where() + ": read with many reads in flight, not mapped (a page fault there is a round trip)"};
  }
  if (const auto [populate, why] = populate_decision(in); populate) {
    return {Strategy::kMmap, "auto: " + where() + ": mapped (zero-copy), and populated: " + why, true};
  }
  return {Strategy::kMmap, "auto: " + where() + ": mapped (zero-copy)"};
}

}  // namespace rootspan::weights
