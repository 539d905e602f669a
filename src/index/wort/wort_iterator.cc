#include "index/wort/wort_iterator.h"

#include "index/wort/wort_tree.h"

namespace wort::wort_index {

#if WORT_FAULTS
std::atomic<bool> g_broken_reader_trusts_stale_prefix{false};
std::atomic<bool> g_broken_reader_ignores_fresh{false};
#endif

void Cursor::seek(Key from) {
  stack_.clear();
  pending_ = 0;
  std::uint64_t w = root_;
  std::uint32_t depth = 0;
  while (w != 0) {
    if (is_leaf(w)) {
      if (compare_keys(leaf_key(blocks_.leaf(w)), from) >= 0) pending_ = w;
      return;
    }
    const Node* n = blocks_.node(w);
    const HeaderFields h = decode_header(load(&n->header));  // one snapshot of all three fields
    const int c = compare_with_prefix(n, h, from, depth);
    if (c > 0) return;  // everything below is smaller: resume with the ancestors
    const std::uint32_t b = h.branch();
    if (c < 0 || Partial::count(from) == b) {
      stack_.push_back({n, 0});  // everything below is >= from
      return;
    }
    // end_child (a proper prefix of from) and children below from's partial key are smaller.
    const unsigned p = Partial::at(from, b);
    stack_.push_back({n, p + 2});
    w = load(&n->child[p]);
    depth = b + 1;
  }
}

// The stored prefix is used only when the header's depth is the depth the node is reached at.
// Otherwise the header is one a SplitCmp or merge is rewriting (or a crash left): it may
// already describe the node's place after the commit the cursor has not seen (SplitCmp: the
// prefix from a deeper depth) or still its place before (merge). Recovery detects these
// states by the same disagreement; here, as there, a key below the node decides. A header
// whose depth agrees is right for this place (its prefix came from a key below the node, and
// every key below a node agrees on all positions before its branch).
int Cursor::compare_with_prefix(const Node* n, const HeaderFields& h, Key from,
                                std::uint32_t depth) const {
  const std::uint32_t b = h.branch();
  const std::size_t count = Partial::count(from);
  if ((h.depth == depth || WORT_FAULT(g_broken_reader_trusts_stale_prefix)) &&
      h.prefix_len <= kPrefixSlots) {
    for (std::uint32_t i = 0; i < h.prefix_len; ++i) {
      if (depth + i == count) return -1;  // from is a prefix of every key below
      const unsigned f = Partial::at(from, depth + i), p = h.prefix_at(i);
      if (f != p) return f < p ? -1 : 1;
    }
    return 0;
  }
  // Long prefix or a header awaiting repair or being rewritten: compare against a key below.
  const std::uint64_t leftmost = blocks_.leftmost_leaf(blocks_.word_of(n));
  if (leftmost == 0) return 0;  // no key below (never in a reachable node): descend
  const Key below = leaf_key(blocks_.leaf(leftmost));
  const std::size_t m = Partial::mismatch(from, below, depth);
  if (m >= b) return 0;
  if (m == count) return -1;
  return Partial::at(from, m) < Partial::at(below, m) ? -1 : 1;
}

const LeafHeader* Cursor::next() {
  if (pending_ != 0) {
    const std::uint64_t w = pending_;
    pending_ = 0;
    return blocks_.leaf(w);
  }
  while (!stack_.empty()) {
    Frame& f = stack_.back();
    if (f.next >= kOrderedSlots) {
      stack_.pop_back();
      continue;
    }
    const std::uint64_t w = load(ordered_slot(f.node, f.next++));
    if (w == 0) continue;
    if (is_leaf(w)) return blocks_.leaf(w);
    stack_.push_back({blocks_.node(w), 0});
  }
  return nullptr;
}

}  // namespace wort::wort_index

namespace wort {

// Lock-free: a NestablePin for the whole walk (the visitor may call back into the tree),
// every word a writer may change read with one atomic load.
std::size_t WortTree::scan(Key from, std::size_t max, Visitor v) const {
  kit::EpochReclaimer::NestablePin pin(epochs_);
  wort_index::Cursor c(blocks_, wort_index::load(&anchor_->root));
  c.seek(from);
  std::size_t n = 0;
  while (n < max) {
    const wort_index::LeafHeader* l = c.next();
    if (l == nullptr) break;
    ++n;
    if (wort_index::mark_of(l) != 0) [[unlikely]] help_fresh(l);  // durable before returned
    if (!v(wort_index::leaf_key(l), wort_index::load(&l->value))) break;
  }
  return n;
}

std::size_t WortTree::range(Key lo, Key hi, Visitor v) const {
  kit::EpochReclaimer::NestablePin pin(epochs_);
  wort_index::Cursor c(blocks_, wort_index::load(&anchor_->root));
  c.seek(lo);
  std::size_t n = 0;
  while (const wort_index::LeafHeader* l = c.next()) {
    const Key k = wort_index::leaf_key(l);
    if (compare_keys(k, hi) >= 0) break;
    ++n;
    if (wort_index::mark_of(l) != 0) [[unlikely]] help_fresh(l);  // durable before returned
    if (!v(k, wort_index::load(&l->value))) break;
  }
  return n;
}

}  // namespace wort
