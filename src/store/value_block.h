// store/value_block.h — the one value-block layer of the pool: wort::Store's value blobs
// and `wort serve`'s items are both value blocks. A value block is one allocator block,
// written once into an unreachable block and named by an index value afterwards:
//
//   0                                sizeof(H)     sizeof(H)+key_len
//   +--------------------------------+-------------+---------------+
//   | the caller's fixed header H    | key bytes   | value bytes   |
//   | (magic, crc, key_len,          |             |               |
//   |  value_len, its own fields)    |             |               |
//   +--------------------------------+-------------+---------------+
//
// The caller's header H declares the layer's four fields (magic, crc u32, key_len,
// value_len: any unsigned widths, anywhere in H) and the one run of header bytes outside
// the checksum, [H::kSkipFrom, H::kSkipTo): it holds the crc word itself and the words the
// caller changes in place on a published block with one 8-byte commit (the server's
// exptime, changed by touch/gat), which a checksum could not follow.
//   crc: CRC-32C over header bytes [0, kSkipFrom), then [kSkipTo, sizeof(H)), the key and the
//   value — one run of bytes from kSkipTo on, as the block lays them out.
//
// The layer's three steps, the same for both callers:
//   write_block   pm::copy of header, key and value, the crc computed over the copied bytes
//                 and pm::store'd, then pm::flush of the whole block; no fence: the index's commit in a values_are_blocks pool fences first, which
//                 orders the write-back before the index names the block.
//   check_block   before a block's bytes are used: alignment and bounds in the pool, magic,
//                 lengths, the key, the checksum. A damaged block is refused, never read as
//                 wrong bytes.
//   free_unlinked after the commit that unlinked the block returned: retired to the epoch
//                 reclaimer (freed once no reader pinned before can hold it), or freed at
//                 once where no reader can (the server's global-lock path).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "index/kit/epoch.h"
#include "pm/allocator.h"
#include "pm/persist.h"
#include "store/crc32c.h"
#include "wort/pool.h"

namespace wort::store {

//! What the layer needs of a caller's block header (see the comment above).
template <class H>
concept BlockHeader = std::is_trivially_copyable_v<H> && std::is_standard_layout_v<H> &&
                      sizeof(H) % 8 == 0 && H::kSkipFrom <= H::kSkipTo &&
                      H::kSkipTo <= sizeof(H) && requires(H h) {
                        { H::kMagic } -> std::convertible_to<decltype(h.magic)>;
                        { h.crc } -> std::convertible_to<std::uint32_t>;
                        { h.key_len } -> std::convertible_to<std::size_t>;
                        { h.value_len } -> std::convertible_to<std::size_t>;
                      };

//! The bytes of a block holding key_len + value_len bytes after header H.
template <BlockHeader H>
constexpr std::size_t block_bytes(std::size_t key_len, std::size_t value_len) noexcept {
  return sizeof(H) + key_len + value_len;
}

//! The key and the value of a block whose header is at `h` (checked or just written).
template <BlockHeader H>
const char* block_key(const H* h) noexcept {
  return reinterpret_cast<const char*>(h) + sizeof(H);
}
template <BlockHeader H>
std::string_view block_value(const H* h) noexcept {
  return {block_key(h) + h->key_len, static_cast<std::size_t>(h->value_len)};
}

//! The checksum of the block at `h` as it lies in the pool (its bounds checked): header bytes
//! [0, kSkipFrom), then [kSkipTo, the block's end) — two runs of the block.
template <BlockHeader H>
std::uint32_t stored_crc(const H* h) noexcept {
  const char* b = reinterpret_cast<const char*>(h);
  const std::size_t n = sizeof(H) + h->key_len + h->value_len;
  std::uint32_t c = 0;
  if constexpr (H::kSkipFrom > 0) c = crc32c(0, b, H::kSkipFrom);
  return crc32c(c, b + H::kSkipTo, n - H::kSkipTo);
}

//! Only the crash tests' deliberately broken variants omit the write-back.
enum class WriteBack : std::uint8_t { flush, omit_for_crash_test };

//! Fills the unreachable block `p` (at least block_bytes<H>(key, v1 + v2) bytes) with header
//! `h` (its magic, lengths and own fields set by the caller), key and value v1 v2 (two
//! pieces: an append writes old and new value without a copy): pm::copy each, the crc
//! computed over the copied bytes and stored, then pm::flush of the whole block. No fence.
template <BlockHeader H>
void write_block(char* p, H h, std::string_view key, std::string_view v1, std::string_view v2 = {},
                 WriteBack wb = WriteBack::flush) noexcept {
  pm::copy(p, &h, sizeof h);
  // An empty piece may have a null data(): memcpy must not see it (UB even for 0 bytes).
  if (!key.empty()) pm::copy(p + sizeof h, key.data(), key.size());
  if (!v1.empty()) pm::copy(p + sizeof h + key.size(), v1.data(), v1.size());
  if (!v2.empty()) pm::copy(p + sizeof h + key.size() + v1.size(), v2.data(), v2.size());
  H* b = reinterpret_cast<H*>(p);
  pm::store(&b->crc, stored_crc(b));  // over the bytes just copied: two runs, cache-hot
  if (wb == WriteBack::flush) pm::flush(p, block_bytes<H>(key.size(), v1.size() + v2.size()));
}

//! What check_block found.
enum class BlockCheck : std::uint8_t { ok, not_a_block, bad_magic, bad_length, other_key, bad_checksum };

inline const char* to_string(BlockCheck c) noexcept {
  switch (c) {
    case BlockCheck::ok: return "ok";
    case BlockCheck::not_a_block: return "not a block";
    case BlockCheck::bad_magic: return "bad magic";
    case BlockCheck::bad_length: return "bad length";
    case BlockCheck::other_key: return "another key's value";
    case BlockCheck::bad_checksum: return "checksum mismatch";
  }
  return "unknown";
}

//! Checks the block at pool offset `off` for `key`: a 16-byte aligned block inside the pool,
//! H's magic, key_len == key.size(), value_len <= max_value, the whole block inside the
//! pool, the key's bytes, the checksum. On ok, *out is its header.
template <BlockHeader H>
BlockCheck check_block(const Pool& pool, std::uint64_t off, std::string_view key,
                       std::size_t max_value, const H** out) noexcept {
  if (off % 16 != 0 || !pool.contains(off, sizeof(H))) return BlockCheck::not_a_block;
  const H* h = pool.at<H>(off);
  if (h->magic != H::kMagic) return BlockCheck::bad_magic;
  // (off < pool.size(): contains() above; the block's end is checked without a call.)
  if (h->key_len != key.size() || h->value_len > max_value ||
      block_bytes<H>(h->key_len, h->value_len) > pool.size() - off)
    return BlockCheck::bad_length;
  if (!key.empty() && std::memcmp(block_key(h), key.data(), key.size()) != 0)
    return BlockCheck::other_key;
  if (stored_crc(h) != h->crc) return BlockCheck::bad_checksum;
  *out = h;
  return BlockCheck::ok;
}

//! A block the index no longer names (the unlinking commit returned): retired to `epochs`
//! and freed once no reader pinned before can hold it, or freed at once when `epochs` is
//! null (no reader can hold it: the caller excludes them).
inline void free_unlinked(pm::Allocator& a, kit::EpochReclaimer* epochs,
                          std::uint64_t off) noexcept {
  if (epochs == nullptr) {
    a.free(off);
    return;
  }
  epochs->retire(off);
  epochs->reclaim();
}

}  // namespace wort::store
