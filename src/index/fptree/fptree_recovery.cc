// FPTree: rebuilding the DRAM inner nodes from the persistent leaf list (Alg. 9, line 8).
// Runs in open() after the checked walk (every leaf and live key block is a checked block)
// and after the split log's replay (so every leaf's bitmap is its own). Like a bulk load:
// one pass over the list collects each leaf's smallest key, then InnerTree::build packs
// them into full nodes level by level. The paper takes each leaf's largest key instead;
// either bounds the leaf. The lock words are tagged with the pool generation (gen_lock), so
// none reads as held after the open: there is nothing to reset.
#include <utility>
#include <vector>

#include "index/fptree/fptree_tree.h"

namespace wort {

using namespace fptree_index;

std::string FPTree::smallest_key(LeafRef l) const {
  std::uint64_t m = l.bitmap();
  Key best = l.key(std::countr_zero(m));
  for (m &= m - 1; m != 0; m &= m - 1) {
    const Key k = l.key(std::countr_zero(m));
    if (compare_keys(k, best) < 0) best = k;
  }
  return std::string(as_string(best));
}

Result<void> FPTree::rebuild_inner(std::vector<std::uint64_t>* chain) {
  std::vector<std::pair<std::uint64_t, std::string>> leaves;
  for (std::uint64_t off = anchor_->head; off != 0; off = leaf(off).next()) {
    const LeafRef l = leaf(off);
    chain->push_back(off);
    if (l.bitmap() == 0)  // the checked walk rejects these; a second guard costs nothing
      return Error{Status::corrupt, "fptree: empty leaf in the list"};
    leaves.emplace_back(off, leaves.empty() ? std::string() : smallest_key(l));
  }
  inner_.build(std::move(leaves));
  return {};
}

}  // namespace wort
