#include "index/roart/roart_node.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "index/roart/roart_lock.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort::roart {
namespace {

//! Bit i set if keys[i] == b (16 bits).
std::uint32_t match16(const Shared<std::uint8_t>* keys, std::uint8_t b) noexcept {
#if defined(__SSE2__) && !defined(__SANITIZE_THREAD__)
  const __m128i k = _mm_loadu_si128(reinterpret_cast<const __m128i*>(keys));
  const __m128i eq = _mm_cmpeq_epi8(k, _mm_set1_epi8(static_cast<char>(b)));
  return static_cast<std::uint32_t>(_mm_movemask_epi8(eq));
#else
  std::uint32_t m = 0;
  for (unsigned i = 0; i < 16; ++i) m |= std::uint32_t{keys[i].get() == b} << i;
  return m;
#endif
}

//! The Zentry array of an N4/N16/N48 (nullptr for N256).
Shared<Zentry>* zentries(NodeBase* n) noexcept {
  switch (n->type) {
    case NodeType::n4: return reinterpret_cast<Node4*>(n)->entry;
    case NodeType::n16: return reinterpret_cast<Node16*>(n)->entry;
    case NodeType::n48: return reinterpret_cast<Node48*>(n)->entry;
    default: return nullptr;
  }
}
const Shared<Zentry>* zentries(const NodeBase* n) noexcept {
  return zentries(const_cast<NodeBase*>(n));
}

//! Stores a metadata field: volatile under SMP, written back (by flush_meta) without it.
template <class T>
void meta_store(Shared<T>* p, T v, NodeFlags f) noexcept {
  if (f.selective_persist) pm::store_volatile(&p->raw, v);
  else pm::store(&p->raw, v);
}

//! SMP off: writes back the metadata lines an add/remove changed (no fence of its own: the
//! commit's fence orders them).
void flush_meta(NodeBase* n, std::uint8_t b, NodeFlags f) noexcept {
  if (f.selective_persist) return;
  pm::flush(&n->count, 4);  // count, next_pos (and N16 keys: same line)
  if (n->type == NodeType::n48) pm::flush(&reinterpret_cast<Node48*>(n)->index[b], 1);
}

//! Records byte b at slot i in the search metadata (N16 keys, N48 index).
void note_key(NodeBase* n, unsigned i, std::uint8_t b, NodeFlags f) noexcept {
  if (n->type == NodeType::n16) meta_store(&reinterpret_cast<Node16*>(n)->keys[i], b, f);
  if (n->type == NodeType::n48)
    meta_store(&reinterpret_cast<Node48*>(n)->index[b], static_cast<std::uint8_t>(i + 1), f);
}

//! EC off: the key byte persisted apart from the pointer, before it (ART's separate key
//! array; what the Zentry saves). N4/N16 write keys[i], N48 its index byte.
void persist_key_apart(NodeBase* n, unsigned i, std::uint8_t b) noexcept {
  Shared<std::uint8_t>* p = nullptr;
  std::uint8_t v = b;
  if (n->type == NodeType::n4) p = &reinterpret_cast<Node4*>(n)->keys[i];
  if (n->type == NodeType::n16) p = &reinterpret_cast<Node16*>(n)->keys[i];
  if (n->type == NodeType::n48) {
    p = &reinterpret_cast<Node48*>(n)->index[b];
    v = static_cast<std::uint8_t>(i + 1);
  }
  if (p == nullptr) return;
  pm::store(&p->raw, v);
  pm::flush(p, 1);
}

//! A free Zentry slot: next_pos while below capacity, else the first hole; -1 if full.
int free_slot(NodeBase* n) noexcept {
  const unsigned cap = node_capacity(n->type);
  if (n->count >= cap) return -1;
  if (n->next_pos < cap) return n->next_pos;
  const Shared<Zentry>* e = zentries(n);
  for (unsigned i = 0; i < cap; ++i)
    if (e[i].get() == 0) return static_cast<int>(i);
  return -1;
}

}  // namespace

void Children::insert(std::uint8_t b, Ref r) noexcept {
  WORT_DCHECK(n < 256);
  unsigned i = n;
  while (i > 0 && byte[i - 1] > b) {
    byte[i] = byte[i - 1];
    ref[i] = ref[i - 1];
    --i;
  }
  byte[i] = b;
  ref[i] = r;
  ++n;
}

void Children::erase(std::uint8_t b) noexcept {
  for (unsigned i = 0; i < n; ++i) {
    if (byte[i] != b) continue;
    for (unsigned j = i + 1; j < n; ++j) {
      byte[j - 1] = byte[j];
      ref[j - 1] = ref[j];
    }
    --n;
    return;
  }
}

