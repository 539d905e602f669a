#include "index/roart/roart_leaf.h"

#include "index/common/radix_key.h"
#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort::roart {

std::uint16_t fingerprint(Key k) noexcept {
  std::uint64_t h = 0x9e3779b97f4a7c15ull ^ k.size();
  std::size_t i = 0;
  for (; i + 8 <= k.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, k.data() + i, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  std::uint64_t tail = 0;
  if (i < k.size()) std::memcpy(&tail, k.data() + i, k.size() - i);
  h = (h ^ tail) * 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 29;
  return static_cast<std::uint16_t>(h >> 48);
}

std::size_t common_prefix(Key a, Key b, std::size_t from) noexcept {
  return radix::Partials<8>::mismatch(a, b, from);
}

Status make_leaf(Pool& pool, Key k, Value v, std::uint64_t* off) noexcept {
  if (Status s = pool.allocator().allocate(leaf_bytes(k.size()), off); s != Status::ok) return s;
  Leaf* l = pool.at<Leaf>(*off);
  const Leaf head{v, static_cast<std::uint32_t>(k.size()), 0};
  pm::copy(l, &head, sizeof head);
  if (!k.empty()) pm::copy(l->key, k.data(), k.size());
  pm::flush(l, leaf_bytes(k.size()));
  return Status::ok;
}

void commit_value(Leaf* l, Value v) noexcept { pm::commit(&l->value, v); }

}  // namespace wort::roart
