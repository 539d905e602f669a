// server/item_layout.h — the persistent layout of a cache item and of the server's meta
// block. Both are single allocator blocks; the index maps a key to the block's offset (the
// pool is created with PoolOptions::values_are_blocks, so the recovery trace keeps every
// block an index value names).
//
// An item (one block, written once, never modified in place except `exptime` by touch):
//
//   0        8          16       20          24        26       28        32            32+key_len
//   +--------+----------+--------+-----------+---------+--------+---------+-------------+-----------+
//   | cas    | exptime  | flags  | value_len | key_len | iflags | magic   | key bytes   | value     |
//   | u64    | i64 abs. | u32    | u32       | u16     | u16    | u32     | key_len     | value_len |
//   +--------+----------+--------+-----------+---------+--------+---------+-------------+-----------+
//
//   exptime: absolute unix seconds, 0 = never expires (memcached's relative times are
//   converted on the way in, so an item's lifetime holds across restarts).
//   iflags:  kItemStale (meta `md I` / `ms I`: the item is stale, mg answers X),
//            kItemKeyBinary (stored through a base64 `b` key: meta `k` answers in base64).
//            Written with the item, never changed in place (a new stale item is a new
//            block committed like a set).
//   magic:   kItemMagic, written with the rest; recovery rejects an item without it.
//
// Commit store of a set: the index's own commit store of key -> item offset (the item is
// pm::copy'd and pm::flush'ed before; the index's commit fences first). touch/gat change
// `exptime` with one pm::commit of the 8-byte word (an old or a new expiry, never torn).
//
// The meta block (one per pool, found through the reserved key kMetaKey):
//
//   0        8          16           24             32           40           64
//   +--------+----------+------------+--------------+------------+------------+
//   | magic  | cas_hwm  | flush_cas  | flush_at     | item_limit | reserved   |
//   +--------+----------+------------+--------------+------------+------------+
//
//   cas_hwm:   every cas handed out so far is < cas_hwm; bumped by kCasBatch with one
//              pm::commit before the first cas of a new batch is used. A restart starts
//              at cas_hwm, so cas uniques never repeat.
//   flush_cas: items with cas <= flush_cas are invalid (flush_all). One pm::commit.
//   flush_at:  a pending delayed flush_all (absolute unix seconds, 0 = none). One
//              pm::commit; applied (flush_cas set, flush_at cleared) when it comes due.
//   item_limit: `-m` in bytes: the item blocks the cache may hold (the pool is larger: its
//              index and allocator metadata live beside them). Written once, with the rest
//              of the block when the pool is created; never changed. 0 = no budget but the
//              pool's own room (a pool created before the field: the block was all zeros
//              past flush_at).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace wort::server {

inline constexpr std::uint32_t kItemMagic = 0x4d455449;  // "ITEM" little-endian
inline constexpr std::uint64_t kMetaMagic = 0x4154454d56524553ull;  // "SERVMETA"
inline constexpr std::size_t kMaxKeyLength = 250;                    // memcached's KEY_MAX_LENGTH
inline constexpr std::uint64_t kCasBatch = 1u << 16;
inline constexpr std::uint16_t kItemStale = 1;      // iflags: marked stale (meta I flag)
inline constexpr std::uint16_t kItemKeyBinary = 2;  // iflags: key came base64-encoded (b)
//! The index key of the meta block: starts with a NUL, which no text-protocol key can hold.
inline constexpr std::string_view kMetaKey{"\0wort-serve-meta", 16};

struct ItemHeader {
  std::uint64_t cas;
  std::int64_t exptime;
  std::uint32_t flags;
  std::uint32_t value_len;
  std::uint16_t key_len;  // <= kMaxKeyLength
  std::uint16_t iflags;   // kItemStale | kItemKeyBinary
  std::uint32_t magic;
};

static_assert(sizeof(ItemHeader) == 32);
static_assert(offsetof(ItemHeader, cas) == 0);
static_assert(offsetof(ItemHeader, exptime) == 8 && offsetof(ItemHeader, exptime) % 8 == 0,
              "touch commits exptime with one failure-atomic 8-byte store");
static_assert(offsetof(ItemHeader, flags) == 16);
static_assert(offsetof(ItemHeader, value_len) == 20);
static_assert(offsetof(ItemHeader, key_len) == 24);
static_assert(offsetof(ItemHeader, iflags) == 26);
static_assert(kMaxKeyLength <= UINT16_MAX, "key_len is 16 bits");
static_assert(offsetof(ItemHeader, magic) == 28);

inline char* item_key(ItemHeader* h) noexcept { return reinterpret_cast<char*>(h + 1); }
inline const char* item_key(const ItemHeader* h) noexcept {
  return reinterpret_cast<const char*>(h + 1);
}
inline const char* item_value(const ItemHeader* h) noexcept { return item_key(h) + h->key_len; }
inline std::size_t item_bytes(std::size_t key_len, std::size_t value_len) noexcept {
  return sizeof(ItemHeader) + key_len + value_len;
}

struct MetaBlock {
  std::uint64_t magic;
  std::uint64_t cas_hwm;
  std::uint64_t flush_cas;
  std::int64_t flush_at;
  std::uint64_t item_limit;
  std::uint64_t reserved[3];
};

static_assert(sizeof(MetaBlock) == 64);
static_assert(offsetof(MetaBlock, cas_hwm) == 8, "one 8-byte commit store");
static_assert(offsetof(MetaBlock, flush_cas) == 16, "one 8-byte commit store");
static_assert(offsetof(MetaBlock, flush_at) == 24, "one 8-byte commit store");
static_assert(offsetof(MetaBlock, item_limit) == 32, "where older pools hold zero");

}  // namespace wort::server
