// pm/chunk_table.h — the persistent chunk table: one 8-byte entry per chunk, right after
// the pool header (see pool_layout.h for where it sits).
//
// Entry (u64):
//   bits 63..32       31..16   15..8        7..0
//   +-----------------+--------+------------+------+
//   | span (chunks)   | 0      | size class | tag  |
//   +-----------------+--------+------------+------+
//   tag 0 = never carved, 1 = small-block chunk of `size class`, 2 = head of a large span
//   of `span` chunks, 3 = head of a free span of `span` chunks.
//
// Only entries of chunks below the high-water mark mean anything, and only those reached
// by walking heads from chunk 0 (a span's head says how many chunks to skip; entries inside
// a span are ignored). An entry is written with one pm::store and persisted BEFORE the
// high-water mark moves past it (carving) or before any block of the chunk is handed out
// (re-carving a free span). When a free span is split, the remainder's head is written and
// persisted first and the taken part's head last: a crash in between leaves the old,
// larger span, which is consistent because none of its blocks was handed out yet.
// A free span (tag 3) holds no block anybody reaches, so an open uses it at once: it is not
// frozen until a trace, as small chunks and large spans are. The allocator writes one (and
// persists it) when a trace decides that a carved chunk or span holds nothing live, when it
// turns a wholly free small chunk back into a span near exhaustion, and for the remainder
// of a split span; every block in it was freed after the store that unlinked it was durable
// (the allocator's contract), or never handed out. Without tag 3 a pool whose chunks were
// all carved once could serve an instant restart (which takes only unfrozen chunks until
// its trace ends) nothing at all. A large span freed at run time keeps its tag 2 entry (no
// write-back on free) until the next open's trace decides it. Free spans next to each other
// are merged in DRAM only; taking part of one writes heads in the order above (a merged
// span's inner heads are ignored once its first head covers them), so every head walk stays
// consistent. Tag 3 is newer than the first layout-2 builds; a pool holding one is refused by those
// (their table check reads it as never carved).
#pragma once

#include <cstdint>
#include <string>

#include "pm/pool_layout.h"

namespace wort::pm {

enum class ChunkTag : std::uint8_t { uncarved = 0, small = 1, large = 2, free = 3 };

inline constexpr std::uint64_t chunk_entry_small(std::uint32_t size_class) noexcept {
  return static_cast<std::uint64_t>(ChunkTag::small) | (std::uint64_t{size_class} << 8);
}
inline constexpr std::uint64_t chunk_entry_large(std::uint64_t span) noexcept {
  return static_cast<std::uint64_t>(ChunkTag::large) | (span << 32);
}
inline constexpr std::uint64_t chunk_entry_free(std::uint64_t span) noexcept {
  return static_cast<std::uint64_t>(ChunkTag::free) | (span << 32);
}
inline constexpr ChunkTag chunk_entry_tag(std::uint64_t e) noexcept {
  return static_cast<ChunkTag>(e & 0xff);
}
inline constexpr std::uint32_t chunk_entry_class(std::uint64_t e) noexcept {
  return static_cast<std::uint32_t>((e >> 8) & 0xff);
}
inline constexpr std::uint64_t chunk_entry_span(std::uint64_t e) noexcept { return e >> 32; }
inline constexpr bool chunk_entry_reserved_bits_clear(std::uint64_t e) noexcept {
  return ((e >> 16) & 0xffff) == 0;
}

//! The chunk table of a mapped pool.
inline std::uint64_t* chunk_table(std::byte* base, const PoolHeader& h) noexcept {
  return reinterpret_cast<std::uint64_t*>(base + h.chunk_table_offset);
}

//! Checks every entry reached by walking heads below the high-water mark. On failure
//! returns false and says which chunk is wrong in `why`. (Used by Pool::open before the
//! allocator trusts the table.)
bool validate_chunk_table(const std::byte* base, const PoolHeader& h, std::string& why);

}  // namespace wort::pm
