// artcow/artcow_sorted_node.h — what ART+CoW's NODE4 and NODE16 share: ART's sorted layout
// (a count, keys in ascending order, a parallel child array), never edited in place but
// rebuilt by copy on every change. The two differ only in how a key byte is found: a short
// loop over 4 keys, one SIMD compare over 16; `Position` is that search.
// Concurrency: keys and count never change once the node is published (lock-free readers
// read them plainly); a child pointer is swapped in place by a commit (read atomically).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "index/art_engine/entries.h"
#include "index/art_engine/node_image.h"
#include "index/art_engine/sync.h"
#include "index/artcow/artcow_layout.h"

namespace wort::artcow {

template <class NodeT, unsigned Cap, int (*Position)(const NodeT*, std::uint8_t)>
struct SortedNode {
  static const NodeT* as(const NodeBase* n) noexcept { return reinterpret_cast<const NodeT*>(n); }
  static NodeT* as(NodeBase* n) noexcept { return reinterpret_cast<NodeT*>(n); }

  static Ref find(const NodeBase* n, std::uint8_t b) noexcept {
    const NodeT* x = as(n);
    const int p = Position(x, b);
    return p < 0 ? art_engine::kNull : art_engine::load(&x->child[p]);
  }

  static Ref* slot(NodeBase* n, std::uint8_t b) noexcept {
    NodeT* x = as(n);
    const int p = Position(x, b);
    return p < 0 ? nullptr : &x->child[p];
  }

  static unsigned count(const NodeBase* n) noexcept { return as(n)->count; }

  static bool for_each_from(const NodeBase* n, unsigned from, art_engine::ChildFn fn) {
    const NodeT* x = as(n);
    for (unsigned i = 0; i < x->count && i < Cap; ++i)
      if (x->key[i] >= from && !fn(x->key[i], art_engine::load(&x->child[i]))) return false;
    return true;
  }

  //! Builds the node from `e` (already sorted, at most Cap entries) in DRAM and publishes
  //! the image into the fresh block `dst`: its bytes up to child[e.n] only. Nothing reads a
  //! child past `count` (a copy replaces the node on every change), so the block's old
  //! bytes may stay there: a reused block is not written back a line it need not hold.
  static void build(NodeBase* dst, art_engine::NodeType type, const art_engine::NodeHeader& hdr,
                    Ref eok, const art_engine::Entries& e) noexcept {
    NodeT img{};  // value-initialised: every field, pad bytes included, starts at zero
    art_engine::init_base(img.base, type, hdr, eok);
    img.count = static_cast<std::uint8_t>(e.n);
    for (unsigned i = 0; i < e.n; ++i) {
      img.key[i] = e.bytes[i];
      img.child[i] = e.refs[i];
    }
    art_engine::write_image(dst, &img, offsetof(NodeT, child) + e.n * sizeof(Ref));
  }

  //! Count within capacity, keys strictly ascending, no null child.
  static bool check(const NodeBase* n, const char* name, std::string* why) {
    const NodeT* x = as(n);
    if (x->count > Cap) return *why = std::string(name) + " count over capacity", false;
    for (unsigned i = 0; i < x->count; ++i) {
      if (i > 0 && x->key[i - 1] >= x->key[i])
        return *why = std::string(name) + " keys not ascending", false;
      if (x->child[i] == art_engine::kNull) return *why = std::string(name) + " null child", false;
    }
    return true;
  }
};

}  // namespace wort::artcow
