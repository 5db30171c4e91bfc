// Host memory that direct reads fill in place. O_DIRECT moves whole aligned
// blocks of a file, into memory aligned as the file offset is. A root whose
// first byte is page-aligned, holding a tensor that starts mid-block in its
// file (a safetensors tensor nearly always does: the header before the data
// has any length), can take none of its blocks in place: every byte goes
// through a bounce buffer and a copy. Memory whose first byte's address is
// congruent to that byte's file offset, modulo the page size, takes every
// whole block in place; only the partial first and last blocks are bounced.
#pragma once

#include <cstdint>
#include <optional>

#include "rootspan/provider.h"

namespace rootspan::weights {

// Components smaller than this keep the provider's allocation: a mapping of
// their own costs more than the copy it saves.
constexpr std::uint64_t kDirectLandingMinimumBytes = std::uint64_t{1} << 20;

// file_offset modulo the page size: 0 when page-aligned memory, as the
// provider allocates, already lines up.
std::uint64_t page_offset(std::uint64_t file_offset);

// `length` bytes of fresh anonymous memory whose first byte's address is
// congruent to `file_offset` modulo the page size, advised MADV_HUGEPAGE where
// that pays (plugins/kit/huge_pages.hpp),
// as a host import hands it over: data, byte_length, the alignment data
// has, and a deleter that unmaps it. Nothing when mmap fails.
std::optional<rootspan_host_memory> map_congruent(std::uint64_t length, std::uint64_t file_offset);

}  // namespace rootspan::weights
