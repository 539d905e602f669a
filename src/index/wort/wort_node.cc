#include "index/wort/wort_node.h"

#include <cstring>

#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort::wort_index {

std::uint64_t make_header(std::uint32_t depth, std::uint32_t prefix_len, Key source) noexcept {
  std::uint64_t prefix = 0;
  const std::uint32_t stored = prefix_len < kPrefixSlots ? prefix_len : kPrefixSlots;
  for (std::uint32_t i = 0; i < stored; ++i)
    prefix |= static_cast<std::uint64_t>(Partial::at(source, depth + i)) << (i * kSpanBits);
  return static_cast<std::uint64_t>(depth) |
         (static_cast<std::uint64_t>(prefix_len) << kDepthBits) |
         (prefix << (kDepthBits + kPrefixLenBits));
}

std::uint64_t Blocks::leftmost_leaf(std::uint64_t word) const noexcept {
  while (word != 0 && !is_leaf(word)) {
    const Node* n = node(word);
    std::uint64_t next = 0;
    for (unsigned i = 0; i < kOrderedSlots && next == 0; ++i) next = load(ordered_slot(n, i));
    word = next;
  }
  return word;
}

unsigned child_count(const Node* n) noexcept {
  unsigned c = load(&n->end_child) != 0;
  for (const std::uint64_t& w : n->child) c += load(&w) != 0;
  return c;
}

Status make_node(Pool& pool, const Node& image, std::uint64_t lock, std::uint64_t* word) noexcept {
  std::uint64_t off = 0;
  if (Status s = pool.allocator().allocate(sizeof(Node), &off); s != Status::ok) return s;
  Node* n = pool.at<Node>(off);
  pm::copy_changed(n, &image, kNodeImageBytes);
  // The lock word: `lock` (an insert's new node is born held by its writer), whatever the
  // reused block left there (a merged-away node's obsolete word, a long key's bytes).
  // Volatile and never written back; the commit that publishes the node orders it before
  // any writer can reach the node. Stored only when needed.
  if (__atomic_load_n(&n->lock, __ATOMIC_RELAXED) != lock) pm::store_volatile(&n->lock, lock);
  *word = off;
  return Status::ok;
}

}  // namespace wort::wort_index
