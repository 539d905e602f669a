#include "index/woart/woart_node16.h"

#include <bit>
#include <cstddef>
#include <cstring>

#include "index/kit/match16.h"
#include "index/art_engine/node_image.h"
#include "index/art_engine/node_lock.h"
#include "index/art_engine/sync.h"
#include "pm/persist.h"

namespace wort::woart {
namespace {
const Node16* as16(const NodeBase* n) { return reinterpret_cast<const Node16*>(n); }
Node16* as16(NodeBase* n) { return reinterpret_cast<Node16*>(n); }

//! Position of b among the entries valid in bitmap `bm`, or -1. Key bytes at clear
//! positions may be stored meanwhile by the writer's next add: bytes a stale bitmap still
//! marks are re-checked by find (NodeOps::kReusesSlots).
int position_of(const Node16* x, std::uint16_t bm, std::uint8_t b) noexcept {
#if defined(__SANITIZE_THREAD__)
  // Under TSan the 16-byte vector load of bytes the writer stores is a race in the C++
  // model (each byte is read whole on x86): read them as atomic bytes instead.
  std::uint8_t keys[16];
  for (unsigned i = 0; i < 16; ++i) keys[i] = art_engine::load(&x->key[i]);
  const std::uint32_t m = kit::match16(keys, b) & bm;
#else
  const std::uint32_t m = kit::match16(x->key, b) & bm;
#endif
  return m == 0 ? -1 : std::countr_zero(m);
}
std::uint16_t bitmap_of(const Node16* x) noexcept { return art_engine::load(&x->bitmap); }

// Line 0 of a NODE16 block (a 192-byte block is line-aligned: size classes from 64 bytes
// up are multiples of 64) holds the bitmap, every key byte and the first children.
constexpr unsigned kChildrenInLine0 = (64 - offsetof(Node16, child)) / sizeof(Ref);
static_assert(offsetof(Node16, key) + sizeof(Node16::key) <= 64 && kChildrenInLine0 == 2);
}  // namespace

Ref Node16Ops::find(const NodeBase* n, std::uint8_t b) noexcept {
  const Node16* x = as16(n);
  for (;;) {
    const std::uint16_t bm = bitmap_of(x);
    const int p = position_of(x, bm, b);
    if (p < 0) return art_engine::kNull;
    const Ref r = art_engine::load(&x->child[p]);
    // A slot reused since the bitmap was read may hold an uncommitted leaf (node_ops.h).
    if (!art_engine::is_leaf(r) || bitmap_of(x) == bm) [[likely]] return r;
  }
}

Ref* Node16Ops::slot(NodeBase* n, std::uint8_t b) noexcept {
  Node16* x = as16(n);
  const int p = position_of(x, bitmap_of(x), b);
  return p < 0 ? nullptr : &x->child[p];
}

unsigned Node16Ops::count(const NodeBase* n) noexcept {
  return static_cast<unsigned>(std::popcount(bitmap_of(as16(n))));
}

Ref Node16Ops::any_child(const NodeBase* n, std::uint8_t* b) noexcept {
  const Node16* x = as16(n);
  const std::uint16_t bm = bitmap_of(x);
  if (bm == 0) return art_engine::kNull;
  const unsigned p = static_cast<unsigned>(std::countr_zero(bm));
  *b = art_engine::load(&x->key[p]);
  return art_engine::load(&x->child[p]);
}

bool Node16Ops::for_each_from(const NodeBase* n, unsigned from, art_engine::ChildFn fn) {
  const Node16* x = as16(n);
  std::uint8_t keys[16];
  std::uint8_t pos[16];
  unsigned c = 0;
  for (std::uint32_t m = bitmap_of(x); m != 0; m &= m - 1) {
    const unsigned p = static_cast<unsigned>(std::countr_zero(m));
    const std::uint8_t kp = art_engine::load(&x->key[p]);
    if (kp < from) continue;
    unsigned i = c++;
    while (i > 0 && keys[i - 1] > kp) {
      keys[i] = keys[i - 1];
      pos[i] = pos[i - 1];
      --i;
    }
    keys[i] = kp;
    pos[i] = static_cast<std::uint8_t>(p);
  }
  for (unsigned i = 0; i < c; ++i) {
    const Ref r = art_engine::load(&x->child[pos[i]]);
    // The snapshot is older than this pointer by every subtree visited since: the entry
    // may have been removed and its position reused by another key byte (whose leaf may
    // have split into a node). Its bit still set and its key byte unchanged now, and the
    // pointer read again unchanged: the pointer was the entry's (sync.h, still_named).
    if (!art_engine::still_named(&x->child[pos[i]], r, [&] {
          return ((bitmap_of(x) >> pos[i]) & 1) != 0 && art_engine::load(&x->key[pos[i]]) == keys[i];
        }))
      continue;  // removed since the snapshot
    if (!fn(keys[i], r)) return false;
  }
  return true;
}

void Node16Ops::build(NodeBase* dst, const art_engine::NodeHeader& hdr, Ref eok,
                      const art_engine::Entries& e) noexcept {
  Node16 img;
  art_engine::init_base(img.base, kType, hdr, eok);
  img.bitmap = static_cast<std::uint16_t>((1u << e.n) - 1);
  std::memset(img.pad, 0, sizeof img.pad);
  std::memset(img.key, 0, sizeof img.key);
  std::memset(img.child, 0, sizeof img.child);
  for (unsigned i = 0; i < e.n; ++i) {
    img.key[i] = e.bytes[i];
    img.child[i] = e.refs[i];
  }
  // Bytes up to child[e.n] only: a position whose bit is clear is never read (its key and
  // pointer are written by the add that sets the bit), so a reused block's old bytes may
  // stay there, and no line is written back for them.
  art_engine::write_image(dst, &img, offsetof(Node16, child) + e.n * sizeof(Ref));
}

bool Node16Ops::add(NodeBase* n, std::uint8_t b, Ref r) noexcept {
  WORT_DCHECK(art_engine::type_of(n) == kType && r != art_engine::kNull && find(n, b) == art_engine::kNull);
  Node16* x = as16(n);
  const std::uint16_t bm = x->bitmap;
  if (bm == 0xffff) return false;
  const unsigned p = static_cast<unsigned>(std::countr_one(bm));
  pm::store(&x->key[p], b);
  pm::store(&x->child[p], r);
  // Key, pointer and new child durable before the bit that makes them valid. key[p] (and
  // child[p] for p < kChildrenInLine0) share line 0 with the bitmap: stores to one line
  // persist in order, so the commit's own write-back carries them (the same-line rule); a
  // pointer in another line is written back here, ordered by the publish's leading fence.
  if (p >= kChildrenInLine0) pm::flush(&x->child[p], sizeof(Ref));
  art_engine::publish_field_cached(&x->bitmap, static_cast<std::uint16_t>(bm | (1u << p)));
  return true;
}

const void* Node16Ops::add_word(const NodeBase* n, std::uint8_t) noexcept {
  return &as16(n)->bitmap;
}

void Node16Ops::remove(NodeBase* n, std::uint8_t b) noexcept {
  WORT_DCHECK(art_engine::type_of(n) == kType);
  Node16* x = as16(n);
  const std::uint16_t bm = x->bitmap;
  const int p = position_of(x, bm, b);
  if (p < 0) return;
  art_engine::commit_field(&x->bitmap, static_cast<std::uint16_t>(bm & ~(1u << p)));
}

bool Node16Ops::check(const NodeBase* n, std::string* why) {
  const Node16* x = as16(n);
  for (std::uint32_t m = x->bitmap; m != 0; m &= m - 1) {
    const unsigned p = static_cast<unsigned>(std::countr_zero(m));
    if ((kit::match16(x->key, x->key[p]) & x->bitmap) != (1u << p))
      return *why = "node16 partial key present twice", false;
    if (x->child[p] == art_engine::kNull) return *why = "node16 null child", false;
  }
  return true;
}

}  // namespace wort::woart
