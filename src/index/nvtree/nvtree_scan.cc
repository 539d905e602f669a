// NV-Tree ordered scans: the DRAM inner nodes find the first leaf, then the leaf list is
// followed; each leaf's live entries are replayed and sorted on the way (unsorted leaves:
// the range-query cost the WORT paper's §5.3 points at).
#include <array>

#include "index/nvtree/nvtree_leaf.h"
#include "index/nvtree/nvtree_tree.h"

namespace wort {

using namespace nvtree;

bool NvTree::scan_from(const Probe* from, const Probe* hi, std::size_t max, std::size_t& n,
                       Visitor& vis) const {
  if (anchor_->head == 0 || max == 0) return true;
  std::uint64_t off = from ? inner_.leaf_at(inner_.find(*from)) : anchor_->head;
  std::vector<Entry> live;
  for (; off != 0; off = leaf(off)->next) {
    live_sorted(base(), leaf(off), live);
    for (const Entry& e : live) {
      if (from && compare(base(), e, *from) < 0) continue;
      if (hi && compare(base(), e, *hi) >= 0) return false;
      std::array<std::byte, 8> buf;
      ++n;
      if (!vis(entry_key(base(), e, buf), e.value) || n == max) return false;
    }
  }
  return true;
}

std::size_t NvTree::scan(Key from, std::size_t max, Visitor v) const {
  const Probe p(from);
  std::size_t n = 0;
  scan_from(&p, nullptr, max, n, v);
  return n;
}

std::size_t NvTree::range(Key lo, Key hi, Visitor v) const {
  if (compare_keys(lo, hi) >= 0) return 0;
  const Probe p(lo), h(hi);
  std::size_t n = 0;
  scan_from(&p, &h, SIZE_MAX, n, v);
  return n;
}

}  // namespace wort
