#include "baseline/art/art_tree.h"

#include <cassert>

#include "baseline/art/iterator.h"
#include "baseline/art/leaf.h"
#include "baseline/art/nodes.h"
#include "baseline/art/prefix.h"
#include "index/registry.h"

namespace wort::art {
namespace {

// Puts leaf `l` under node `n`, whose path (prefix included) ends at key byte `depth`:
// as the terminal if the key ends there, else under its next byte.
void place(Node* n, Leaf* l, std::size_t depth) noexcept {
  if (l->key_len == depth) {
    n->terminal = l;
  } else {
    add_child(n, byte_at(l->key(), depth), Ref::of(l));
  }
}

void destroy(Arena& arena, Ref r) noexcept {
  if (r.empty()) return;
  if (r.is_leaf()) {
    Leaf::destroy(arena, r.leaf());
    return;
  }
  Node* n = r.node();
  if (n->terminal != nullptr) Leaf::destroy(arena, n->terminal);
  for (auto c = next_child(n, 0); c; c = next_child(n, c->byte + 1u)) destroy(arena, c->ref);
  free_node(arena, n);
}

}  // namespace

Result<std::unique_ptr<VolatileArt>> VolatileArt::create(Pool& pool, const IndexOptions&) {
  if (pool.kind() != kKind)
    return Error{Status::wrong_kind, "art: pool kind is '" + std::string(pool.kind()) + "'"};
  return std::make_unique<VolatileArt>();
}

Result<std::unique_ptr<VolatileArt>> VolatileArt::open(Pool&) {
  return Error{Status::invalid_argument, "art is a volatile index: nothing to reopen"};
}

// Walks the tree so that leaves too big for the arena's classes (operator new) are freed;
// the arena then frees its slabs.
VolatileArt::~VolatileArt() { destroy(arena_, root_); }

// ---- insert ------------------------------------------------------------------------------

Status VolatileArt::insert(Key k, Value v) { return put(k, v, PutMode::insert); }
Status VolatileArt::upsert(Key k, Value v) { return put(k, v, PutMode::upsert); }

Status VolatileArt::put(Key k, Value v, PutMode mode) {
  if (k.size() > kMaxKeySize) return Status::invalid_argument;
  if (root_.empty()) {
    root_ = Ref::of(Leaf::make(arena_, k, v));
    ++count_;
    return Status::ok;
  }
  Ref* slot = &root_;
  std::size_t depth = 0;  // key bytes consumed above *slot
  for (;;) {
    if (slot->is_leaf()) return put_at_leaf(slot, depth, k, v, mode);
    Node* n = slot->node();
    if (slot->prefix_tag() != 0) {  // the tag says whether there is a prefix to compare
      const std::size_t matched = matching_prefix(n, k, depth);
      if (matched < n->prefix_len) {
        split_prefix(slot, depth, matched, k, v);
        return Status::ok;
      }
      depth += n->prefix_len;
    }
    if (depth == k.size()) return put_terminal(n, k, v, mode);
    const std::uint8_t b = byte_at(k, depth);
    Ref* child = find_child(*slot, b);
    if (child == nullptr) {
      LeafPtr fresh(Leaf::make(arena_, k, v), LeafDeleter{&arena_});
      add_child_growing(slot, b, fresh.get());
      fresh.release();
      ++count_;
      return Status::ok;
    }
    slot = child;
    ++depth;
  }
}

// *slot holds a leaf whose key agrees with k on the first `depth` bytes.
Status VolatileArt::put_at_leaf(Ref* slot, std::size_t depth, Key k, Value v, PutMode mode) {
  Leaf* old = slot->leaf();
  if (old->matches(k)) {
    if (mode == PutMode::insert) return Status::exists;
    old->value = v;
    return Status::ok;
  }
  // Lazy expansion ends here: the two keys get a Node4 at their first difference.
  const std::size_t common = common_prefix(old->key(), k, depth);
  LeafPtr fresh(Leaf::make(arena_, k, v), LeafDeleter{&arena_});
  Node* n = make_node4(arena_);
  set_prefix(n, k.data() + depth, common);
  place(n, old, depth + common);
  place(n, fresh.release(), depth + common);
  *slot = Ref::of(n);
  ++count_;
  return Status::ok;
}

Status VolatileArt::put_terminal(Node* n, Key k, Value v, PutMode mode) {
  if (n->terminal != nullptr) {
    if (mode == PutMode::insert) return Status::exists;
    n->terminal->value = v;
    return Status::ok;
  }
  n->terminal = Leaf::make(arena_, k, v);
  ++count_;
  return Status::ok;
}

// k diverges from the prefix of node *slot after `matched` bytes: a new Node4 takes the
// common part, the old node keeps what follows the divergent byte.
void VolatileArt::split_prefix(Ref* slot, std::size_t depth, std::size_t matched, Key k, Value v) {
  Node* old = slot->node();
  const std::byte* full = full_prefix(old, depth);  // read before the old prefix changes
  LeafPtr fresh(Leaf::make(arena_, k, v), LeafDeleter{&arena_});
  Node* n = make_node4(arena_);
  set_prefix(n, full, matched);
  const std::uint8_t old_byte = static_cast<std::uint8_t>(full[matched]);
  set_prefix(old, full + matched + 1, old->prefix_len - matched - 1);
  add_child(n, old_byte, Ref::of(old));
  place(n, fresh.release(), depth + matched);
  *slot = Ref::of(n);
  ++count_;
}

void VolatileArt::add_child_growing(Ref* slot, std::uint8_t byte, Leaf* child) {
  Node* n = slot->node();
  if (is_full(n)) {
    n = grow(arena_, n);  // may throw: the tree is unchanged then
    *slot = Ref::of(n);
  }
  add_child(n, byte, Ref::of(child));
}

// ---- lookup and update -------------------------------------------------------------------

// Optimistic: the prefix bytes are skipped, not compared (only their count is used); the
// whole key is compared once at the leaf, which decides. A key that left the tree's path
// inside a skipped prefix reaches some other leaf (or no child) and is rejected there.
// Inlined into find_value() and update(): a lookup is then one call, not a call into a
// call (measured: VolatileArt::lookup calling find_leaf ran 10-20% slower than one function
// doing both, at 1M keys).
[[gnu::always_inline]] inline Leaf* VolatileArt::find_leaf(Key k) const noexcept {
  Ref r = root_;
  if (r.empty()) return nullptr;
  const std::size_t len = k.size();
  std::size_t depth = 0;
  while (!r.is_leaf()) {
    const Node* n = r.node();
    // The prefix's length from the tag: the header is read only for a prefix of 7 or more.
    const unsigned plen = r.prefix_tag();
    depth += plen != Ref::kLongPrefix ? plen : n->prefix_len;
    if (depth >= len) {
      Leaf* t = n->terminal;
      return depth == len && t != nullptr && t->matches(k) ? t : nullptr;
    }
    const Ref* child = find_child(r, byte_at(k, depth));
    if (child == nullptr) return nullptr;
    r = *child;
    ++depth;
  }
  return r.leaf()->matches(k) ? r.leaf() : nullptr;
}

const Value* VolatileArt::find_value(Key k) const noexcept {
  const Leaf* l = find_leaf(k);
  return l == nullptr ? nullptr : &l->value;
}

Status VolatileArt::update(Key k, Value v) {
  Leaf* l = find_leaf(k);
  if (l == nullptr) return Status::not_found;
  l->value = v;
  return Status::ok;
}

// ---- remove ------------------------------------------------------------------------------

Status VolatileArt::remove(Key k) {
  if (root_.empty()) return Status::not_found;
  if (root_.is_leaf()) {
    if (!root_.leaf()->matches(k)) return Status::not_found;
    Leaf::destroy(arena_, root_.leaf());
    root_ = Ref{};
    --count_;
    return Status::ok;
  }
  Ref* slot = &root_;
  std::size_t depth = 0;
  for (;;) {
    Node* n = slot->node();
    if (!prefix_may_match(n, k, depth)) return Status::not_found;
    depth += n->prefix_len;
    if (depth == k.size()) return remove_terminal(slot, k);
    const std::uint8_t b = byte_at(k, depth);
    Ref* child = find_child(n, b);
    if (child == nullptr) return Status::not_found;
    if (child->is_leaf()) return remove_leaf_child(slot, b, k);
    slot = child;
    ++depth;
  }
}

Status VolatileArt::remove_terminal(Ref* slot, Key k) {
  Node* n = slot->node();
  if (n->terminal == nullptr || !n->terminal->matches(k)) return Status::not_found;
  Leaf::destroy(arena_, n->terminal);
  n->terminal = nullptr;
  --count_;
  after_remove(slot);
  return Status::ok;
}

Status VolatileArt::remove_leaf_child(Ref* slot, std::uint8_t byte, Key k) {
  Node* n = slot->node();
  Leaf* l = find_child(n, byte)->leaf();
  if (!l->matches(k)) return Status::not_found;
  remove_child(n, byte);
  Leaf::destroy(arena_, l);
  --count_;
  after_remove(slot);
  return Status::ok;
}

// Restores the node invariants of *slot after one of its entries went away.
void VolatileArt::after_remove(Ref* slot) {
  Node* n = slot->node();
  if (n->entries() == 1) {
    collapse(slot);
  } else if (should_shrink(n)) {
    *slot = Ref::of(shrink(arena_, n));
  }
}

// *slot is a node with a single entry: the entry takes the node's place. A leaf hangs
// directly (lazy expansion); an inner child absorbs the node's prefix and branch byte.
void VolatileArt::collapse(Ref* slot) {
  Node* n = slot->node();
  assert(n->entries() == 1);
  if (n->terminal != nullptr) {
    *slot = Ref::of(n->terminal);
  } else {
    const Child only = *next_child(n, 0);
    if (only.ref.is_leaf()) {
      *slot = only.ref;
    } else {
      merge_prefix(n, only.byte, only.ref.node());
      *slot = Ref::of(only.ref.node());  // its prefix grew: a fresh tag (ref.h)
    }
  }
  free_node(arena_, n);
}

// ---- scan and range ----------------------------------------------------------------------

std::size_t VolatileArt::scan(Key from, std::size_t max, Visitor vis) const {
  Iterator it(root_);
  std::size_t n = 0;
  for (it.seek(from); it.valid() && n < max; it.next()) {
    ++n;
    if (!vis(it.key(), it.value())) break;
  }
  return n;
}

std::size_t VolatileArt::range(Key lo, Key hi, Visitor vis) const {
  Iterator it(root_);
  std::size_t n = 0;
  for (it.seek(lo); it.valid() && compare_keys(it.key(), hi) < 0; it.next()) {
    ++n;
    if (!vis(it.key(), it.value())) break;
  }
  return n;
}

WORT_REGISTER_INDEX(VolatileArt);

}  // namespace wort::art
