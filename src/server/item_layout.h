// server/item_layout.h — the persistent layout of a cache item and of the server's meta
// block. Both are single allocator blocks; the index maps a key to the block's offset (the
// pool is created with PoolOptions::values_are_blocks, so the recovery trace keeps every
// block an index value names).
//
// An item is a value block (store/value_block.h: written with store::write_block, checked
// with store::check_block before its bytes are used, freed with store::free_unlinked) whose
// header is ItemHeader: the layer's magic, crc, key_len and value_len, and the cache's own
// cas, exptime, flags and iflags. Written once, never modified in place except `exptime`
// by touch:
//
//   0          8       12      14        15       16       24       28          32        32+key_len
//   +----------+-------+-------+---------+--------+--------+--------+-----------+---------+-----------+
//   | exptime  | crc   | magic | key_len | iflags | cas    | flags  | value_len | key     | value     |
//   | i64 abs. | u32   | u16   | u8      | u8     | u64    | u32    | u32       | key_len | value_len |
//   +----------+-------+-------+---------+--------+--------+--------+-----------+---------+-----------+
//   |<- not checked -->|<- checked: [12, 32 + key_len + value_len), one run --------------------------->|
//
//   crc:     CRC-32C over bytes [12, 32 + key_len + value_len): everything but exptime and
//            the crc word, in one run. A read checks it (store::check_block): a damaged
//            item is a miss (stats `items_corrupt`), never wrong bytes; the open's walk
//            refuses a pool holding one.
//   exptime: absolute unix seconds, 0 = never expires (memcached's relative times are
//            converted on the way in, so an item's lifetime holds across restarts). Outside
//            the checksum: touch/gat change it in place with one 8-byte commit.
//   iflags:  kItemStale (meta `md I` / `ms I`: the item is stale, mg answers X),
//            kItemKeyBinary (stored through a base64 `b` key: meta `k` answers in base64).
//            Written with the item, never changed in place (a new stale item is a new
//            block committed like a set; ms I's stale copy sets it, and its crc again,
//            before the commit).
//   magic:   kItemMagic; key_len <= kMaxKeyLength (250) fits its byte.
//
// Commit store of a set: the index's own commit store of key -> item offset (the item is
// pm::copy'd and pm::flush'ed before by store::write_block; the index's commit fences
// first). touch/gat change `exptime` with one pm::commit of the 8-byte word (an old or a
// new expiry, never torn).
//
// The meta block (one per pool, found through the reserved key kMetaKey):
//
//   0        8          16           24             32           40           64
//   +--------+----------+------------+--------------+------------+------------+
//   | magic  | cas_hwm  | flush_cas  | flush_at     | item_limit | version    | reserved
//   +--------+----------+------------+--------------+------------+------------+---------
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
//   version:   the item format, kServerVersion, written once with the block. A pool of an
//              older format (0 here: items without a checksum) is refused at open with a
//              message, never read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace wort::server {

inline constexpr std::uint16_t kItemMagic = 0x3249;  // "I2" little-endian
inline constexpr std::uint64_t kMetaMagic = 0x4154454d56524553ull;  // "SERVMETA"
//! The item format: 2 = value blocks with a checksum (item pools of 1 have version 0).
inline constexpr std::uint64_t kServerVersion = 2;
inline constexpr std::size_t kMaxKeyLength = 250;                    // memcached's KEY_MAX_LENGTH
inline constexpr std::uint64_t kCasBatch = 1u << 16;
inline constexpr std::uint16_t kItemStale = 1;      // iflags: marked stale (meta I flag)
inline constexpr std::uint16_t kItemKeyBinary = 2;  // iflags: key came base64-encoded (b)
//! The index key of the meta block: starts with a NUL, which no text-protocol key can hold.
inline constexpr std::string_view kMetaKey{"\0wort-serve-meta", 16};

struct ItemHeader {
  static constexpr std::uint16_t kMagic = kItemMagic;
  static constexpr std::size_t kSkipFrom = 0;  // outside the checksum: exptime and crc
  static constexpr std::size_t kSkipTo = 12;
  std::int64_t exptime;
  std::uint32_t crc;
  std::uint16_t magic;
  std::uint8_t key_len;  // <= kMaxKeyLength
  std::uint8_t iflags;   // kItemStale | kItemKeyBinary
  std::uint64_t cas;
  std::uint32_t flags;
  std::uint32_t value_len;
};

static_assert(sizeof(ItemHeader) == 32);
static_assert(offsetof(ItemHeader, exptime) == 0 && offsetof(ItemHeader, exptime) % 8 == 0,
              "touch commits exptime with one failure-atomic 8-byte store");
static_assert(ItemHeader::kSkipFrom == 0 && offsetof(ItemHeader, exptime) + 8 <= ItemHeader::kSkipTo,
              "exptime lies outside the checksum");
static_assert(offsetof(ItemHeader, crc) == 8 && ItemHeader::kSkipTo == 12);
static_assert(offsetof(ItemHeader, magic) == 12);
static_assert(offsetof(ItemHeader, key_len) == 14);
static_assert(offsetof(ItemHeader, iflags) == 15);
static_assert(offsetof(ItemHeader, cas) == 16);
static_assert(offsetof(ItemHeader, flags) == 24);
static_assert(offsetof(ItemHeader, value_len) == 28);
static_assert(kMaxKeyLength <= UINT8_MAX, "key_len is 8 bits");

//! The cache's own fields of an item.
struct ItemFields {
  std::uint64_t cas = 0;
  std::int64_t exptime = 0;  // absolute
  std::uint32_t flags = 0;
  std::uint16_t iflags = 0;
};

//! The header of a new item of fields `f`, a key_len-byte key and a value_len-byte value
//! (its crc is store::write_block's). Precondition: key_len <= kMaxKeyLength.
inline ItemHeader item_header(const ItemFields& f, std::size_t key_len,
                              std::size_t value_len) noexcept {
  ItemHeader h{};
  h.magic = kItemMagic;
  h.key_len = static_cast<std::uint8_t>(key_len);
  h.iflags = static_cast<std::uint8_t>(f.iflags);
  h.exptime = f.exptime;
  h.cas = f.cas;
  h.flags = f.flags;
  h.value_len = static_cast<std::uint32_t>(value_len);
  return h;
}

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
  std::uint64_t version;
  std::uint64_t reserved[2];
};

static_assert(sizeof(MetaBlock) == 64);
static_assert(offsetof(MetaBlock, cas_hwm) == 8, "one 8-byte commit store");
static_assert(offsetof(MetaBlock, flush_cas) == 16, "one 8-byte commit store");
static_assert(offsetof(MetaBlock, flush_at) == 24, "one 8-byte commit store");
static_assert(offsetof(MetaBlock, item_limit) == 32, "where older pools hold zero");
static_assert(offsetof(MetaBlock, version) == 40, "where pools of item format 1 hold zero");

}  // namespace wort::server
