// roart/roart_check.cc — visit_blocks (the checked walk behind recovery, verify and
// stats), verify() and dump().
//
// verify(), after the checked walk: every leaf's key agrees with the path to it (the bytes
// of the compressed paths and branch bytes above, so order holds), eok keys end exactly at
// their node's level, every array slot's fingerprint matches its key and no key repeats in
// an array, every node has at least two entries and unique key bytes, a prefix word
// describes key bytes [level - len, level) (an interrupted split leaves it shorter than
// level - depth, an interrupted merge longer: both repairable), and for nodes of the
// current generation the volatile metadata equals what the entries give.
#include <algorithm>
#include <bit>
#include <memory>
#include <string>
#include <vector>

#include "index/kit/checked_walk.h"
#include "index/roart/roart_tree.h"
#include "pm/allocator.h"

namespace wort::roart {

Result<void> Roart::visit_blocks(BlockVisitorFn v) const {
  v(pool_.offset_of(anchor_));
  if (auto r = visit_reachable(v); !r) return r;
  epochs_.for_each_retired(v);  // unlinked, not yet freed: still the tree's (epoch.h)
  return {};
}

namespace {
using Hex = kit::CheckedWalk;

//! A leaf word reached at key position `depth`: its block and key fit, the key is at least
//! `depth` bytes long.
void visit_leaf_word(kit::CheckedWalk& w, const Pool& pool, std::uint64_t off, std::uint32_t depth,
                BlockVisitorFn v) {
  if (!w.enter(off, sizeof(Leaf), 16, "leaf")) return;
  const std::uint32_t len = pool.at<Leaf>(off)->key_len;
  if (len < depth || len > kMaxRoartKey) {
    w.fail("leaf at " + Hex::hex(off) + " has a " + std::to_string(len) +
           "-byte key below key position " + std::to_string(depth));
    return;
  }
  if (!w.fits(off, off, leaf_bytes(len), "leaf key")) return;
  v(off);
}

//! A leaf array word: its header, size and lock word; its used slots pushed as leaves.
void visit_array_word(kit::CheckedWalk& w, const Pool& pool, std::uint64_t off, std::uint32_t depth,
                 BlockVisitorFn v) {
  if (!w.enter(off, offsetof(LeafArray, slot), 64, "leaf array")) return;
  const LeafArray* a = pool.at<LeafArray>(off);
  if (a->type != NodeType::leaf_array || !valid_array_cap(a->cap)) {
    w.fail("leaf array at " + Hex::hex(off) + " has type byte " +
           std::to_string(static_cast<unsigned>(a->type)) + ", size " +
           std::to_string(static_cast<unsigned>(a->cap)));
    return;
  }
  if (!w.fits(off, off, array_bytes(a->cap), "leaf array slots")) return;
  if (!w.lock_word(a->lock.get(), off, "lock word")) return;
  v(off);
  for (unsigned i = 0; i < a->cap; ++i) {
    const LeafSlot s = a->slot[i];
    if (s == 0) continue;
    // Readers take the slot's 48 bits as the leaf's offset: one not 16-aligned would
    // let them read a leaf that is not where the walk checked it.
    if ((slot_leaf(s) & kTagMask) != 0) {
      w.fail("slot " + std::to_string(i) + " of leaf array at " + Hex::hex(off) +
             " names offset " + Hex::hex(slot_leaf(s)));
      return;
    }
    w.push(slot_leaf(s) | kTagLeaf, depth);
  }
}

//! An inner node's header: type, size, lock and generation words, a level not below
//! `depth`, an eok that is a leaf; false after a failure.
bool node_header_ok(kit::CheckedWalk& w, const NodeBase* n, std::uint64_t off,
                       std::uint32_t depth) {
  if (!is_inner_type(n->type)) {
    w.fail("node at " + Hex::hex(off) + " has type byte " +
           std::to_string(static_cast<unsigned>(n->type)));
    return false;
  }
  if (!w.fits(off, off, node_bytes(n->type), node_name(n->type))) return false;
  if (!w.lock_word(n->lock.get(), off, "lock word") ||
      !w.tagged_word(n->generation.get(), 0, ~std::uint64_t{0}, off, "metadata generation"))
    return false;
  const std::uint32_t at = n->level;
  if (at < depth || at >= kMaxRoartKey) {
    w.fail("node at " + Hex::hex(off) + " branches at key position " + std::to_string(at) +
           ", below it " + std::to_string(depth));
    return false;
  }
  if (const Ref e = n->eok; e != kNull && !is_leaf(e)) {
    w.fail("eok of node at " + Hex::hex(off) + " is not a leaf");
    return false;
  }
  return true;
}

//! An inner node word: its header, then its eok and children pushed (every Zentry used with
//! its flag, or zero).
void visit_node_word(kit::CheckedWalk& w, const Pool& pool, std::uint64_t off, std::uint32_t depth,
                BlockVisitorFn v) {
  if (!w.enter(off, sizeof(NodeBase), 64, "node")) return;
  const NodeBase* n = pool.at<NodeBase>(off);
  if (!node_header_ok(w, n, off, depth)) return;
  const std::uint32_t at = n->level;
  if (const Ref e = n->eok; e != kNull) w.push(e, at);
  v(off);
  if (n->type != NodeType::n256) {
    const unsigned cap = node_capacity(n->type);
    const auto* e = reinterpret_cast<const Shared<Zentry>*>(
        reinterpret_cast<const std::byte*>(n) + node_bytes(n->type) - 8 * cap);
    // A used Zentry names a child: one whose reference is null (a damaged or torn word)
    // is refused, as the unchecked paths would follow it to offset 0.
    for (unsigned i = 0; i < cap; ++i)
      if (const Zentry z = e[i]; z != 0 && ((z >> 56) != 1 || zentry_ref(z) == kNull)) {
        w.fail("bad Zentry in node at " + Hex::hex(off));
        return;
      }
  }
  Children c;
  collect_children(n, c);
  for (unsigned i = c.n; i-- > 0;)
    if (c.ref[i] != kNull) w.push(c.ref[i], at + 1);
}
}  // namespace

// The walk's level is a key position here, not a tree level: a word pushed at d names a
// subtree whose nodes branch at positions >= d and whose keys are at least d bytes long.
// Writers index the caller's key at a node's level once its compressed path matched, which
// is safe only if levels grow down the tree and every leaf below is that long: a node level
// with one bit flipped (2^30 past its leaves) opened, and the first upsert read past the
// caller's key. Checked here, so open refuses it.
Result<void> Roart::visit_reachable(BlockVisitorFn v) const {
  kit::CheckedWalk w(pool_, "roart");
  return w.run(anchor_->root, [&](std::uint64_t r, std::uint32_t depth) {
    if ((r & ~kRefMask) != 0 || (r & kTagMask) > kTagArray) {
      w.fail("bad reference " + Hex::hex(r));
      return;
    }
    if (is_leaf(r))
      visit_leaf_word(w, pool_, ref_offset(r), depth, v);
    else if (is_array(r))
      visit_array_word(w, pool_, ref_offset(r), depth, v);
    else
      visit_node_word(w, pool_, ref_offset(r), depth, v);
  });
}

struct Roart::CheckState {
  std::uint64_t keys = 0;
};

namespace {
Error bad(const std::string& why) { return Error{Status::corrupt, "roart verify: " + why}; }

//! Out of line: check_node recurses once per level, and the message's temporaries in its
//! frame overflowed the stack on the deepest trees under ASan (long keys).
[[gnu::noinline, gnu::cold]] Error count_mismatch(const NodeBase* n, unsigned entries,
                                                  unsigned level) {
  return bad("volatile count " + std::to_string(n->count) + " != " + std::to_string(entries) +
             " entries (" + node_name(n->type) + " at level " + std::to_string(level) + ")");
}
bool starts_with(Key k, const std::string& path) {
  return k.size() >= path.size() &&
         (path.empty() || std::memcmp(k.data(), path.data(), path.size()) == 0);
}
}  // namespace

Result<void> Roart::check_leaf(const Leaf* l, const std::string& path, CheckState& st) const {
  if (!starts_with(leaf_key(l), path))
    return bad("leaf " + std::string(as_string(leaf_key(l))) + " off its path");
  ++st.keys;
  return {};
}

Result<void> Roart::check_ref(Ref r, unsigned depth, std::string& path, CheckState& st) const {
  if (is_leaf(r)) return check_leaf(leaf(r), path, st);
  if (!is_array(r)) return check_node(node(r), depth, path, st);
  const LeafArray* a = array(r);
  std::uint64_t bits = 0;
  std::vector<Key> keys;
  for (unsigned i = 0; i < a->cap; ++i) {
    const LeafSlot s = a->slot[i];
    if (s == 0) continue;
    bits |= std::uint64_t{1} << i;
    const Leaf* l = slot_leaf_ptr(s);
    if (fingerprint(leaf_key(l)) != slot_fp(s)) return bad("fingerprint mismatch");
    if (auto c = check_leaf(l, path, st); !c) return c;
    keys.push_back(leaf_key(l));
  }
  if (bits == 0) return bad("empty leaf array");
  if (a->generation == gen_ && a->bitmap != bits) return bad("leaf array bitmap != its slots");
  std::sort(keys.begin(), keys.end(), [](Key x, Key y) { return compare_keys(x, y) < 0; });
  for (std::size_t i = 1; i < keys.size(); ++i)
    if (compare_keys(keys[i - 1], keys[i]) == 0) return bad("a key twice in a leaf array");
  return {};
}

Result<void> Roart::check_node(const NodeBase* n, unsigned depth, std::string& path,
                               CheckState& st) const {
  const PrefixWord pw = n->prefix;
  const unsigned level = n->level, plen = pw.len;
  if (level < depth) return bad("node level below its depth");
  if (plen > level) return bad("prefix longer than the level");
  const Leaf* l = any_leaf(pool_.offset_of(n));
  if (l == nullptr || leaf_key(l).size() < level) return bad("node without a leaf that long");
  const Key w = leaf_key(l);
  const std::size_t saved = path.size();
  path.append(reinterpret_cast<const char*>(w.data()) + depth, level - depth);
  for (unsigned i = 0; i < std::min(plen, kStoredPrefix); ++i)
    if (pw.bytes[i] != static_cast<std::uint8_t>(path[level - plen + i]))
      return bad("prefix word disagrees with the keys at level " + std::to_string(level));
  // On the heap: check_node recurses once per level, and a 2.3 KB Children in each frame
  // made a chain of long keys overflow an 8 MB stack under ASan (RoartDiffGen long_keys now
  // passes with a 6 MB stack, not 5; an iterative walk would remove the limit).
  const auto children = std::make_unique<Children>();
  Children& c = *children;
  collect_children(n, c);
  const Ref eok = n->eok;
  if (c.n + (eok != kNull) < 2) return bad("node with fewer than two entries");
  for (unsigned i = 1; i < c.n; ++i)
    if (c.byte[i] == c.byte[i - 1]) return bad("a key byte twice in a node");
  if (n->generation == gen_) {
    if (n->count != c.n) return count_mismatch(n, c.n, level);
    if (n->type == NodeType::n16 || n->type == NodeType::n48 || n->type == NodeType::n4) {
      const auto* e = reinterpret_cast<const Shared<Zentry>*>(
          reinterpret_cast<const std::byte*>(n) + node_bytes(n->type) -
          8 * node_capacity(n->type));
      unsigned next = 0;
      for (unsigned i = 0; i < node_capacity(n->type); ++i) {
        const Zentry z = e[i];
        if (z == 0) continue;
        next = i + 1;
        const std::uint8_t b = zentry_byte(z);
        if (n->type == NodeType::n16 && reinterpret_cast<const Node16*>(n)->keys[i] != b)
          return bad("volatile N16 key byte != entry");
        if (n->type == NodeType::n48 && reinterpret_cast<const Node48*>(n)->index[b] != i + 1)
          return bad("volatile N48 index != entry");
      }
      // next_pos is where the next add goes: never on or below a used slot.
      if (n->next_pos < next || n->next_pos > node_capacity(n->type))
        return bad("volatile next_pos " + std::to_string(n->next_pos) +
                   " is not past the last used slot " + std::to_string(next));
    }
  }
  if (eok != kNull) {
    if (leaf(eok)->key_len != level) return bad("eok key does not end at the level");
    if (auto r = check_leaf(leaf(eok), path, st); !r) return r;
  }
  for (unsigned i = 0; i < c.n; ++i) {
    path.push_back(static_cast<char>(c.byte[i]));
    if (auto r = check_ref(c.ref[i], level + 1, path, st); !r) return r;
    path.pop_back();
  }
  path.resize(saved);
  return {};
}

Result<void> Roart::verify() const {
  if (auto r = visit_blocks([](std::uint64_t) {}); !r) return r;
  if (anchor_->root == kNull) return {};
  CheckState st;
  std::string path;
  return check_ref(anchor_->root, 0, path, st);
}

void Roart::dump_ref(std::ostream& os, Ref r, unsigned indent, int byte) const {
  os << std::string(indent, ' ');
  if (byte >= 0) os << "[" << byte << "] ";
  if (is_leaf(r)) {
    os << "leaf " << as_string(leaf_key(leaf(r))).size() << "B = " << leaf(r)->value.get()
       << "\n";
    return;
  }
  if (is_array(r)) {
    os << "leaf_array (" << count_slots(array(r)) << " of " << unsigned{array(r)->cap}
       << " slots)\n";
    return;
  }
  const NodeBase* n = node(r);
  os << node_name(n->type) << " level " << n->level << " prefix " << n->prefix.get().len
     << " gen " << n->generation.get() << "\n";
  if (const Ref e = n->eok; e != kNull) dump_ref(os, e, indent + 2, -1);
  Children c;
  collect_children(n, c);
  for (unsigned i = 0; i < c.n; ++i) dump_ref(os, c.ref[i], indent + 2, c.byte[i]);
}

void Roart::dump(std::ostream& os) const {
  if (auto r = visit_blocks([](std::uint64_t) {}); !r) {
    os << "roart: " << r.error().message << "\n";
    return;
  }
  os << "roart flags " << flags_ << "\n";
  if (anchor_->root != kNull) dump_ref(os, anchor_->root, 0, -1);
}

}  // namespace wort::roart
