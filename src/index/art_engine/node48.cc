#include "index/art_engine/node48.h"

#include <bit>
#include <cstddef>

#include "index/art_engine/node_image.h"
#include "index/art_engine/node_lock.h"
#include "index/art_engine/sync.h"
#include "pm/persist.h"

namespace wort::art_engine {
namespace {
const Node48* as48(const NodeBase* n) { return reinterpret_cast<const Node48*>(n); }
Node48* as48(NodeBase* n) { return reinterpret_cast<Node48*>(n); }

//! Bit i set if some index byte names slot i (the only trustworthy record of use). Reads
//! the index eight bytes a load (the aligned words its commits store, sync.h) and visits
//! only the non-zero bytes: 32 loads and a few instructions per entry, not 256 byte tests.
std::uint64_t used_slots(const Node48* n) noexcept {
  static_assert(offsetof(Node48, index) % 8 == 0 && sizeof n->index % 8 == 0);
  const auto* words = reinterpret_cast<const std::uint64_t*>(n->index);
  std::uint64_t used = 0;
  for (unsigned k = 0; k < sizeof n->index / 8; ++k) {
    for (std::uint64_t w = load(&words[k]); w != 0;) {
      const unsigned shift = static_cast<unsigned>(std::countr_zero(w)) & ~7u;
      const unsigned i = static_cast<unsigned>(w >> shift) & 0xff;
      used |= std::uint64_t{1} << (i - 1);
      w &= ~(std::uint64_t{0xff} << shift);
    }
  }
  return used;
}

//! A slot no index byte names. A slot whose pointer is null has never been used (a build
//! or an add stores the pointer before any index byte names it, and a remove clears only the
//! index byte), so the first null pointer is free: what an insert-only node takes, without
//! reading the index. Only when every pointer is set (slots freed by removes) is the index
//! read for the slots it names. 48 if the node is full.
unsigned free_slot(const Node48* x) noexcept {
  for (unsigned i = 0; i < 48; ++i)
    if (load(&x->child[i]) == kNull) return i;
  return static_cast<unsigned>(std::countr_one(used_slots(x)));
}
}  // namespace

Ref Node48Ops::find(const NodeBase* n, std::uint8_t b) noexcept {
  const Node48* x = as48(n);
  for (;;) {
    const std::uint8_t i = load_committed_byte(&x->index[b]);
    if (i == 0) return kNull;
    const Ref r = load(&x->child[i - 1]);
    // A slot reused since the index byte was read may hold an uncommitted leaf (node_ops.h).
    if (!is_leaf(r) || load_committed_byte(&x->index[b]) == i) [[likely]] return r;
  }
}

Ref* Node48Ops::slot(NodeBase* n, std::uint8_t b) noexcept {
  Node48* x = as48(n);
  const std::uint8_t i = load(&x->index[b]);
  return i == 0 ? nullptr : &x->child[i - 1];
}

unsigned Node48Ops::count(const NodeBase* n) noexcept {
  return static_cast<unsigned>(std::popcount(used_slots(as48(n))));
}

bool Node48Ops::for_each_from(const NodeBase* n, unsigned from, ChildFn fn) {
  const Node48* x = as48(n);
  for (unsigned b = from; b < 256; ++b) {
    const std::uint8_t i = load_committed_byte(&x->index[b]);
    if (i == 0) continue;
    const Ref c = load(&x->child[i - 1]);
    // The slot may have been freed and reused by another key byte since the index byte was
    // read: still named by b now, and still holding c, the pointer was b's.
    if (!still_named(&x->child[i - 1], c, [&] { return load_committed_byte(&x->index[b]) == i; }))
      continue;  // removed meanwhile
    if (!fn(static_cast<std::uint8_t>(b), c)) return false;
  }
  return true;
}

void Node48Ops::build(NodeBase* dst, const NodeHeader& hdr, Ref eok, const Entries& e) noexcept {
  Node48 img;
  init_base(img.base, kType, hdr, eok);
  std::memset(img.index, 0, sizeof img.index);
  std::memset(img.child, 0, sizeof img.child);
  for (unsigned i = 0; i < e.n; ++i) {
    img.child[i] = e.refs[i];
    img.index[e.bytes[i]] = static_cast<std::uint8_t>(i + 1);
  }
  write_image(dst, &img, sizeof img);
}

Ref Node48Ops::any_child(const NodeBase* n, std::uint8_t* b) noexcept {
  const Node48* x = as48(n);
  const auto* words = reinterpret_cast<const std::uint64_t*>(x->index);
  for (unsigned k = 0; k < sizeof x->index / 8; ++k) {
    if (const std::uint64_t w = load(&words[k]); w != 0) {
      const unsigned shift = static_cast<unsigned>(std::countr_zero(w)) & ~7u;
      *b = static_cast<std::uint8_t>(8 * k + shift / 8);
      return load(&x->child[((w >> shift) & 0xff) - 1]);
    }
  }
  return kNull;
}

bool Node48Ops::add(NodeBase* n, std::uint8_t b, Ref r) noexcept {
  WORT_DCHECK(art_engine::type_of(n) == kType && r != kNull && find(n, b) == kNull);
  Node48* x = as48(n);
  const unsigned i = free_slot(x);
  if (i == 48) return false;
  pm::store(&x->child[i], r);
  pm::flush(&x->child[i], sizeof(Ref));
  // The pointer (and the new child) before the index byte that publishes it.
  publish_field_cached(&x->index[b], static_cast<std::uint8_t>(i + 1));
  return true;
}

const void* Node48Ops::add_word(const NodeBase* n, std::uint8_t b) noexcept {
  return &as48(n)->index[b];
}

void Node48Ops::remove(NodeBase* n, std::uint8_t b) noexcept {
  WORT_DCHECK(art_engine::type_of(n) == kType && find(n, b) != kNull);
  Node48* x = as48(n);
  commit_field(&x->index[b], std::uint8_t{0});
}

bool Node48Ops::check(const NodeBase* n, std::string* why) {
  const Node48* x = as48(n);
  std::uint64_t seen = 0;
  for (unsigned b = 0; b < 256; ++b) {
    const unsigned i = x->index[b];
    if (i == 0) continue;
    if (i > 48) return *why = "node48 index byte out of range", false;
    const std::uint64_t bit = std::uint64_t{1} << (i - 1);
    if (seen & bit) return *why = "node48 slot named twice", false;
    seen |= bit;
    if (x->child[i - 1] == kNull) return *why = "node48 null child", false;
  }
  return true;
}

}  // namespace wort::art_engine
