#include "weights/files/file_system.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace rootspan::weights {

namespace {

struct KnownFileSystem {
  std::uint64_t magic;
  const char *name;
  FileSystemKind kind;
};

// Magic numbers from statfs(2); those missing from older kernel headers are
// spelled out.
constexpr KnownFileSystem kKnown[] = {
    {EXT4_SUPER_MAGIC, "ext4", FileSystemKind::kLocal},  // also ext2 and ext3
    {XFS_SUPER_MAGIC, "xfs", FileSystemKind::kLocal},
    {BTRFS_SUPER_MAGIC, "btrfs", FileSystemKind::kLocal},
    {0x2011BAB0, "exfat", FileSystemKind::kLocal},
    {MSDOS_SUPER_MAGIC, "vfat", FileSystemKind::kLocal},
    {0x5346544e, "ntfs", FileSystemKind::kLocal},
    {F2FS_SUPER_MAGIC, "f2fs", FileSystemKind::kLocal},
    {0x2fc12fc1, "zfs", FileSystemKind::kLocal},
    {TMPFS_MAGIC, "tmpfs", FileSystemKind::kMemory},
    {RAMFS_MAGIC, "ramfs", FileSystemKind::kMemory},
    {NFS_SUPER_MAGIC, "nfs", FileSystemKind::kNetwork},
    {SMB_SUPER_MAGIC, "smb", FileSystemKind::kNetwork},
    {0xFF534D42, "cifs", FileSystemKind::kNetwork},
    {0xFE534D42, "smb2", FileSystemKind::kNetwork},
    {0x0BD00BD0, "lustre", FileSystemKind::kNetwork},
    {0x47504653, "gpfs", FileSystemKind::kNetwork},
    {0x19830326, "beegfs", FileSystemKind::kNetwork},
    {0x00C36400, "ceph", FileSystemKind::kNetwork},
    {0x6B414653, "afs", FileSystemKind::kNetwork},
    {0x013111A8, "ibrix", FileSystemKind::kNetwork},
    {0x65735546, "fuse", FileSystemKind::kFuse},
    {OVERLAYFS_SUPER_MAGIC, "overlay", FileSystemKind::kOverlay},
};

}  // namespace

FileSystem file_system_of(int fd) {
  struct statfs info {};
  if (::fstatfs(fd, &info) != 0)
    return {FileSystemKind::kUnknown, std::string("unknown (") + std::strerror(errno) + ")"};
  const auto magic = static_cast<std::uint64_t>(static_cast<std::uint32_t>(info.f_type));
  for (const KnownFileSystem &known : kKnown) {
    if (known.magic == magic) return {known.kind, known.name};
  }
  char name[32];
  std::snprintf(name, sizeof name, "type 0x%llx", static_cast<unsigned long long>(magic));
  return {FileSystemKind::kUnknown, name};
}

DirectAlignment direct_alignment_of(int fd) {
#ifdef STATX_DIOALIGN
  struct statx info {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &info) != 0) {
    return {0, 0, std::string("statx failed: ") + std::strerror(errno)};
  }
  if ((info.stx_mask & STATX_DIOALIGN) == 0 || info.stx_dio_offset_align == 0 || info.stx_dio_mem_align == 0) {
    return {0, 0, "the file system does not support direct reads (statx gives no direct I/O alignment)"};
  }
  return {info.stx_dio_offset_align, info.stx_dio_mem_align, ""};
#else
  (void)fd;
  return {0, 0, "this build's C library cannot ask for direct I/O alignment (statx STATX_DIOALIGN)"};
#endif
}

}  // namespace rootspan::weights