std::size_t node_bytes(NodeType t) noexcept {
  switch (t) {
    case NodeType::n4: return sizeof(Node4);
    case NodeType::n16: return sizeof(Node16);
    case NodeType::n48: return sizeof(Node48);
    case NodeType::n256: return sizeof(Node256);
    case NodeType::leaf_array: return sizeof(LeafArray);
  }
  return 0;
}

const char* node_name(NodeType t) noexcept {
  switch (t) {
    case NodeType::n4: return "node4";
    case NodeType::n16: return "node16";
    case NodeType::n48: return "node48";
    case NodeType::n256: return "node256";
    case NodeType::leaf_array: return "leaf_array";
  }
  return "?";
}

unsigned node_capacity(NodeType t) noexcept {
  switch (t) {
    case NodeType::n4: return 4;
    case NodeType::n16: return 16;
    case NodeType::n48: return 48;
    case NodeType::n256: return 256;
    case NodeType::leaf_array: return kArraySlots;
  }
  return 0;
}

bool is_inner_type(NodeType t) noexcept {
  return t == NodeType::n4 || t == NodeType::n16 || t == NodeType::n48 || t == NodeType::n256;
}

NodeType type_for(unsigned n) noexcept {
  if (n <= 4) return NodeType::n4;
  if (n <= 16) return NodeType::n16;
  if (n <= 48) return NodeType::n48;
  return NodeType::n256;
}

void build_node(void* dst, NodeType t, std::uint32_t level, const PrefixWord& prefix, Ref eok,
                const Children& c, std::uint64_t gen) noexcept {
  WORT_DCHECK(is_inner_type(t) && c.n <= node_capacity(t));
  // References carry a 4-bit tag: blocks are 16-aligned. An eok is a leaf or nothing.
  WORT_DCHECK(dst != nullptr && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0);
  WORT_DCHECK(eok == kNull || is_leaf(eok));
  alignas(64) std::byte img[sizeof(Node256)] = {};
  auto* n = reinterpret_cast<NodeBase*>(img);
  n->prefix.raw = prefix;
  n->level = level;
  n->type = t;
  n->eok.raw = eok;
  if (t == NodeType::n256) {
    for (unsigned i = 0; i < c.n; ++i)
      reinterpret_cast<Node256*>(n)->child[c.byte[i]].raw = c.ref[i];
  } else {
    Shared<Zentry>* e = zentries(n);
    for (unsigned i = 0; i < c.n; ++i) e[i].raw = make_zentry(c.byte[i], c.ref[i]);
  }
  // The metadata is recomputed from the image just as a restart would (one code path).
  n->generation.raw = ~gen;
  const std::size_t bytes = node_bytes(t);
  pm::copy(dst, img, bytes);
  auto* d = static_cast<NodeBase*>(dst);
  rebuild_node_meta(d, gen);  // volatile stores into fresh memory, then written back
  pm::flush(dst, bytes);
}

void rebuild_node_meta(NodeBase* n, std::uint64_t gen) noexcept {
  unsigned count = 0, next = 0;
  if (n->type == NodeType::n256) {
    const Shared<Ref>* c = reinterpret_cast<Node256*>(n)->child;
    for (unsigned i = 0; i < 256; ++i) count += c[i].get() != kNull;
  } else {
    const unsigned cap = node_capacity(n->type);
    Shared<Zentry>* e = zentries(n);
    if (n->type == NodeType::n48) {
      Shared<std::uint8_t>* index = reinterpret_cast<Node48*>(n)->index;
      for (unsigned b = 0; b < 256; ++b)
        if (index[b].get() != 0) pm::store_volatile(&index[b].raw, std::uint8_t{0});
    }
    for (unsigned i = 0; i < cap; ++i) {
      const Zentry z = e[i];
      if (z == 0) continue;
      ++count;
      next = i + 1;  // one past the last used slot
      note_key(n, i, zentry_byte(z), NodeFlags{});
    }
  }
  pm::store_volatile(&n->count.raw, static_cast<std::uint16_t>(count));
  pm::store_volatile(&n->next_pos.raw, static_cast<std::uint16_t>(next));
  // Last, with release: a reader that sees the generation sees the metadata. The lock word
  // is not touched: a concurrent rebuild is latched by it (Roart::touch).
  pm::store_volatile_release(&n->generation.raw, gen);
}

