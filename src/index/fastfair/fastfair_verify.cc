// FAST&FAIR: the checked walk (recovery trace, verify, stats, dump) and verify()'s
// semantic checks: order inside nodes (every live record, also an uncut split's copies)
// and along every sibling chain, every child reached
// from its parent in chain order, every node's keys inside its parent's bounds. The
// transient states a crash may leave (one dead slot per node, an uncut split, a sibling
// missing from its parent) are accepted: readers handle them and writers repair them.
#include <cctype>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "index/kit/checked_walk.h"
#include "index/fastfair/fastfair_tree.h"
#include "pm/allocator.h"

namespace wort {

using namespace fastfair;

//! The checked walk's state across levels: the walk, the visitor, the key blocks entered
//! (dead slots and uncut splits share them) and the level of the chain being walked (-1
//! before the root's, whose level sets the tree's height).
struct FastFairTree::LevelWalk {
  LevelWalk(const FastFairTree& tree, BlockVisitorFn v)
      : t(tree), w(tree.pool_, kKind), visit(v) {}
  const FastFairTree& t;
  kit::CheckedWalk w;
  BlockVisitorFn visit;
  std::unordered_set<std::uint64_t> key_blocks;
  int level = -1;

  //! Node `off` of the chain that starts at `first`: its header, key blocks and child
  //! words (appended to `below`); false once the walk has failed.
  bool enter_node(std::uint64_t off, std::uint64_t first, std::vector<std::uint64_t>& below) {
    if (!w.enter(off, t.node_size_, 64, "node")) return false;
    const Node* n = t.node(off);
    if (!header_ok(off, n)) return false;
    if (level < 0) level = n->h.level;
    visit(off);
    const NodeRef nr = t.ref(off);
    const unsigned end = nr.end();
    for (unsigned i = 0; i < end; ++i) {
      if (!enter_key_block(n->rec[i].key)) return false;
      // A dead slot's pointer is no child: after a merge it names the freed node.
      if (level > 0 && !nr.dead(i, end)) below.push_back(n->rec[i].ptr);
    }
    // A crash's dead slot under an even counter: leaf-path writers must look for it.
    if (level == 0 && (n->h.switch_counter & 1u) == 0 && nr.find_dead(end) >= 0)
      t.even_dead_.store(true, std::memory_order_relaxed);
    if (level > 0) {
      if (end == 0 && n->h.leftmost == 0)  // route() would have no child to return
        w.fail("inner node at " + kit::CheckedWalk::hex(off) + " has no child");
      if (n->h.leftmost != 0) below.push_back(n->h.leftmost);
      else if (off == first)
        w.fail("first node of level " + std::to_string(level) + " has no leftmost child");
    }
    return !w.failed();
  }

  //! Tag, slot count and level (below the root's: the chain's), and the lock word.
  bool header_ok(std::uint64_t off, const Node* n) {
    if (n->h.tag != kNodeTag) w.fail("node at " + kit::CheckedWalk::hex(off) + " has tag " +
                                     std::to_string(n->h.tag));
    else if (n->h.slots != t.slots_)
      w.fail("node at " + kit::CheckedWalk::hex(off) + " has " + std::to_string(n->h.slots) +
             " slots, the anchor says " + std::to_string(t.slots_));
    else if (level < 0 ? n->h.level > kMaxLevels : n->h.level != static_cast<unsigned>(level))
      w.fail("node at " + kit::CheckedWalk::hex(off) + " has level " +
             std::to_string(n->h.level) + " on level " + std::to_string(level));
    w.lock_word(__atomic_load_n(&n->h.spare, __ATOMIC_RELAXED), off, "lock word");
    return !w.failed();
  }

