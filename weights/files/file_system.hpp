// What the file system under an open file is, and whether it takes direct
// reads: the facts the `auto` strategy (weights/placement/read_strategy.hpp)
// and direct reads (weights/files/parallel_reader.hpp) decide by.
#pragma once

#include <cstdint>
#include <string>

namespace rootspan::weights {

// How a file system holds its files, as far as reading them is concerned.
enum class FileSystemKind {
  kLocal,    // a local block device (ext4, XFS, Btrfs, ...): mapping pages in is cheap
  kMemory,   // tmpfs, ramfs: the files are already in memory
  kNetwork,  // NFS, SMB/CIFS, Lustre, GPFS, BeeGFS, Ceph, ...: page faults are round trips
  kFuse,     // a FUSE file system (s3fs, gcsfuse, ...): each fault is a trip through a daemon
  kOverlay,  // overlayfs (container images): reads pass through to a lower file system
  kUnknown,  // statfs failed or named a type not listed
};

struct FileSystem {
  FileSystemKind kind = FileSystemKind::kUnknown;
  std::string name;  // "ext4", "nfs", "tmpfs", ... or "type 0x1234abcd"
};

// The file system holding the open file `fd` (fstatfs).
FileSystem file_system_of(int fd);

// Direct-read alignment of an open file, from statx (STATX_DIOALIGN, Linux
// 6.1): `offset` is the file offset and length alignment, `memory` the
// buffer address alignment. Both 0 with `why` set when the file takes no
// direct reads (the file system does not support them, or the kernel
// cannot say).
struct DirectAlignment {
  std::uint32_t offset = 0;
  std::uint32_t memory = 0;
  std::string why;
};
DirectAlignment direct_alignment_of(int fd);

}  // namespace rootspan::weights
