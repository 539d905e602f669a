// pm/pool_layout.h — the persistent layout of a pool file and of its 4 KiB header.
//
// A pool file:
//
//   offset 0          4096                      table end        first_chunk_offset
//   +-----------------+--------------------------+- - - - - - - - -+---------+---------+-----+
//   | header (4 KiB)  | chunk table              | gap (usually    | chunk 0 | chunk 1 | ... |
//   |                 | 8 bytes per chunk,       | empty): never   |         |         |     |
//   |                 | padded to 4 KiB          | written         |         |         |     |
//   +-----------------+--------------------------+- - - - - - - - -+---------+---------+-----+
//
// The table ends at first_chunk_offset_for(chunk_count). A pool created with
// PoolOptions::chunk_area_offset puts its chunk area further on, at a multiple of 64 bytes
// (kChunkAreaAlign); the gap between is never written, read or reserved (a hole of a sparse
// file), so a test pool of a few MiB of chunks can lie above 2^32, where pool offsets have
// a non-zero high half.
//
// The header (all integers little-endian, offsets in bytes):
//
//   bytes 0..143: written once at create, covered by `checksum` (except magic, see below)
//     0   magic               u64   "WORTPOOL"; written and persisted LAST at create
//     8   layout_version      u32   kLayoutVersion
//     12  header_size         u32   4096
//     16  pool_size           u64   whole file, bytes
//     24  uuid                16 B  random, identifies the pool
//     40  kind                32 B  index kind, NUL-padded (at most 31 characters)
//     72  index_options       4 x u64, opaque to the pool
//     104 chunk_size          u64   power of two, 4 KiB .. 1 GiB
//     112 chunk_count         u64   chunks in the file
//     120 chunk_table_offset  u64   4096
//     128 first_chunk_offset  u64   4096 + chunk table rounded up to 4 KiB, or (a pool
//                                   with a gap) any multiple of 64 past that, below 2^50
//     136 checksum            u64   FNV-1a over bytes [8, 136), then (version >= 2)
//                                   [144, 192)
//     144 flags               u64   (version >= 2) kFlagValuesAreBlocks; 0 in version 1
//   bytes 192..223 (cache line 3): mutable words, each changed by one 8-byte pm::store and
//   persisted
//     192 root                u64   index root offset, 0 = none
//     200 chunk_hwm           u64   chunks [0, hwm) are carved (see chunk_table.h)
//     208 generation          u64   bumped on every open (by kGenerationStep)
//     216 clean_shutdown      u64   1 after a clean close, 0 while open
//
// Why the mutable words are not under the checksum: each of them is updated by a single
// failure-atomic 8-byte store. Covering it by the checksum would need a second store (the
// new checksum) and a crash between the two would make an intact pool look corrupt. So the
// checksum covers only what never changes after create, and open() validates the mutable
// words by range instead: root is 0 or lies inside the chunk area, hwm <= chunk_count,
// clean_shutdown is 0 or 1.
//
// Why the magic is written last: create persists every other field first, then stores and
// persists the magic. A crash during create leaves magic 0, which open() reports as
// not_a_pool ("creation did not finish") instead of a half-initialised pool.
//
// Durability note: on a file that is not on DAX the mapping is an ordinary shared mapping
// (libpmem2 reports PAGE granularity); flush instructions then make data survive a process
// crash (the page cache has it) but not an OS crash. That is the emulation setting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace wort::pm {

//! Exclusive bound of the header's generation word (pool.cc checks it at every open).
inline constexpr std::uint64_t kMaxGeneration = std::uint64_t{1} << 40;
//! What every open adds to the generation. Lock words, obsolete marks and fresh marks are
//! "this session's" exactly when their tag equals the generation; with a step of 1 one
//! flipped bit in a tag of the previous session (gen - 1 even: bit 0 of the tag) made it
//! the next session's, and an outside review hung writers and readers that way. With an
//! odd step above 1 no tag of any earlier session is one bit away from the current one
//! (that difference, a multiple of 3, is never a power of two). Pools of older builds,
//! bumped by 1 until now, keep what they have and step by 3 from here.
inline constexpr std::uint64_t kGenerationStep = 3;

inline constexpr std::uint64_t kPoolMagic = 0x4c4f4f50'54524f57ull;  // "WORTPOOL" in LE bytes
inline constexpr std::uint32_t kLayoutVersion = 2;
//! flags bit: every value stored in the index names a pool block the index owns (the
//! server's items); the recovery trace follows values too (kit::walk_all).
inline constexpr std::uint64_t kFlagValuesAreBlocks = 1;
inline constexpr std::uint64_t kKnownFlags = kFlagValuesAreBlocks;
inline constexpr std::uint32_t kHeaderSize = 4096;
inline constexpr std::size_t kKindCapacity = 32;  // bytes, including the terminating NUL
inline constexpr std::uint64_t kMinChunkSize = 4096;
inline constexpr std::uint64_t kMaxChunkSize = 1ull << 30;