  //! The key block an indirect key word names, entered and visited once.
  bool enter_key_block(std::uint64_t k) {
    if (!is_indirect(k) || !key_blocks.insert(k & kOffsetMask).second) return true;
    const std::uint64_t kb = k & kOffsetMask;
    if (!w.enter(kb, sizeof(KeyBlock), 16, "key block")) return false;
    const auto* b = reinterpret_cast<const KeyBlock*>(t.base_ + kb);
    if (!w.fits(kb, kb + sizeof(KeyBlock), b->len, "key")) return false;
    visit(kb);
    return true;
  }
};

Result<void> FastFairTree::walk(BlockVisitorFn visit,
                                std::vector<std::vector<std::uint64_t>>* levels) const {
  LevelWalk lw(*this, visit);
  // CheckedWalk reports its recorded failure through run(); with no root it runs nothing.
  auto result = [&] { return lw.w.run(0, [](std::uint64_t, std::uint32_t) {}); };
  visit(off_of(anchor_));
  std::vector<std::uint64_t> children;  // child words of the level above
  std::uint64_t first = anchor_->root;
  if (first == 0) return Error{Status::corrupt, "fastfair: the anchor names no root"};
  while (first != 0) {
    std::unordered_set<std::uint64_t> here;
    std::vector<std::uint64_t> chain, below;
    for (std::uint64_t off = first; off != 0; off = node(off)->h.sibling) {
      if (!lw.enter_node(off, first, below)) return result();
      here.insert(off);
      chain.push_back(off);
    }
    const int level = lw.level;
    for (std::uint64_t c : children)
      if (!here.count(c))
        return Error{Status::corrupt, "fastfair: child " + kit::CheckedWalk::hex(c) +
                                          " is not a node of level " + std::to_string(level)};
    children = std::move(below);
    if (levels) levels->push_back(chain);
    first = level > 0 ? node(first)->h.leftmost : 0;
    lw.level = level - 1;
  }
  if (lw.level != -1)
    return Error{Status::corrupt, "fastfair: the tree ends above level 0"};
  return result();
}

std::vector<fastfair::Record> FastFairTree::effective(NodeRef nr, unsigned* dead) const {
  std::vector<Record> out;
  const unsigned end = nr.end();
  std::uint64_t limit = kEmpty;
  if (nr.n->h.sibling != 0) limit = ref(nr.n->h.sibling).first_key();
  for (unsigned i = 0; i < end; ++i) {
    if (nr.dead(i, end)) {
      if (dead) ++*dead;
      continue;
    }
    const std::uint64_t k = nr.rec()[i].key;
    if (limit != kEmpty && kr_.compare_words(k, limit) >= 0) break;
    out.push_back(nr.rec()[i]);
  }
  return out;
}

// Every live record of the node in strictly increasing order, also those past the sibling's
// first key that effective() leaves out (an uncut split's or borrow's copies, which are in
// order): a key damaged so that it sorts past the sibling would otherwise hide the keys
// after it from readers while the order checks, which see effective() only, pass.
bool FastFairTree::in_order(NodeRef nr) const {
  const unsigned end = nr.end();
  std::uint64_t prev = kEmpty;
  for (unsigned i = 0; i < end; ++i) {
    if (nr.dead(i, end)) continue;
    const std::uint64_t k = nr.rec()[i].key;
    if (prev != kEmpty && kr_.compare_words(prev, k) >= 0) return false;
    prev = k;
  }
  return true;
}

Result<void> FastFairTree::visit_blocks(BlockVisitorFn v) const {
  if (auto r = walk(v, nullptr); !r) return r;
  epochs_.for_each_retired(v);  // unlinked, not yet freed: still the tree's (epoch.h)
  return {};
}

//! verify()'s checks of the levels walk() found, root level first. Each check returns false
//! with the reason in `why`.
struct FastFairTree::Verifier {
  struct Bound {
    std::uint64_t lo = kEmpty, hi = kEmpty;  // kEmpty: unbounded
  };
  using Bounds = std::unordered_map<std::uint64_t, Bound>;             // listed child -> range
  using Listed = std::vector<std::pair<std::uint64_t, std::uint64_t>>;  // (child, separator)

  const FastFairTree& t;
  std::string why;

  bool bad(std::string w) {
    why = std::move(w);
    return false;
  }

