#include "index/wort/wort_leaf.h"

#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort::wort_index {

Status make_leaf(Pool& pool, Key k, Value v, std::uint32_t mark, std::uint64_t* word) noexcept {
  std::uint64_t off = 0;
  if (Status s = pool.allocator().allocate(leaf_bytes(k.size()), &off); s != Status::ok) return s;
  auto* l = pool.at<LeafHeader>(off);
  const LeafHeader fixed{v, static_cast<std::uint32_t>(k.size()), mark};
  pm::copy(l, &fixed, sizeof fixed);
  if (!k.empty()) pm::copy(l + 1, k.data(), k.size());
  *word = off | kLeafTag;
  return Status::ok;
}

void flush_leaf(const LeafHeader* l) noexcept { pm::flush(l, leaf_bytes(l->key_len)); }

}  // namespace wort::wort_index
