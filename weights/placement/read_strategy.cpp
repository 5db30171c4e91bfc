#include "weights/placement/read_strategy.hpp"

#include "core/text/quoting.hpp"
#include "weights/files/file_system.hpp"

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
                               std::optional<std::uint64_t> available) {
  if (requested != Strategy::kAuto) return {requested, std::string("asked for ") + strategy_name(requested)};
  // The file that decides: the first one on a remote file system, else the
  // first file.
  std::string file;
  FileSystem fs;
  for (const Shard &shard : checkpoint.shards()) {
    if (!shard.input) continue;
    const FileSystem here = file_system_of(shard.input->fd());
    if (file.empty() || (is_remote(here.kind) && !is_remote(fs.kind))) {
      file = shard.path.filename().string();
      fs = here;
    }
  }
  const std::string where =
      file.empty() ? std::string("no file") : quoted_text(file) + " is on " + fs.name + ", " + kind_text(fs.kind);
  const std::string sizes = std::to_string(total_bytes) + " bytes" +
                            (available ? " against " + std::to_string(*available) + " bytes of memory available" : "");
  if (!host) {
    if (fs.kind == FileSystemKind::kLocal && available && total_bytes > *available / 2) {
      return {Strategy::kDirect, "auto: " + where + " and the checkpoint is " + sizes +
                                     ", more than the page cache could keep: read direct into the staging buffers"};
    }
    return {Strategy::kRead, "auto: " + where + ": read into the staging buffers with many reads in flight"};
  }
  if (is_remote(fs.kind)) {
    if (available && total_bytes > *available) {
      return {Strategy::kMmap,
              "auto: " + where + ", but the checkpoint is " + sizes + ", too big to copy: mapped instead"};
    }
    return {Strategy::kRead, "auto: " + where +
                                 ": read with many reads in flight, not mapped (a page fault there "
                                 "is a round trip)"};
  }
  return {Strategy::kMmap, "auto: " + where + ": mapped (zero-copy)"};
}

}  // namespace rootspan::weights