  //! One level's chain: order along it, each node's keys inside the range of the listed
  //! child the chain is in (`bounds`, from the level above; none for the root level); the
  //! children the level lists, with their separators, into `listed`.
  bool chain(const std::vector<std::uint64_t>& chain, bool root_level, const Bounds& bounds,
             Listed& listed) {
    std::uint64_t prev = kEmpty;
    Bound cur;  // the range of the listed child the chain is in
    for (std::uint64_t off : chain) {
      if (!root_level) {
        auto it = bounds.find(off);
        if (it != bounds.end()) cur = it->second;
        else if (off == chain.front()) return bad("first node " + hex(off) + " has no parent");
      }
      if (!node(off, off == chain.front(), cur, prev, listed)) return false;
    }
    return true;
  }

  //! One node: at most one dead slot, its records in order, a leftmost child only first on
  //! its level, its keys above `prev` (the chain's last key) and inside `cur`; a leaf not
  //! locked or obsolete; an inner node's children appended to `listed`.
  bool node(std::uint64_t off, bool first, const Bound& cur, std::uint64_t& prev,
            Listed& listed) {
    const NodeRef nr = t.ref(off);
    unsigned dead = 0;
    const std::vector<Record> recs = t.effective(nr, &dead);
    if (dead > 1) return bad("node " + hex(off) + " has " + std::to_string(dead) + " dead slots");
    if (!t.in_order(nr)) return bad("keys out of order inside node " + hex(off));
    if (!first && nr.n->h.leftmost != 0)
      return bad("node " + hex(off) + " is not first on its level but has a leftmost child");
    for (const Record& r : recs) {
      if (prev != kEmpty && t.kr_.compare_words(prev, r.key) >= 0)
        return bad("keys out of order at node " + hex(off));
      if (cur.lo != kEmpty && t.kr_.compare_words(r.key, cur.lo) < 0)
        return bad("node " + hex(off) + " holds a key below its parent's separator");
      if (cur.hi != kEmpty && t.kr_.compare_words(r.key, cur.hi) >= 0)
        return bad("node " + hex(off) + " holds a key at or above the next separator");
      prev = r.key;
    }
    if (nr.leaf()) {
      // Quiescent: no writer holds a leaf, and no leaf in the tree was unlinked.
      const std::uint64_t lock = nr.n->h.spare;
      if (kit::gen_lock_held(lock, t.gen_)) return bad("leaf " + hex(off) + " is left locked");
      if (kit::gen_lock_obsolete(lock, t.gen_))
        return bad("leaf " + hex(off) + " is in the tree but marked obsolete");
      return true;
    }
    if (nr.n->h.leftmost != 0) listed.push_back({nr.n->h.leftmost, kEmpty});
    for (const Record& r : recs) listed.push_back({r.ptr, r.key});
    return true;
  }

  //! The children level `li` lists appear in the next chain in order, starting with its
  //! first; their ranges (separator to the next separator) into `next`.
  bool children(const Listed& listed, const std::vector<std::vector<std::uint64_t>>& levels,
                std::size_t li, Bounds& next) {
    std::unordered_map<std::uint64_t, std::size_t> pos;
    for (std::size_t i = 0; i < levels[li + 1].size(); ++i) pos[levels[li + 1][i]] = i;
    if (listed.empty() || listed.front().first != levels[li + 1].front())
      return bad("level " + std::to_string(levels.size() - 2 - li) +
                 " does not start with its parent level's first child");
    for (std::size_t i = 0; i < listed.size(); ++i) {
      if (i > 0 && pos.at(listed[i].first) <= pos.at(listed[i - 1].first))
        return bad("children of level " + std::to_string(levels.size() - 1 - li) +
                   " out of chain order at " + hex(listed[i].first));
      Bound b;
      b.lo = listed[i].second;
      b.hi = i + 1 < listed.size() ? listed[i + 1].second : kEmpty;
      next[listed[i].first] = b;
    }
    return true;
  }

