#include "weights/files/page_cache.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

namespace rootspan::weights {

std::optional<double> page_cache_resident_share(int fd, std::uint64_t size, std::size_t samples) noexcept {
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (size == 0 || samples == 0 || page_size <= 0) return std::nullopt;
  const auto page = static_cast<std::uint64_t>(page_size);
  const std::uint64_t pages = (size + page - 1) / page;
  void *mapped = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (mapped == MAP_FAILED) return std::nullopt;
  const std::uint64_t asked = std::min<std::uint64_t>(pages, samples);
  std::uint64_t answered = 0;
  std::uint64_t resident = 0;
  for (std::uint64_t i = 0; i < asked; ++i) {
    const std::uint64_t at = i * pages / asked;  // evenly spread, the first page included
    unsigned char in_core = 0;
    if (::mincore(static_cast<char *>(mapped) + at * page, page, &in_core) != 0) continue;
    ++answered;
    resident += in_core & 1u;
  }
  ::munmap(mapped, size);
  if (answered == 0) return std::nullopt;
  return static_cast<double>(resident) / static_cast<double>(answered);
}

}  // namespace rootspan::weights
