// WORT insert, upsert and update (paper §3.2 and Algorithm 1, SplitCmp).
//
// Every path writes its new blocks first (pm::copy into unpublished memory), writes them
// back, fences, and only then stores the one child word that publishes them (the commit):
// non-temporal and fenced (pm::publish_nt / pm::commit_nt), so a lock-free reader cannot
// read the word before it is durable. The caller holds the tree's writer lock.
#include <algorithm>
#include <cstring>

#include "index/common/anchor.h"
#include "index/wort/wort_tree.h"
#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort {

using namespace wort_index;

namespace wort_index {
std::atomic<WindowHook> g_header_window_hook{nullptr};
void* g_header_window_ctx = nullptr;
}  // namespace wort_index

namespace {

bool same_key(const LeafHeader* l, Key k) noexcept {
  return l->key_len == k.size() && (k.empty() || std::memcmp(l + 1, k.data(), k.size()) == 0);
}

Node empty_node(std::uint64_t header) noexcept {
  Node n{};
  n.header = header;
  return n;
}

}  // namespace

Status WortTree::put(Key k, Value v, PutMode mode) {
  if (k.size() > kMaxKeyLength) return Status::invalid_argument;
  std::uint64_t* slot = &anchor_->root;
  std::uint32_t depth = 0;  // the depth a node in *slot must have
  for (;;) {
    const std::uint64_t w = *slot;
    if (w == 0)
      return mode == PutMode::update ? Status::not_found : insert_into_empty_slot(slot, k, v);
    if (is_leaf(w)) return put_at_leaf(slot, depth, k, v, mode);
    Node* n = blocks_.node(w);
    HeaderFields h = decode_header(n->header);
    if (h.depth != depth) h = repair_header(n, depth);
    const std::uint32_t matched = match_full_prefix(n, h, k);
    if (matched < h.prefix_len) {
      if (mode == PutMode::update) return Status::not_found;
      return split_prefix(slot, n, h, matched, k, v);
    }
    const std::uint32_t b = h.branch();
    slot = slot_for(n, k, b);
    depth = b + 1;
  }
}

// Partial keys of the node's whole prefix that `k` matches (from h.depth). The header holds
// the first kPrefixSlots; a longer prefix is read from a leaf below (hybrid compression),
// because an insert must find the exact split point.
std::uint32_t WortTree::match_full_prefix(const Node* n, const HeaderFields& h, Key k) const {
  const std::uint32_t stored = match_stored_prefix(h, k);
  if (stored < h.stored() || h.prefix_len <= kPrefixSlots) return stored;
  const Key below = leaf_key(blocks_.leaf(blocks_.leftmost_leaf(pool_.offset_of(n))));
  const std::size_t m = Partial::mismatch(k, below, h.depth + stored);
  return static_cast<std::uint32_t>(std::min<std::size_t>(m - h.depth, h.prefix_len));
}

Status WortTree::put_at_leaf(std::uint64_t* slot, std::uint32_t depth, Key k, Value v,
                             PutMode mode) {
  LeafHeader* l = blocks_.leaf(*slot);
  if (same_key(l, k)) {
    if (mode == PutMode::insert) return Status::exists;
    // Upsert/update commit: the leaf's value word, one 8-byte non-temporal store (a pool
    // whose values name blocks: the value's block was written back before, fence first).
    kit::commit_value_nt(pool_, &l->value, v);
    return Status::ok;
  }
  if (mode == PutMode::update) return Status::not_found;
  return split_leaf(slot, depth, k, v);
}

// §3.2: the new leaf is durable before the empty slot points at it.
Status WortTree::insert_into_empty_slot(std::uint64_t* slot, Key k, Value v) {
  WORT_DCHECK(*slot == 0);
  std::uint64_t leaf = 0;
  if (Status s = make_leaf(pool_, k, v, &leaf); s != Status::ok) return s;
  flush_leaf(blocks_.leaf(leaf));
  pm::publish_nt(slot, leaf);
  return Status::ok;
}

