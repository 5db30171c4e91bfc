#include "weights/placement/direct_landing.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <new>

#include "plugins/kit/huge_pages.hpp"

namespace rootspan::weights {

namespace {

// What the deleter gives back: the whole mapping, which starts before data.
struct Mapping {
  void *base;
  std::size_t bytes;
};

void unmap_congruent(void *context, void * /*data*/) {
  auto *mapping = static_cast<Mapping *>(context);
  ::munmap(mapping->base, mapping->bytes);
  delete mapping;
}

}  // namespace

std::uint64_t page_offset(std::uint64_t file_offset) {
  return file_offset % static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

std::optional<rootspan_host_memory> map_congruent(std::uint64_t length, std::uint64_t file_offset) {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t head = page_offset(file_offset);
  if (length == 0 || length > SIZE_MAX - head - page) return std::nullopt;
  const std::size_t bytes = (head + length + page - 1) / page * page;
  void *base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return std::nullopt;
  rootspan_plugin_kit::advise_huge_pages(base, bytes);  // where fewer first-touch faults pay
  auto *mapping = new (std::nothrow) Mapping{base, bytes};
  if (mapping == nullptr) {
    ::munmap(base, bytes);
    return std::nullopt;
  }
  auto *data = static_cast<std::byte *>(base) + head;
  // The alignment data has: its offset's lowest set bit, a page at most.
  const std::uint64_t alignment = head == 0 ? page : (head & (~head + 1));
  return rootspan_host_memory{sizeof(rootspan_host_memory), data, length, alignment, unmap_congruent, mapping};
}

}  // namespace rootspan::weights
