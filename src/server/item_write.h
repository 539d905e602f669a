// server/item_write.h — writes a cache item into a fresh allocator block: the one piece of
// the set path that touches pool memory before the index commit. Store::make_item uses it;
// tests/server/item_crash_test.cc drives it under the crash simulator with the same index
// commit (upsert in a values_are_blocks pool, which fences first) and the same free of
// the replaced block after the commit returned.
//
// Writes, in order: pm::copy of header, key and value into the unreachable block, then
// pm::flush of the whole item. No fence: the index's commit (pm::publish /
// kit::commit_value in a values_are_blocks pool) orders the write-back before the index
// names the block.
#pragma once

#include <cstdint>
#include <string_view>

#include "pm/persist.h"
#include "server/item_layout.h"
#include "wort/pool.h"

namespace wort::server {

struct ItemFields {
  std::uint64_t cas = 0;
  std::int64_t exptime = 0;  // absolute
  std::uint32_t flags = 0;
  std::uint16_t iflags = 0;
};

//! Only the crash test's deliberately broken variant omits the write-back.
enum class ItemWriteBack : std::uint8_t { flush, omit_for_crash_test };

//! Fills the block at `off` (at least item_bytes(key, v1 + v2) bytes, reachable by no one)
//! with the item key -> v1 v2. Precondition: key.size() <= kMaxKeyLength.
inline void write_item(Pool& pool, std::uint64_t off, const ItemFields& f, std::string_view key,
                       std::string_view v1, std::string_view v2,
                       ItemWriteBack wb = ItemWriteBack::flush) noexcept {
  auto* h = pool.at<ItemHeader>(off);
  ItemHeader hdr{};
  hdr.cas = f.cas;
  hdr.exptime = f.exptime;
  hdr.flags = f.flags;
  hdr.value_len = static_cast<std::uint32_t>(v1.size() + v2.size());
  hdr.key_len = static_cast<std::uint16_t>(key.size());
  hdr.iflags = f.iflags;
  hdr.magic = kItemMagic;
  pm::copy(h, &hdr, sizeof hdr);
  char* p = item_key(h);
  pm::copy(p, key.data(), key.size());
  // An empty piece may have a null data(): memcpy must not see it (UB even for 0 bytes).
  if (!v1.empty()) pm::copy(p + key.size(), v1.data(), v1.size());
  if (!v2.empty()) pm::copy(p + key.size() + v1.size(), v2.data(), v2.size());
  if (wb == ItemWriteBack::flush) pm::flush(h, item_bytes(key.size(), hdr.value_len));
}

}  // namespace wort::server