// The slot holds a leaf with another key: a new node at `depth` collapses the partial keys
// both share and branches where they differ; the slot's pointer to it is the commit.
//
//   slot -> [leaf A]      becomes      slot -> (node depth, prefix = common)
//                                                 |- [leaf A]   (A's partial key, or end)
//                                                 `- [leaf K]
Status WortTree::split_leaf(std::uint64_t* slot, std::uint32_t depth, Key k, Value v) {
  WORT_DCHECK(is_leaf(*slot));
  const std::uint64_t old_leaf = *slot;
  const Key old_key = leaf_key(blocks_.leaf(old_leaf));
  const std::size_t from = std::min({std::size_t{depth}, Partial::count(k), Partial::count(old_key)});
  const auto b = static_cast<std::uint32_t>(Partial::mismatch(k, old_key, from));
  if (b < depth) return Status::corrupt;  // the leaf does not belong under this slot

  std::uint64_t leaf = 0, node = 0;
  if (Status s = make_leaf(pool_, k, v, &leaf); s != Status::ok) return s;
  Node image = empty_node(make_header(depth, b - depth, k));
  *slot_for(&image, k, b) = leaf;
  *slot_for(&image, old_key, b) = old_leaf;
  if (Status s = make_node(pool_, image, &node); s != Status::ok) {
    pool_.allocator().free(block_of(leaf));
    return s;
  }
  flush_leaf(blocks_.leaf(leaf));
  pm::publish_nt(slot, node);
  return Status::ok;
}

// SplitCmp (Algorithm 1): `k` leaves node n's compressed path after `matched` partial keys.
// A new parent takes the common part and holds n and the new leaf; n's header drops the
// partial keys the parent now covers (depth moves down by matched + 1, prefix_len shrinks by
// as much, so depth + prefix_len is unchanged). Order: new blocks and n's header durable,
// then the old parent's slot (the commit). A crash between leaves n with a depth that
// disagrees with the depth it is reached at, which RecoverHeader repairs.
//
//   slot -> (n: depth d, prefix p0..pL-1)   becomes   slot -> (parent: depth d, p0..pm-1)
//                                                              |- (n: depth d+m+1, ...)
//                                                              `- [leaf K]
Status WortTree::split_prefix(std::uint64_t* slot, Node* n, const HeaderFields& h,
                              std::uint32_t matched, Key k, Value v) {
  const Key below = leaf_key(blocks_.leaf(blocks_.leftmost_leaf(pool_.offset_of(n))));
  const std::uint32_t b = h.depth + matched;  // the new parent's branch position
  std::uint64_t leaf = 0, parent = 0;
  if (Status s = make_leaf(pool_, k, v, &leaf); s != Status::ok) return s;
  Node image = empty_node(make_header(h.depth, matched, k));
  *slot_for(&image, k, b) = leaf;
  image.child[Partial::at(below, b)] = pool_.offset_of(n);
  if (Status s = make_node(pool_, image, &parent); s != Status::ok) {
    pool_.allocator().free(block_of(leaf));
    return s;
  }
  const std::uint64_t shortened = make_header(b + 1, h.prefix_len - matched - 1, below);
  // From here until the commit, a reader that reaches n through the old parent's slot sees
  // a header whose depth disagrees with that place (the crash state RecoverHeader knows):
  // lookups use only the branch position, unchanged; scans compare against a key below.
  pm::store(&n->header, shortened);
  flush_leaf(blocks_.leaf(leaf));
  pm::flush(&n->header, sizeof n->header);
  if (WindowHook hook = g_header_window_hook.load(std::memory_order_relaxed)) [[unlikely]]
    hook(g_header_window_ctx);
  pm::publish_nt(slot, parent);
  return Status::ok;
}

}  // namespace wort
