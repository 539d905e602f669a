// store/layout.h — what wort::Store keeps in its pool. The pool is created with
// PoolOptions::values_are_blocks: every index value names a pool block, and the recovery
// trace keeps exactly the blocks the index and its values reach.
//
// Index keys: a user key k is stored as kDataTag + k; the store's own entries start with
// kMetaTag (sorting before every user key), so no user key can collide with them.
//   "\0meta" -> the meta block (identifies a Store pool)
//   "\0log"  -> a committed batch's redo log (present only while a batch applies)
//
// A value blob (a value block of store/value_block.h with header BlobHeader: one block,
// written once, never changed in place):
//
//   0        4        8          12          16          16+key_len
//   +--------+--------+----------+-----------+-----------+-------------+
//   | magic  | crc    | key_len  | value_len | key bytes | value bytes |
//   | u32    | u32    | u32      | u32       |           |             |
//   +--------+--------+----------+-----------+-----------+-------------+
//   crc: CRC-32C over bytes [8, 16 + key_len + value_len) (the lengths, key and value):
//   the header's skipped run is [0, 8), its magic and crc; nothing is changed in place.
//
// The meta block (64 bytes): magic u64 kMetaMagic, version u64 kStoreVersion, reserved.
//
// A redo log (one block, written and written back whole before "\0log" names it):
//
//   0        4        8        16            per record: 16-byte header, key, value
//   +--------+--------+--------+-------------+------------------------------------------+
//   | magic  | crc    | count  | bytes       | op u32 | key_len u32 | value_len u32 | 0 |
//   | u32    | u32    | u64    | u64 (total) | key bytes | value bytes (padded to 8)  |
//   +--------+--------+--------+-------------+------------------------------------------+
//   crc: CRC-32C over bytes [8, bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace wort::store {

inline constexpr char kDataTag = '\x01';
inline constexpr char kMetaTag = '\x00';
inline constexpr std::string_view kMetaKey{"\0meta", 5};
inline constexpr std::string_view kLogKey{"\0log", 4};

inline constexpr std::uint32_t kBlobMagic = 0x31565357;  // "WSV1"
inline constexpr std::uint32_t kLogMagic = 0x31475357;   // "WSG1"
inline constexpr std::uint64_t kMetaMagic = 0x524f545354524f57ull;  // "WORTSTOR"
inline constexpr std::uint64_t kStoreVersion = 1;

struct BlobHeader {
  static constexpr std::uint32_t kMagic = kBlobMagic;
  static constexpr std::size_t kSkipFrom = 0;  // outside the checksum: magic and crc
  static constexpr std::size_t kSkipTo = 8;
  std::uint32_t magic;
  std::uint32_t crc;
  std::uint32_t key_len;
  std::uint32_t value_len;
};
static_assert(sizeof(BlobHeader) == 16);
static_assert(offsetof(BlobHeader, crc) == 4 && offsetof(BlobHeader, key_len) == 8 &&
              offsetof(BlobHeader, value_len) == 12);

inline std::size_t blob_bytes(std::size_t key_len, std::size_t value_len) noexcept {
  return sizeof(BlobHeader) + key_len + value_len;
}

struct MetaBlock {
  std::uint64_t magic;
  std::uint64_t version;
  std::uint64_t reserved[6];
};
static_assert(sizeof(MetaBlock) == 64);

struct LogHeader {
  std::uint32_t magic;
  std::uint32_t crc;
  std::uint64_t count;
  std::uint64_t bytes;
  std::uint64_t reserved;
};
static_assert(sizeof(LogHeader) == 32);

struct LogRecord {
  std::uint32_t op;  // 0 put, 1 remove
  std::uint32_t key_len;
  std::uint32_t value_len;
  std::uint32_t reserved;
};
static_assert(sizeof(LogRecord) == 16);

inline std::size_t pad8(std::size_t n) noexcept { return (n + 7) & ~std::size_t{7}; }
inline std::size_t record_bytes(std::size_t key_len, std::size_t value_len) noexcept {
  return sizeof(LogRecord) + pad8(key_len + value_len);
}

}  // namespace wort::store