struct PoolHeader {
  // --- immutable, checksummed ---
  std::uint64_t magic;
  std::uint32_t layout_version;
  std::uint32_t header_size;
  std::uint64_t pool_size;
  std::byte uuid[16];
  char kind[kKindCapacity];
  std::uint64_t index_options[4];
  std::uint64_t chunk_size;
  std::uint64_t chunk_count;
  std::uint64_t chunk_table_offset;
  std::uint64_t first_chunk_offset;
  std::uint64_t checksum;
  std::uint64_t flags;
  std::byte pad0[192 - 152];
  // --- mutable, one 8-byte commit store each, validated by range ---
  std::uint64_t root;
  std::uint64_t chunk_hwm;
  std::uint64_t generation;
  std::uint64_t clean_shutdown;
  std::byte pad1[kHeaderSize - 224];
};

static_assert(std::is_standard_layout_v<PoolHeader>);
static_assert(std::is_trivially_copyable_v<PoolHeader>);
static_assert(sizeof(PoolHeader) == kHeaderSize);
static_assert(offsetof(PoolHeader, magic) == 0);
static_assert(offsetof(PoolHeader, layout_version) == 8);
static_assert(offsetof(PoolHeader, header_size) == 12);
static_assert(offsetof(PoolHeader, pool_size) == 16);
static_assert(offsetof(PoolHeader, uuid) == 24);
static_assert(offsetof(PoolHeader, kind) == 40);
static_assert(offsetof(PoolHeader, index_options) == 72);
static_assert(offsetof(PoolHeader, chunk_size) == 104);
static_assert(offsetof(PoolHeader, chunk_count) == 112);
static_assert(offsetof(PoolHeader, chunk_table_offset) == 120);
static_assert(offsetof(PoolHeader, first_chunk_offset) == 128);
static_assert(offsetof(PoolHeader, checksum) == 136);
static_assert(offsetof(PoolHeader, flags) == 144);
// The mutable words are 8-aligned (failure-atomic 8-byte stores) and share one cache line,
// so open() bumps the generation and clears the clean flag with one flush.
static_assert(offsetof(PoolHeader, root) == 192 && offsetof(PoolHeader, root) % 8 == 0);
static_assert(offsetof(PoolHeader, chunk_hwm) == 200);
static_assert(offsetof(PoolHeader, generation) == 208);
static_assert(offsetof(PoolHeader, clean_shutdown) == 216);
static_assert(offsetof(PoolHeader, root) / 64 == offsetof(PoolHeader, clean_shutdown) / 64,
              "mutable words must share one cache line");

//! First byte after the checksummed range [8, kChecksummedEnd).
inline constexpr std::size_t kChecksummedBegin = offsetof(PoolHeader, layout_version);
inline constexpr std::size_t kChecksummedEnd = offsetof(PoolHeader, checksum);

//! Version 2 also covers [kChecksummed2Begin, kChecksummed2End): flags and padding.
inline constexpr std::size_t kChecksummed2Begin = offsetof(PoolHeader, flags);
inline constexpr std::size_t kChecksummed2End = offsetof(PoolHeader, root);

//! FNV-1a (64-bit) over the immutable header fields of h's layout version.
inline std::uint64_t header_checksum(const PoolHeader& h) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(&h);
  std::uint64_t x = 0xcbf29ce484222325ull;
  auto mix = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      x ^= p[i];
      x *= 0x100000001b3ull;
    }
  };
  mix(kChecksummedBegin, kChecksummedEnd);
  if (h.layout_version >= 2) mix(kChecksummed2Begin, kChecksummed2End);
  return x;
}

//! Geometry derived from (requested size, chunk size); create() and open() agree on it.
struct PoolGeometry {
  std::uint64_t chunk_count;
  std::uint64_t chunk_table_offset;
  std::uint64_t first_chunk_offset;
  std::uint64_t pool_size;
};

//! Offset of the chunk area for `chunk_count` chunks without a gap: the chunk table's end.
inline constexpr std::uint64_t first_chunk_offset_for(std::uint64_t chunk_count) noexcept {
  const std::uint64_t table = chunk_count * 8;
  return kHeaderSize + (table + kHeaderSize - 1) / kHeaderSize * kHeaderSize;
}

//! Exclusive bound of a pool's size and of its first_chunk_offset (1 PiB): sums of two
//! such values cannot overflow.
inline constexpr std::uint64_t kMaxPoolBytes = 1ull << 50;
//! A chunk area past a gap starts at a multiple of this (a cache line: blocks of 64 bytes
//! or more stay 64-byte aligned, which is all the allocator promises). Finer than a page so
//! a test can put 2^32 between any two blocks (tests/support/crash_ops.h, above_4gib).
inline constexpr std::uint64_t kChunkAreaAlign = 64;

//! The gap [begin, end) between the chunk table and the chunk area of a pool (empty: begin
//! == end, the usual layout). Nothing in the pool is ever stored there.
struct PoolGap {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t size() const noexcept { return end - begin; }
};

//! The gap of a header that open() accepted.
inline PoolGap gap_of(const PoolHeader& h) noexcept {
  return PoolGap{first_chunk_offset_for(h.chunk_count), h.first_chunk_offset};
}

}  // namespace wort::pm