  static std::string hex(std::uint64_t v) { return kit::CheckedWalk::hex(v); }
};

Result<void> FastFairTree::verify() const {
  std::vector<std::vector<std::uint64_t>> levels;
  if (auto r = walk([](std::uint64_t) {}, &levels); !r) return r;
  Verifier ver{*this, {}};
  auto failed = [&] { return Error{Status::corrupt, "fastfair: " + ver.why}; };
  if (node(anchor_->root)->h.sibling != 0) {
    ver.why = "the root has a sibling";
    return failed();
  }
  // Per level: order along the chain; per inner level: the children it lists, in chain
  // order, with the key range each child (and the unlisted siblings after it) must hold.
  Verifier::Bounds bounds;
  for (std::size_t li = 0; li < levels.size(); ++li) {
    Verifier::Listed listed;
    if (!ver.chain(levels[li], li == 0, bounds, listed)) return failed();
    if (li + 1 == levels.size()) break;
    Verifier::Bounds next_bounds;
    if (!ver.children(listed, levels, li, next_bounds)) return failed();
    bounds = std::move(next_bounds);
  }
  return {};
}

IndexStats FastFairTree::stats() const {
  IndexStats s;
  const pm::Allocator& a = pool_.allocator();
  std::vector<std::vector<std::uint64_t>> levels;
  // On a damaged tree the figures cover what the checked walk reached before the bad word.
  const bool ok = static_cast<bool>(walk([&](std::uint64_t b) { s.pm_bytes += a.block_size(b); },
                                         &levels));
  if (!ok || levels.empty()) return s;
  std::uint64_t inner = 0;
  for (std::size_t li = 0; li + 1 < levels.size(); ++li) inner += levels[li].size();
  for (std::uint64_t off : levels.back()) s.keys += effective(ref(off), nullptr).size();
  // Leaf depth: inner nodes on the path from the root (the root's level).
  s.avg_leaf_depth = static_cast<double>(levels.size() - 1);
  s.max_leaf_depth = levels.size() - 1;
  s.nodes["inner"] = inner;
  s.nodes["leaf"] = levels.back().size();
  return s;
}

void FastFairTree::dump(std::ostream& os) const {
  std::vector<std::vector<std::uint64_t>> levels;
  if (auto r = walk([](std::uint64_t) {}, &levels); !r) {
    os << "fastfair: damaged: " << r.error().message << "\n";
    return;
  }
  auto key_text = [&](std::uint64_t k) {
    std::ostringstream o;
    if (!is_indirect(k)) {
      o << std::hex << k << std::dec;
      return o.str();
    }
    std::byte scratch[8];
    const Key b = kr_.bytes(k, scratch);
    o << '"';
    for (std::size_t i = 0; i < b.size() && i < 16; ++i) {
      const auto c = static_cast<unsigned char>(b[i]);
      if (std::isprint(c)) o << static_cast<char>(c);
      else o << "\\x" << std::hex << static_cast<unsigned>(c) << std::dec;
    }
    o << (b.size() > 16 ? "...\"" : "\"");
    return o.str();
  };
  os << "fastfair: node size " << node_size_ << ", " << slots_ << " records, height "
     << levels.size() - 1 << "\n";
  for (std::size_t li = 0; li < levels.size(); ++li) {
    os << "level " << levels.size() - 1 - li << ":\n";
    for (std::uint64_t off : levels[li]) {
      const NodeRef nr = ref(off);
      os << "  " << kit::CheckedWalk::hex(off);
      if (nr.n->h.leftmost) os << " <" << kit::CheckedWalk::hex(nr.n->h.leftmost) << ">";
      const unsigned end = nr.end();
      for (unsigned i = 0; i < end; ++i) {
        os << ' ' << (nr.dead(i, end) ? "(dead)" : "") << key_text(nr.rec()[i].key);
        if (!nr.leaf()) os << "->" << kit::CheckedWalk::hex(nr.rec()[i].ptr);
      }
      if (nr.n->h.sibling) os << " | sibling " << kit::CheckedWalk::hex(nr.n->h.sibling);
      os << "\n";
    }
  }
}

}  // namespace wort
