#include "index/nvtree/nvtree_leaf.h"

#include <algorithm>

#include "pm/check.h"
#include "pm/persist.h"

namespace wort::nvtree {

int find_latest(const std::byte* base, const Leaf* l, const Probe& p) noexcept {
  const Entry* e = l->entries();
  for (std::uint64_t i = l->count; i-- > 0;)
    if (compare(base, e[i], p) == 0) return static_cast<int>(i);
  return -1;
}

void live_sorted(const std::byte* base, const Leaf* l, std::vector<Entry>& out) {
  out.clear();
  std::vector<std::uint32_t> idx(l->count);
  for (std::uint32_t i = 0; i < idx.size(); ++i) idx[i] = i;
  const Entry* e = l->entries();
  // key order, and within a key newest first
  std::sort(idx.begin(), idx.end(), [&](std::uint32_t a, std::uint32_t b) {
    const int c = compare(base, e[a], e[b]);
    return c != 0 ? c < 0 : a > b;
  });
  for (std::size_t i = 0; i < idx.size(); ++i) {
    if (i > 0 && compare(base, e[idx[i - 1]], e[idx[i]]) == 0) continue;  // an older entry
    if (!is_delete(e[idx[i]])) out.push_back(e[idx[i]]);
  }
}

void init_leaf(Leaf* l, std::uint32_t capacity, std::uint64_t next, const Entry* e,
               std::size_t n) noexcept {
  WORT_DCHECK(n <= capacity);
  // A 64-aligned leaf block; `next` is the end (0) or another leaf.
  WORT_DCHECK(reinterpret_cast<std::uintptr_t>(l) % 64 == 0 && next % 64 == 0);
  Leaf h{};
  h.count = n;
  h.next = next;
  h.capacity = capacity;
  pm::copy(l, &h, sizeof(Leaf));
  if (n) pm::copy(l->entries(), e, n * sizeof(Entry));
  pm::flush(l, leaf_bytes(static_cast<unsigned>(n)));
}

void append_and_commit(Leaf* l, const Entry* e, std::size_t n) noexcept {
  const std::uint64_t c = l->count;
  WORT_DCHECK((n == 1 || n == 2) && c + n <= l->capacity);
  // Two entries are an update: a delete, then the insert of the same key form.
  WORT_DCHECK(n == 1 || (is_delete(e[0]) && !is_delete(e[1]) && e[0].prefix == e[1].prefix &&
                         key_meta(e[0]) == key_meta(e[1])));
  // A long key's form names its 16-aligned key block.
  WORT_DCHECK(key_meta(e[n - 1]) <= kMaxInline || key_meta(e[n - 1]) % 16 == 0);
  Entry* dst = l->entries() + c;  // beyond count: invisible until the count store
  for (std::size_t i = 0; i < n; ++i) {
    pm::store(&dst[i].prefix, e[i].prefix);
    pm::store(&dst[i].meta, e[i].meta);
    pm::store(&dst[i].value, e[i].value);
  }
  pm::flush(dst, n * sizeof(Entry));
  pm::publish(&l->count, c + n);  // the commit
}

}  // namespace wort::nvtree