ChildSlot find_child(NodeBase* n, std::uint8_t b) noexcept {
  switch (n->type) {
    case NodeType::n4: {
      Shared<Zentry>* e = reinterpret_cast<Node4*>(n)->entry;
      for (unsigned i = 0; i < 4; ++i) {
        const Zentry z = e[i];
        if (z != 0 && zentry_byte(z) == b) return {&e[i].raw, true};
      }
      return {};
    }
    case NodeType::n16: {
      auto* n16 = reinterpret_cast<Node16*>(n);
      std::uint32_t m = match16(n16->keys, b) & ((1u << n->next_pos) - 1);
      for (; m != 0; m &= m - 1) {
        const unsigned i = static_cast<unsigned>(__builtin_ctz(m));
        const Zentry e = n16->entry[i];
        if (e != 0 && zentry_byte(e) == b) return {&n16->entry[i].raw, true};
      }
      return {};
    }
    case NodeType::n48: {
      auto* n48 = reinterpret_cast<Node48*>(n);
      const unsigned i = n48->index[b];
      if (i == 0 || i > 48) return {};
      const Zentry e = n48->entry[i - 1];  // a reused slot may hold another byte now
      if (e == 0 || zentry_byte(e) != b) return {};
      return {&n48->entry[i - 1].raw, true};
    }
    case NodeType::n256: {
      Shared<Ref>* c = &reinterpret_cast<Node256*>(n)->child[b];
      return c->get() == kNull ? ChildSlot{} : ChildSlot{&c->raw, false};
    }
    case NodeType::leaf_array: break;
  }
  return {};
}

void collect_children(const NodeBase* n, Children& out) noexcept {
  out.n = 0;
  if (n->type == NodeType::n256) {
    const Shared<Ref>* c = reinterpret_cast<const Node256*>(n)->child;
    for (unsigned b = 0; b < 256; ++b) {
      const Ref r = c[b];
      if (r != kNull) {
        out.byte[out.n] = static_cast<std::uint8_t>(b);
        out.ref[out.n++] = r;
      }
    }
    return;
  }
  const Shared<Zentry>* e = zentries(n);
  const unsigned cap = node_capacity(n->type);
  for (unsigned i = 0; i < cap; ++i) {
    const Zentry z = e[i];
    if (z != 0) out.insert(zentry_byte(z), zentry_ref(z));
  }
}

unsigned count_entries(const NodeBase* n) noexcept {
  Children c;
  collect_children(n, c);
  return c.n;
}

bool add_child_in_place(NodeBase* n, std::uint8_t b, Ref r, NodeFlags f) noexcept {
  WORT_DCHECK(is_inner_type(n->type) && r != kNull && (r & ~kRefMask) == 0);
  WORT_DCHECK(find_child(n, b).word == nullptr);  // b is new here (add_child looked, locked)
  WORT_DCHECK(lock_held(n->lock.get(), n->generation.get()));  // the writer holds n
  if (n->type == NodeType::n256) {
    Shared<Ref>* c = &reinterpret_cast<Node256*>(n)->child[b];
    meta_store(&n->count, static_cast<std::uint16_t>(n->count + 1), f);
    flush_meta(n, b, f);
    pm::publish_nt(&c->raw, r);
    return true;
  }
  const int slot = free_slot(n);
  if (slot < 0) return false;
  const unsigned i = static_cast<unsigned>(slot);
  if (!f.entry_compression) persist_key_apart(n, i, b);
  note_key(n, i, b, f);
  meta_store(&n->count, static_cast<std::uint16_t>(n->count + 1), f);
  if (i + 1 > n->next_pos) meta_store(&n->next_pos, static_cast<std::uint16_t>(i + 1), f);
  flush_meta(n, b, f);
  pm::publish_nt(&zentries(n)[i].raw, make_zentry(b, r));
  return true;
}

void remove_child_in_place(NodeBase* n, ChildSlot s, std::uint8_t b, NodeFlags f) noexcept {
  // s is n's used slot for b: a Zentry, or N256's plain reference.
  WORT_DCHECK(s.word != nullptr && s.get() != kNull && s.zentry == (n->type != NodeType::n256));
  WORT_DCHECK(find_child(n, b).word == s.word && n->count > 0);
  WORT_DCHECK(lock_held(n->lock.get(), n->generation.get()));
  if (f.selective_persist) {
    pm::commit_nt(s.word, std::uint64_t{0});  // then the volatile metadata
    pm::store_volatile(&n->count.raw, static_cast<std::uint16_t>(n->count - 1));
    if (n->type == NodeType::n48)
      pm::store_volatile(&reinterpret_cast<Node48*>(n)->index[b].raw, std::uint8_t{0});
    return;
  }
  // SMP off: the persisted count goes first (a store after the commit would make the commit
  // not the operation's last store), written back under the commit's leading fence; a crash
  // between them leaves a count the generation rebuild recomputes. The N48 index byte is
  // left as it is: find_child re-checks the entry's byte, so a stale index finds nothing
  // (and clearing it before the commit would hide the key from readers before it is gone).
  pm::store(&n->count.raw, static_cast<std::uint16_t>(n->count - 1));
  pm::flush(&n->count, 4);
  pm::publish_nt(s.word, std::uint64_t{0});
}

}  // namespace wort::roart
