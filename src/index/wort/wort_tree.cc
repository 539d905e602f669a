#include "index/wort/wort_tree.h"

#include <cstring>

#include "index/common/anchor.h"
#include "index/registry.h"
#include "index/wort/wort_walk.h"
#include "pm/allocator.h"
#include "pm/persist.h"

namespace wort {

using namespace wort_index;

WortTree::WortTree(Pool& pool, Anchor* anchor) noexcept
    : pool_(pool), anchor_(anchor), blocks_(pool.base()) {}

Result<std::unique_ptr<WortTree>> WortTree::create(Pool& pool, const IndexOptions&) {
  Anchor image{};
  image.magic = kAnchorMagic;
  image.span_bits = kSpanBits;
  auto anchor = kit::create_anchor(pool, kKind, image);  // the create commit: the pool root
  if (!anchor) return anchor.error();
  return std::unique_ptr<WortTree>(new WortTree(pool, *anchor));
}

Result<std::unique_ptr<WortTree>> WortTree::open(Pool& pool) {
  auto opened = kit::open_anchor<Anchor>(pool, kKind, kAnchorMagic);
  if (!opened) return opened.error();
  Anchor* anchor = *opened;
  if (anchor->span_bits != kSpanBits)
    return Error{Status::invalid_argument,
                 "wort: tree built with " + std::to_string(anchor->span_bits) +
                     "-bit partial keys, this build uses " + std::to_string(kSpanBits)};
  std::unique_ptr<WortTree> tree(new WortTree(pool, anchor));
  // Checks every word a reader can follow; blocks allocated but not reachable (a crash
  // between allocation and commit, or between an unlink and its free) become free: nothing
  // leaks across a crash.
  if (auto r = kit::recover(pool, *tree); !r) return r.error();
  return tree;
}

Status WortTree::insert(Key k, Value v) { return put(k, v, PutMode::insert); }
Status WortTree::upsert(Key k, Value v) { return put(k, v, PutMode::upsert); }
Status WortTree::update(Key k, Value v) { return put(k, v, PutMode::update); }

std::optional<Value> WortTree::lookup(Key k) const {
  const std::size_t count = Partial::count(k);
  std::uint64_t w = anchor_->root;
  std::uint32_t depth = 0;
  while (w != 0 && !is_leaf(w)) {
    const Node* n = blocks_.node(w);
    const HeaderFields h = decode_header(n->header);
    // A header whose depth disagrees belongs to an interrupted split or merge: its prefix
    // array starts elsewhere, so skip the check; the leaf comparison below decides.
    if (h.depth == depth && match_stored_prefix(h, k) < h.stored()) return std::nullopt;
    const std::uint32_t b = h.branch();
    if (count < b) return std::nullopt;
    w = count == b ? n->end_child : n->child[Partial::at(k, b)];
    depth = b + 1;
  }
  if (w == 0) return std::nullopt;
  const LeafHeader* l = blocks_.leaf(w);
  if (l->key_len != k.size() || (!k.empty() && std::memcmp(l + 1, k.data(), k.size()) != 0))
    return std::nullopt;
  return l->value;
}

Result<void> WortTree::visit_blocks(BlockVisitorFn v) const {
  v(pool_.offset_of(anchor_));
  return walk_preorder(pool_, blocks_, anchor_->root,
                       [&](std::uint64_t w, std::uint32_t) { v(block_of(w)); });
}

IndexStats WortTree::stats() const {
  IndexStats s;
  std::uint64_t depth_sum = 0, nodes = 0;
  const pm::Allocator& a = pool_.allocator();
  s.pm_bytes = a.block_size(pool_.offset_of(anchor_));
  // On a damaged tree the figures cover what the checked walk reached before the bad word.
  (void)walk_preorder(pool_, blocks_, anchor_->root, [&](std::uint64_t w, std::uint32_t level) {
    s.pm_bytes += a.block_size(block_of(w));
    if (is_leaf(w)) {
      // Leaf depth = inner nodes on the path from the root (a lone root leaf has depth 0).
      ++s.keys;
      depth_sum += level;
      if (level > s.max_leaf_depth) s.max_leaf_depth = level;
    } else {
      ++nodes;
    }
  });
  s.avg_leaf_depth = s.keys ? static_cast<double>(depth_sum) / static_cast<double>(s.keys) : 0;
  s.nodes["node" + std::to_string(kFanout)] = nodes;
  s.nodes["leaf"] = s.keys;
  return s;
}

}  // namespace wort

WORT_REGISTER_INDEX(wort::WortTree);
