#include "index/artcommon/leaf.h"

#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort::artcommon {

std::size_t common_prefix(Key a, Key b, std::size_t from) noexcept {
  const std::size_t n = a.size() < b.size() ? a.size() : b.size();
  std::size_t i = from;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

Status make_leaf(Pool& pool, Key k, Value v, Ref* out) noexcept {
  std::uint64_t off = 0;
  if (Status s = pool.allocator().allocate(leaf_bytes(k.size()), &off); s != Status::ok) return s;
  Leaf* l = pool.at<Leaf>(off);
  const Leaf head{v, static_cast<std::uint32_t>(k.size()), 0};
  pm::copy(l, &head, sizeof head);
  if (!k.empty()) pm::copy(l->key, k.data(), k.size());
  pm::flush(l, leaf_bytes(k.size()));
  *out = leaf_ref(off);
  return Status::ok;
}

void commit_value(Leaf* l, Value v) noexcept { pm::store_persist(&l->value, v); }

}  // namespace wort::artcommon
