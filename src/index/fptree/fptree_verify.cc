// FPTree verify(), dump() and stats().
//
// verify() runs the checked walk first (fptree_walk.h: every leaf and live key block a block
// of this pool, no cycle, no bit beyond the capacity, no empty leaf), then checks:
//   - every split micro-log is clear (one is only ever set inside a split);
//   - every live slot's fingerprint is the hash of its key;
//   - no key twice in a leaf; the leaf chain is sorted (each leaf's keys above the previous
//     leaf's);
//   - the DRAM inner nodes are well formed (InnerTree::for_each_leaf) and list exactly the
//     leaves of the chain, in order, each key inside the bounds its separators give it (so
//     the inner nodes route every key to its leaf);
//   - with leaf groups: every leaf of every listed group is in the chain or in the DRAM
//     free vector, never both, and each group's DRAM count of leaves in use is its count
//     in the chain (LeafGroups::check; the walk already put every chain leaf in a group).
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "index/fptree/fptree_hash.h"
#include "index/fptree/fptree_tree.h"
#include "index/fptree/fptree_walk.h"
#include "pm/allocator.h"

namespace wort {

using namespace fptree_index;

namespace {

std::string printable(Key k) {
  std::string s;
  for (std::byte c : k) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && u != '\\') {
      s += static_cast<char>(u);
    } else {
      static const char* hex = "0123456789abcdef";
      s += "\\x";
      s += hex[u >> 4];
      s += hex[u & 15];
    }
  }
  return s;
}

Error corrupt(const std::string& why) { return Error{Status::corrupt, "fptree verify: " + why}; }

}  // namespace

Result<void> FPTree::verify() const {
  std::vector<std::uint64_t> chain;
  if (auto r = walk_leaves(pool_, anchor_, geo_, [](std::uint64_t) {},
                           [&](std::uint64_t off, std::uint64_t) { chain.push_back(off); });
      !r)
    return r;
  for (std::uint32_t i = 0; i < anchor_->logs(); ++i)
    if (anchor_->split_log(i)->cur != 0 || anchor_->split_log(i)->nu != 0)
      return corrupt("split micro-log " + std::to_string(i) + " not clear");
  std::string prev_max;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    const LeafRef l = leaf(chain[i]);
    const std::vector<int> order = sorted_slots(l);
    for (std::size_t j = 0; j < order.size(); ++j) {
      const Key k = l.key(order[j]);
      if (l.fingerprints()[order[j]] != fp_of(k))
        return corrupt("leaf " + std::to_string(chain[i]) + " slot " + std::to_string(order[j]) +
                       ": fingerprint does not match key \"" + printable(k) + "\"");
      if (j > 0 && compare_keys(l.key(order[j - 1]), k) == 0)
        return corrupt("key \"" + printable(k) + "\" twice in leaf " + std::to_string(chain[i]));
    }
    const Key lo = l.key(order.front());
    if (i > 0 && compare_keys(as_key(prev_max), lo) >= 0)
      return corrupt("leaf chain out of order at leaf " + std::to_string(chain[i]));
    prev_max = std::string(as_string(l.key(order.back())));
  }
  std::size_t at = 0;
  std::string bad;
  auto r = inner_.for_each_leaf([&](std::uint64_t off, const std::string* lo, const std::string* hi) {
    if (!bad.empty()) return;
    if (at >= chain.size() || chain[at] != off) {
      bad = "inner nodes list leaf " + std::to_string(off) + " at position " + std::to_string(at) +
            ", the chain has " + (at < chain.size() ? std::to_string(chain[at]) : "none");
      return;
    }
    ++at;
    const LeafRef l = leaf(off);
    for (std::uint64_t m = l.bitmap(); m != 0; m &= m - 1) {
      const Key k = l.key(std::countr_zero(m));
      if ((lo && compare_keys(k, as_key(*lo)) < 0) || (hi && compare_keys(k, as_key(*hi)) >= 0)) {
        bad = "key \"" + printable(k) + "\" in leaf " + std::to_string(off) +
              " is outside the range its inner node gives the leaf";
        return;
      }
    }
  });
  if (!r) return r;
  if (!bad.empty()) return corrupt(bad);
  if (at != chain.size())
    return corrupt("inner nodes reach " + std::to_string(at) + " of " +
                   std::to_string(chain.size()) + " leaves");
  if (groups_.enabled())
    if (std::string why = groups_.check(chain); !why.empty()) return corrupt(why);
  return {};
}

void FPTree::dump(std::ostream& os) const {
  os << "fptree: leaf capacity " << geo_.capacity << " (" << geo_.bytes << " B), inner fanout "
     << inner_.fanout() << ", anchor @" << pool_.offset_of(anchor_) << ", head @"
     << anchor_->head << ", " << anchor_->logs() << " split logs";
  for (std::uint32_t i = 0; i < anchor_->logs(); ++i)
    if (const SplitLog* l = anchor_->split_log(i); l->cur != 0 || l->nu != 0)
      os << ", log " << i << " {" << l->cur << ", " << l->nu << "}";
  if (groups_.enabled())
    os << ", " << groups_.group_count() << " leaf groups of " << groups_.geometry().leaves
       << " (" << groups_.free_count() << " leaves free) @" << anchor_->groups;
  os << "\n";
  std::vector<std::uint64_t> chain;
  if (auto r = walk_leaves(pool_, anchor_, geo_, [](std::uint64_t) {},
                           [&](std::uint64_t off, std::uint64_t) { chain.push_back(off); });
      !r) {
    os << "  (not drawn: " << r.error().message << ")\n";
    return;
  }
  os << "  DRAM inner nodes: " << inner_.node_count() << " in " << inner_.height()
     << " levels, " << inner_.dram_bytes() << " bytes\n";
  for (std::uint64_t off : chain) {
    const LeafRef l = leaf(off);
    os << "  leaf @" << off << " " << l.count() << "/" << geo_.capacity << " next @" << l.next()
       << ":";
    for (int s : sorted_slots(l)) {
      os << " [" << s << (l.is_inline(s) ? "" : "*") << "] \"" << printable(l.key(s))
         << "\"=" << l.slot(s)->value;
    }
    os << "\n";
  }
}

IndexStats FPTree::stats() const {
  IndexStats s;
  const pm::Allocator& a = pool_.allocator();
  std::uint64_t leaves = 0, key_blocks = 0;
  s.pm_bytes = a.block_size(pool_.offset_of(anchor_));
  // On a damaged tree the figures cover what the checked walk reached before the bad word.
  (void)walk_leaves(
      pool_, anchor_, geo_,
      [&](std::uint64_t b) { s.pm_bytes += a.block_size(b); },
      [&](std::uint64_t, std::uint64_t bits) {
        ++leaves;
        const auto n = static_cast<std::uint64_t>(std::popcount(bits));
        s.keys += n;
      });
  (void)walk_leaves(pool_, anchor_, geo_, [](std::uint64_t) {},
                    [&](std::uint64_t off, std::uint64_t bits) {
                      key_blocks += static_cast<std::uint64_t>(
                          std::popcount(bits & ~*leaf(off).inline_word()));
                    });
  // Every leaf sits under the same number of DRAM inner levels.
  s.avg_leaf_depth = inner_.height();
  s.max_leaf_depth = inner_.height();
  s.dram_bytes = inner_.dram_bytes();
  s.nodes["leaf"] = leaves;
  s.nodes["inner"] = inner_.node_count();
  s.nodes["keyblock"] = key_blocks;
  if (groups_.enabled()) s.nodes["leafgroup"] = groups_.group_count();
  return s;
}

}  // namespace wort
