#include "index/woart/woart_node4.h"

#include <bit>
#include <cstddef>
#include <cstring>

#include "index/art_engine/node_image.h"
#include "index/art_engine/node_lock.h"
#include "index/art_engine/sync.h"
#include "pm/persist.h"

namespace wort::woart {
namespace {
const Node4* as4(const NodeBase* n) { return reinterpret_cast<const Node4*>(n); }
Node4* as4(NodeBase* n) { return reinterpret_cast<Node4*>(n); }

unsigned used(const SlotWord& s) noexcept {
  unsigned c = 0;
  while (c < 4 && s.idx[c] != 0) ++c;
  return c;
}

int position_of(const SlotWord& s, std::uint8_t b) noexcept {
  for (unsigned i = 0; i < 4 && s.idx[i] != 0; ++i)
    if (s.key[i] == b) return static_cast<int>(i);
  return -1;
}

//! A child index no valid entry names (a crash may have left a stale pointer there).
unsigned free_child_index(const SlotWord& s) noexcept {
  unsigned named = 0;
  for (unsigned i = 0; i < 4 && s.idx[i] != 0; ++i) named |= 1u << (s.idx[i] - 1);
  unsigned c = 0;
  while (named & (1u << c)) ++c;
  return c;
}

//! `s` with (b, child index ci) inserted in key order; s has a free entry.
SlotWord with_entry(SlotWord s, std::uint8_t b, unsigned ci) noexcept {
  unsigned i = used(s);
  while (i > 0 && s.key[i - 1] > b) {
    s.key[i] = s.key[i - 1];
    s.idx[i] = s.idx[i - 1];
    --i;
  }
  s.key[i] = b;
  s.idx[i] = static_cast<std::uint8_t>(ci + 1);
  return s;
}

//! `s` without the entry at position p, valid entries kept packed.
SlotWord without_entry(SlotWord s, unsigned p) noexcept {
  for (unsigned i = p; i + 1 < 4; ++i) {
    s.key[i] = s.key[i + 1];
    s.idx[i] = s.idx[i + 1];
  }
  s.key[3] = 0;
  s.idx[3] = 0;
  return s;
}
}  // namespace

//! The slot word, read whole (lock-free readers: one snapshot per node visit).
static SlotWord slots_of(const Node4* x) noexcept { return art_engine::load_word(&x->slots); }

//! The child index + 1 of key byte b in slot word w (read as a little-endian 8-byte word:
//! key bytes in bits 0-31, child indexes in 32-63), or 0. One pass, no branch per entry:
//! the lowest byte of keys ^ b that is zero is found exactly by the borrow trick (a false
//! hit can only sit above a true one), and the entry there counts only if its index byte is
//! set — valid entries come first, so a free position has no valid one above it.
static unsigned child_index_in(std::uint64_t w, std::uint8_t b) noexcept {
  static_assert(std::endian::native == std::endian::little &&
                offsetof(SlotWord, key) == 0 && offsetof(SlotWord, idx) == 4);
  const std::uint32_t x = static_cast<std::uint32_t>(w) ^ (0x01010101u * b);
  const std::uint32_t zero = (x - 0x01010101u) & ~x & 0x80808080u;
  if (zero == 0) return 0;
  return static_cast<std::uint8_t>(w >> (32 + (std::countr_zero(zero) & ~7)));
}

Ref Node4Ops::find(const NodeBase* n, std::uint8_t b) noexcept {
  const Node4* x = as4(n);
  const auto* word = reinterpret_cast<const std::uint64_t*>(&x->slots);
  for (;;) {
    const std::uint64_t w = art_engine::load(word);
    const unsigned ci = child_index_in(w, b);
    if (ci == 0) return art_engine::kNull;
    const Ref r = art_engine::load(&x->child[ci - 1]);
    // A slot reused since the slot word was read may hold an uncommitted leaf (node_ops.h).
    if (!art_engine::is_leaf(r) || art_engine::load(word) == w) [[likely]] return r;
  }
}

Ref* Node4Ops::slot(NodeBase* n, std::uint8_t b) noexcept {
  Node4* x = as4(n);
  const SlotWord s = slots_of(x);
  const int p = position_of(s, b);
  return p < 0 ? nullptr : &x->child[s.idx[p] - 1];
}

unsigned Node4Ops::count(const NodeBase* n) noexcept { return used(slots_of(as4(n))); }

bool Node4Ops::for_each_from(const NodeBase* n, unsigned from, art_engine::ChildFn fn) {
  const Node4* x = as4(n);
  const SlotWord s = slots_of(x);
  const auto* word = reinterpret_cast<const std::uint64_t*>(&x->slots);
  const std::uint64_t snap = std::bit_cast<std::uint64_t>(s);
  for (unsigned i = 0; i < 4 && s.idx[i] != 0; ++i) {
    if (s.key[i] < from) continue;
    const Ref c = art_engine::load(&x->child[s.idx[i] - 1]);
    // The snapshot is older than this pointer by every subtree visited since: the entry
    // may have been removed and its child index reused by another key byte (whose leaf
    // may have split into a node). Still named by the same entry now, and the pointer read
    // again unchanged: the pointer was its (sync.h, still_named).
    if (!art_engine::still_named(&x->child[s.idx[i] - 1], c, [&] {
          const std::uint64_t w = art_engine::load(word);  // unchanged: no need to look
          return w == snap || child_index_in(w, s.key[i]) == s.idx[i];
        }))
      continue;  // removed since the snapshot
    if (!fn(s.key[i], c)) return false;
  }
  return true;
}

void Node4Ops::build(NodeBase* dst, const art_engine::NodeHeader& hdr, Ref eok,
                     const art_engine::Entries& e) noexcept {
  Node4 img;
  art_engine::init_base(img.base, kType, hdr, eok);
  std::memset(&img.slots, 0, sizeof img.slots);
  std::memset(img.child, 0, sizeof img.child);
  for (unsigned i = 0; i < e.n; ++i) {
    img.slots.key[i] = e.bytes[i];
    img.slots.idx[i] = static_cast<std::uint8_t>(i + 1);
    img.child[i] = e.refs[i];
  }
  art_engine::write_image(dst, &img, sizeof img);
}

bool Node4Ops::add(NodeBase* n, std::uint8_t b, Ref r) noexcept {
  WORT_DCHECK(art_engine::type_of(n) == kType && r != art_engine::kNull && find(n, b) == art_engine::kNull);
  Node4* x = as4(n);
  const SlotWord s = x->slots;
  if (used(s) == 4) return false;
  const unsigned ci = free_child_index(s);
  pm::store(&x->child[ci], r);
  // The pointer needs no write-back of its own: NODE4 is one line (a 64-byte block is
  // line-aligned), stores to one line persist in order, so the commit's write-back of the
  // slot word carries child[ci] with it (the same-line rule). The new leaf, written back
  // by make_leaf, is ordered by the publish's leading fence.
  art_engine::release_to_readers(&x->slots);
  pm::publish(reinterpret_cast<std::uint64_t*>(&x->slots),
              std::bit_cast<std::uint64_t>(with_entry(s, b, ci)));
  return true;
}

const void* Node4Ops::add_word(const NodeBase* n, std::uint8_t) noexcept {
  return &as4(n)->slots;
}

void Node4Ops::remove(NodeBase* n, std::uint8_t b) noexcept {
  WORT_DCHECK(art_engine::type_of(n) == kType);
  Node4* x = as4(n);
  const SlotWord s = x->slots;
  const int p = position_of(s, b);
  if (p < 0) return;
  pm::commit_nt(reinterpret_cast<std::uint64_t*>(&x->slots),
                std::bit_cast<std::uint64_t>(without_entry(s, static_cast<unsigned>(p))));
}

bool Node4Ops::check(const NodeBase* n, std::string* why) {
  const Node4* x = as4(n);
  const SlotWord& s = x->slots;
  const unsigned c = used(s);
  unsigned named = 0;
  for (unsigned i = 0; i < 4; ++i) {
    if (i >= c) {
      if (s.idx[i] != 0) return *why = "node4 slot word not packed", false;
      continue;
    }
    if (s.idx[i] > 4) return *why = "node4 slot index out of range", false;
    if (named & (1u << (s.idx[i] - 1))) return *why = "node4 child named twice", false;
    named |= 1u << (s.idx[i] - 1);
    if (i > 0 && s.key[i - 1] >= s.key[i]) return *why = "node4 keys not ascending", false;
    if (x->child[s.idx[i] - 1] == art_engine::kNull) return *why = "node4 null child", false;
  }
  return true;
}

}  // namespace wort::woart
