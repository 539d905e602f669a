// wB+Tree visit_blocks(), verify(), stats() and dump(), all over the checked walk.
//
// verify(): the checked walk (wbtree_walk.h), then for every node reached with key bounds
// [lo, hi) from its parent: at least one entry; keys strictly ascending in the sorted view
// (slot array or, when it is marked invalid, the bitmap's entries sorted); every key within
// the bounds (an inner node's first key is a lower bound only and may be below lo); inline
// keys zero-padded past their length; children one level down; the micro-log idle.
#include <array>
#include <iomanip>
#include <string>

#include "index/wbtree/wbtree_tree.h"
#include "index/wbtree/wbtree_walk.h"
#include "pm/allocator.h"

namespace wort {

using namespace wbtree;

Result<void> WbTree::visit_blocks(BlockVisitorFn v) const {
  v(pool_.offset_of(anchor_));
  return walk_tree(pool_, *anchor_, [&](std::uint64_t off, const Node&, std::uint32_t) { v(off); },
                   [&](std::uint64_t off) { v(off); });
}

namespace {

struct Checker {
  const std::byte* base;
  std::string error;

  std::string key_of(const Entry& e) const {
    std::array<std::byte, 8> buf;
    const Key k = entry_key(base, e, buf);
    return std::string(as_string(k));
  }
  bool fail(std::uint64_t off, const std::string& why) {
    error = "wbtree: node at " + kit::CheckedWalk::hex(off) + ": " + why;
    return false;
  }
  // lo/hi: nullptr = unbounded.
  bool check(std::uint64_t off, const std::string* lo, const std::string* hi) {
    const Node* n = reinterpret_cast<const Node*>(base + off);
    const View v = sorted_view(base, n);
    if (v.n == 0) return fail(off, "no entries");
    std::string prev;
    for (unsigned i = 0; i < v.n; ++i) {
      const Entry& e = n->entries()[v.pos[i]];
      if (e.meta <= kMaxInline && e.meta < 8 && (e.prefix << (8 * e.meta)) != 0)
        return fail(off, "inline key not zero-padded");
      const std::string k = key_of(e);
      if (i > 0 && !(prev < k)) return fail(off, "keys out of order");
      const bool bounded_below = n->level == 0 || i > 0;
      if (bounded_below && lo && k < *lo) return fail(off, "key below its lower bound");
      if (hi && !(k < *hi)) return fail(off, "key at or above its upper bound");
      prev = k;
    }
    if (n->level == 0) return true;
    for (unsigned i = 0; i < v.n; ++i) {
      const Entry& e = n->entries()[v.pos[i]];
      if (reinterpret_cast<const Node*>(base + e.value)->level + 1 != n->level)
        return fail(off, "child level");
      const std::string clo = i == 0 ? (lo ? *lo : std::string()) : key_of(e);
      std::string chi;
      if (i + 1 < v.n) chi = key_of(n->entries()[v.pos[i + 1]]);
      if (!check(e.value, (i == 0 && !lo) ? nullptr : &clo, i + 1 < v.n ? &chi : hi)) return false;
    }
    return true;
  }
};

}  // namespace

Result<void> WbTree::verify() const {
  if (auto r = visit_blocks([](std::uint64_t) {}); !r) return r;
  const MicroLog& log = anchor_->log;
  if (log.node || log.parent || log.sibling)
    return Error{Status::corrupt, "wbtree: the split micro-log is not idle"};
  if (anchor_->root == 0) return {};
  Checker c{base(), {}};
  if (!c.check(anchor_->root, nullptr, nullptr)) return Error{Status::corrupt, c.error};
  return {};
}

IndexStats WbTree::stats() const {
  IndexStats s;
  const pm::Allocator& a = pool_.allocator();
  s.pm_bytes = a.block_size(pool_.offset_of(anchor_));
  std::uint64_t depth_sum = 0, leaves = 0, inner = 0, keyblocks = 0;
  // Leaf depth = nodes on the path from the root, the leaf included (a root leaf: 1).
  (void)walk_tree(
      pool_, *anchor_,
      [&](std::uint64_t off, const Node& n, std::uint32_t depth) {
        s.pm_bytes += a.block_size(off);
        if (n.level != 0) {
          ++inner;
          return;
        }
        ++leaves;
        const std::uint64_t c = count_of(&n);
        s.keys += c;
        depth_sum += c * (depth + 1);
        if (depth + 1 > s.max_leaf_depth) s.max_leaf_depth = depth + 1;
      },
      [&](std::uint64_t off) {
        s.pm_bytes += a.block_size(off);
        ++keyblocks;
      });
  s.avg_leaf_depth = s.keys ? static_cast<double>(depth_sum) / static_cast<double>(s.keys) : 0;
  s.nodes["leaf"] = leaves;
  s.nodes["inner"] = inner;
  s.nodes["keyblock"] = keyblocks;
  return s;
}

void WbTree::dump(std::ostream& os) const {
  os << "wbtree: leaf capacity " << anchor_->leaf_capacity << ", inner capacity "
     << anchor_->inner_capacity << ", log {" << anchor_->log.node << ", " << anchor_->log.parent
     << ", " << anchor_->log.sibling << "}\n";
  if (auto r = visit_blocks([](std::uint64_t) {}); !r) {
    os << "  (not dumped: " << r.error().message << ")\n";
    return;
  }
  (void)walk_tree(
      pool_, *anchor_,
      [&](std::uint64_t off, const Node& n, std::uint32_t depth) {
        const View v = sorted_view(base(), &n);
        os << std::string(2 * depth + 2, ' ') << (n.level ? "inner" : "leaf") << " @"
           << kit::CheckedWalk::hex(off) << " level " << n.level << " bitmap "
           << kit::CheckedWalk::hex(n.bitmap) << (n.bitmap & kSlotsValid ? "" : " (slots invalid)")
           << " [";
        for (unsigned i = 0; i < v.n; ++i) {
          std::array<std::byte, 8> buf;
          const Entry& e = n.entries()[v.pos[i]];
          const Key k = entry_key(base(), e, buf);
          os << (i ? " " : "") << std::quoted(std::string(as_string(k)).substr(0, 16)) << "->"
             << (n.level ? kit::CheckedWalk::hex(e.value) : std::to_string(e.value));
        }
        os << "]\n";
      },
      [](std::uint64_t) {});
}

}  // namespace wort
