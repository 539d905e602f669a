// wB+Tree ordered scans: a depth-first walk in key order through the slot arrays (no
// sibling pointers: the tree is wholly in the pool and at most a few levels deep).
#include <array>

#include "index/wbtree/wbtree_tree.h"

namespace wort {

using namespace wbtree;

// Visits the keys of the subtree at `off` that are >= *from (all if from is null) and
// < *hi (no bound if null), in order. Returns false once the scan must stop.
bool WbTree::scan_node(std::uint64_t off, const Probe* from, const Probe* hi, std::size_t& left,
                       std::size_t& n, Visitor& vis) const {
  const Node* nd = node(off);
  const View v = sorted_view(base(), nd);
  if (nd->level == 0) {
    for (unsigned j = from ? lower_bound(base(), nd, v, *from) : 0; j < v.n; ++j) {
      const Entry& e = nd->entries()[v.pos[j]];
      if (hi && compare(base(), e, *hi) >= 0) return false;
      std::array<std::byte, 8> buf;
      ++n;
      if (!vis(entry_key(base(), e, buf), e.value) || --left == 0) return false;
    }
    return true;
  }
  const unsigned start = from ? route(base(), nd, v, *from) : 0;
  for (unsigned j = start; j < v.n; ++j) {
    const Entry& e = nd->entries()[v.pos[j]];
    if (j > start && hi && compare(base(), e, *hi) >= 0) return false;
    if (!scan_node(e.value, j == start ? from : nullptr, hi, left, n, vis)) return false;
  }
  return true;
}

std::size_t WbTree::scan(Key from, std::size_t max, Visitor v) const {
  if (max == 0 || anchor_->root == 0) return 0;
  const Probe p(from);
  std::size_t n = 0, left = max;
  scan_node(anchor_->root, &p, nullptr, left, n, v);
  return n;
}

std::size_t WbTree::range(Key lo, Key hi, Visitor v) const {
  if (anchor_->root == 0 || compare_keys(lo, hi) >= 0) return 0;
  const Probe p(lo), h(hi);
  std::size_t n = 0, left = SIZE_MAX;
  scan_node(anchor_->root, &p, &h, left, n, v);
  return n;
}

}  // namespace wort
