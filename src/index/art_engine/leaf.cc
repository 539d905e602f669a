#include "index/art_engine/leaf.h"

#include "index/kit/radix_key.h"
#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort::art_engine {

// WORT's partial-key helper, with 8-bit partial keys: compares 8 bytes at a time.
std::size_t common_prefix(Key a, Key b, std::size_t from) noexcept {
  return radix::Partials<8>::mismatch(a, b, from);
}

Status make_leaf(Pool& pool, Key k, Value v, std::uint32_t mark, Ref* out) noexcept {
  std::uint64_t off = 0;
  if (Status s = pool.allocator().allocate(leaf_bytes(k.size()), &off); s != Status::ok) return s;
  Leaf* l = pool.at<Leaf>(off);
  const Leaf head{v, static_cast<std::uint32_t>(k.size()), mark};
  pm::copy(l, &head, sizeof head);
  if (!k.empty()) pm::copy(l->key, k.data(), k.size());
  pm::flush(l, leaf_bytes(k.size()));
  *out = leaf_ref(off);
  return Status::ok;
}


}  // namespace wort::art_engine
