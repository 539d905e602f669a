// NV-Tree visit_blocks(), verify(), stats() and dump().
//
// The checked walk follows the leaf list from the anchor: each leaf a carved, 64-aligned
// block reached once (a cycle fails), its capacity the anchor's, count <= capacity, every
// key block its entries name (once per leaf: entries of one key share it) carved, with a
// length <= kMaxKeyLength and its bytes inside the block, and each entry's prefix that of
// its key (inline keys zero-padded), since comparisons — and the sorts of the replay — rely
// on one form per key. The anchor's spare leaf: a leaf block, not in the list.
// verify() then checks, leaf by leaf in list order: inline keys zero-padded; live keys
// strictly above every live key of the leaves before; the DRAM inner structure lists
// exactly the list's leaves in order, with their live counts, each leaf's live keys within
// its separators.
#include <algorithm>
#include <array>
#include <iomanip>
#include <string>
#include <vector>

#include "index/kit/checked_walk.h"
#include "index/nvtree/nvtree_leaf.h"
#include "index/nvtree/nvtree_tree.h"
#include "pm/allocator.h"

namespace wort {

using namespace nvtree;

namespace {

template <class OnLeaf, class OnKey>
Result<void> walk_leaves(const Pool& pool, const Anchor& a, OnLeaf&& on_leaf, OnKey&& on_key) {
  kit::CheckedWalk w(pool, "nvtree", UINT32_MAX);
  std::vector<std::uint64_t> blocks;
  return w.run(a.head, [&](std::uint64_t off, std::uint32_t) {
    if (!w.enter(off, sizeof(Leaf), 64, "leaf")) return;
    const Leaf* l = pool.at<Leaf>(off);
    const std::string at = " at " + kit::CheckedWalk::hex(off);
    if (l->capacity != a.leaf_capacity) { w.fail("leaf" + at + " has capacity " + std::to_string(l->capacity)); return; }
    if (!w.fits(off, off, leaf_bytes(l->capacity), "leaf entries")) return;
    if (l->count > l->capacity) { w.fail("leaf" + at + " has count " + std::to_string(l->count)); return; }
    blocks.clear();
    for (std::uint64_t i = 0; i < l->count; ++i) {  // inline keys canonical (zero-padded)
      const Entry& e = l->entries()[i];
      const std::uint64_t m = key_meta(e);
      if (m > kMaxInline) blocks.push_back(m);
      else if (m < 8 && (e.prefix << (8 * m)) != 0) { w.fail("leaf" + at + " has an inline key that is not zero-padded"); return; }
    }
    std::sort(blocks.begin(), blocks.end());
    blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
    for (std::uint64_t b : blocks) {
      if (!w.enter(b, sizeof(KeyBlock), 16, "key block")) return;
      const std::uint64_t len = pool.at<KeyBlock>(b)->len;
      if (len <= kMaxInline || len > kMaxKeyLength) { w.fail("key block at " + kit::CheckedWalk::hex(b) + " has length " + std::to_string(len)); return; }
      if (!w.fits(b, b, sizeof(KeyBlock) + len, "key bytes")) return;
      on_key(b);
    }
    // every entry's prefix agrees with its key block (comparisons rely on one form per key)
    for (std::uint64_t i = 0; i < l->count; ++i) {
      const Entry& e = l->entries()[i];
      const std::uint64_t m = key_meta(e);
      if (m <= kMaxInline) continue;
      const auto* kb = pool.at<KeyBlock>(m);
      if (key_prefix({reinterpret_cast<const std::byte*>(kb + 1), kb->len}) != e.prefix) { w.fail("leaf" + at + " has an entry whose prefix disagrees with its key block"); return; }
    }
    on_leaf(off, *l);
    if (l->next != 0) w.push(l->next, 0);
  });
}

}  // namespace

Result<void> NvTree::visit_blocks(BlockVisitorFn v) const {
  v(pool_.offset_of(anchor_));
  if (const std::uint64_t sp = anchor_->spare; sp != 0) {  // content never read
    if (!kit::BlockCheck(pool_).holds(sp, leaf_bytes(anchor_->leaf_capacity), 64))
      return Error{Status::corrupt, "nvtree: spare leaf " + kit::CheckedWalk::hex(sp) +
                                        " is not a leaf block of this pool"};
  }
  auto r = walk_leaves(pool_, *anchor_,
                       [&](std::uint64_t off, const Leaf&) {
                         if (off == anchor_->spare) return;  // reported below as corrupt
                         v(off);
                       },
                       [&](std::uint64_t off) { v(off); });
  if (!r) return r;
  if (anchor_->spare != 0) {
    bool in_list = false;
    for (std::uint64_t off = anchor_->head; off != 0 && !in_list; off = leaf(off)->next)
      in_list = off == anchor_->spare;
    if (in_list) return Error{Status::corrupt, "nvtree: the spare leaf is also in the list"};
    v(anchor_->spare);
  }
  return {};
}

Result<void> NvTree::verify() const {
  if (auto r = visit_blocks([](std::uint64_t) {}); !r) return r;
  const auto refs = inner_.all();
  std::vector<Entry> live;
  std::string prev;
  bool have_prev = false;
  std::size_t i = 0;
  auto fail = [](std::uint64_t off, const std::string& why) {
    return Error{Status::corrupt, "nvtree: leaf at " + kit::CheckedWalk::hex(off) + ": " + why};
  };
  for (std::uint64_t off = anchor_->head; off != 0; off = leaf(off)->next, ++i) {
    if (i >= refs.size() || refs[i].leaf != off) return fail(off, "not where the inner nodes put it");
    const Leaf* l = leaf(off);
    for (std::uint64_t j = 0; j < l->count; ++j) {
      const Entry& e = l->entries()[j];
      const std::uint64_t m = key_meta(e);
      if (m < 8 && (e.prefix << (8 * m)) != 0) return fail(off, "inline key not zero-padded");
    }
    live_sorted(base(), l, live);
    if (live.size() != refs[i].live) return fail(off, "live count in DRAM disagrees");
    std::array<std::byte, 8> b1, b2;
    for (const Entry& e : live) {
      const std::string k(as_string(entry_key(base(), e, b1)));
      if (have_prev && !(prev < k)) return fail(off, "live keys out of list order");
      if (i > 0 && inner_.compare(refs[i].sep, Probe(as_key(k))) > 0)
        return fail(off, "live key below its separator");
      if (i + 1 < refs.size() && inner_.compare(refs[i + 1].sep, Probe(as_key(k))) <= 0)
        return fail(off, "live key at or above the next separator");
      prev = k;
      have_prev = true;
    }
    (void)b2;
  }
  if (i != refs.size()) return Error{Status::corrupt, "nvtree: the inner nodes list leaves the list lacks"};
  return {};
}

IndexStats NvTree::stats() const {
  IndexStats s;
  const pm::Allocator& a = pool_.allocator();
  s.pm_bytes = a.block_size(pool_.offset_of(anchor_));
  std::uint64_t leaves = 0, keyblocks = 0;
  std::vector<Entry> live;
  (void)walk_leaves(
      pool_, *anchor_,
      [&](std::uint64_t off, const Leaf& l) {
        s.pm_bytes += a.block_size(off);
        ++leaves;
        live_sorted(base(), &l, live);
        s.keys += live.size();
      },
      [&](std::uint64_t off) {
        s.pm_bytes += a.block_size(off);
        ++keyblocks;
      });
  // Leaf depth: the DRAM levels above a leaf (INs, the PLN) plus the leaf; all leaves alike.
  const double depth = leaves ? static_cast<double>(inner_.levels() + 1) : 0;
  s.avg_leaf_depth = depth;
  s.max_leaf_depth = static_cast<std::uint64_t>(depth);
  s.dram_bytes = inner_.dram_bytes();
  s.nodes["leaf"] = leaves;
  s.nodes["pln"] = inner_.plns();
  s.nodes["in"] = inner_.in_nodes();
  s.nodes["keyblock"] = keyblocks;
  s.nodes["rebuilds"] = inner_.rebuilds();
  s.nodes["spare"] = anchor_->spare != 0;
  if (anchor_->spare != 0) s.pm_bytes += a.block_size(anchor_->spare);
  return s;
}

void NvTree::dump(std::ostream& os) const {
  os << "nvtree: leaf capacity " << anchor_->leaf_capacity << ", PLN capacity "
     << anchor_->pln_capacity << ", IN fanout " << anchor_->in_fanout << ", " << inner_.plns()
     << " PLNs, " << inner_.in_nodes() << " INs, " << inner_.rebuilds() << " rebuilds\n";
  if (auto r = visit_blocks([](std::uint64_t) {}); !r) {
    os << "  (not dumped: " << r.error().message << ")\n";
    return;
  }
  for (std::uint64_t off = anchor_->head; off != 0; off = leaf(off)->next) {
    const Leaf* l = leaf(off);
    os << "  leaf @" << kit::CheckedWalk::hex(off) << " count " << l->count << " [";
    for (std::uint64_t i = 0; i < l->count; ++i) {
      std::array<std::byte, 8> buf;
      const Entry& e = l->entries()[i];
      os << (i ? " " : "") << (is_delete(e) ? "-" : "+")
         << std::quoted(std::string(as_string(entry_key(base(), e, buf))).substr(0, 16));
      if (!is_delete(e)) os << "=" << e.value;
    }
    os << "]\n";
  }
}

}  // namespace wort
