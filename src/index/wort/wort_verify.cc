// WORT verify() and dump().
//
// verify() walks every block from the anchor and checks, for a node reached at depth d
// through a slot of a parent branching at position pb, with R = the smallest key below it:
//   - the block lies in the pool, is aligned, and the walk stays within the pool's capacity
//     (no cycles);
//   - it has at least two children;
//   - its branch position b = depth + prefix_len is >= d, and R has at least b partial keys;
//   - R agrees with the parent's reference key on [0, pb) and has the slot's partial key at
//     pb, so by induction every key below a node shares all partial keys above its branch;
//   - the stored prefix array equals R's partial keys from the header's depth on.
// A header whose depth differs from d (an interrupted split or merge awaiting repair) is
// legal; every other check still applies to it. For a leaf: bounds, key length, and the same
// agreement with its parent's reference key (an end_child leaf ends exactly at pb).
#include <iomanip>
#include <string>
#include <vector>

#include "index/wort/wort_tree.h"
#include "index/wort/wort_walk.h"
#include "pm/allocator.h"

namespace wort {

using namespace wort_index;

namespace {

struct Item {
  std::uint64_t word;
  std::uint32_t depth;   //!< depth the block is reached at
  Key parent_ref;        //!< a key below the parent (empty for the root)
  std::uint32_t parent_branch;
  unsigned slot;         //!< ordered slot in the parent (0 = end_child)
  bool has_parent;
};

class Verifier {
 public:
  Verifier(const Pool& pool, const Blocks& blocks) : pool_(pool), blocks_(blocks) {}

  Result<void> run(std::uint64_t root) {
    if (root != 0) stack_.push_back({root, 0, {}, 0, 0, false});
    const std::uint64_t budget = pool_.size() / 16;
    while (!stack_.empty()) {
      const Item it = stack_.back();
      stack_.pop_back();
      if (++visited_ > budget) return fail(it, "more blocks than the pool can hold (a cycle?)");
      Result<void> r = is_leaf(it.word) ? check_leaf(it) : check_node(it);
      if (!r) return r;
    }
    return {};
  }

 private:
  Result<void> fail(const Item& it, const std::string& what) const {
    return Error{Status::corrupt, "wort verify: block " + std::to_string(block_of(it.word)) +
                                      " at depth " + std::to_string(it.depth) + ": " + what};
  }

  bool valid_leaf_word(std::uint64_t w) const {
    const std::uint64_t off = block_of(w);
    if (off % 16 != 0 || !pool_.contains(off, sizeof(LeafHeader))) return false;
    const auto len = blocks_.leaf(w)->key_len;
    return len <= kMaxKeyLength && pool_.contains(off, leaf_bytes(len));
  }
  bool valid_node_word(std::uint64_t w) const {
    return w % 64 == 0 && pool_.contains(w, sizeof(Node));
  }

  //! The smallest key below a node, checking every block on the way down.
  bool reference_key(std::uint64_t w, Key* out) const {
    for (unsigned steps = 0; w != 0 && !is_leaf(w); ++steps) {
      if (!valid_node_word(w) || steps > kMaxDepth) return false;
      const Node* n = blocks_.node(w);
      std::uint64_t next = 0;
      for (unsigned i = 0; i < kOrderedSlots && next == 0; ++i) next = *ordered_slot(n, i);
      w = next;
    }
    if (w == 0 || !valid_leaf_word(w)) return false;
    *out = leaf_key(blocks_.leaf(w));
    return true;
  }

  //! The key `k` sits correctly in slot it.slot of a parent branching at it.parent_branch.
  bool fits_parent_slot(const Item& it, Key k) const {
    if (!it.has_parent) return true;
    const std::uint32_t pb = it.parent_branch;
    if (Partial::count(k) < pb || Partial::mismatch(k, it.parent_ref, 0) < pb) return false;
    if (it.slot == 0) return Partial::count(k) == pb;
    return Partial::count(k) > pb && Partial::at(k, pb) == it.slot - 1;
  }

  Result<void> check_leaf(const Item& it) {
    if (!valid_leaf_word(it.word)) return fail(it, "leaf out of bounds or misaligned");
    if (!fits_parent_slot(it, leaf_key(blocks_.leaf(it.word))))
      return fail(it, "leaf key does not belong in its slot");
    return {};
  }

  Result<void> check_node(const Item& it) {
    if (!valid_node_word(it.word)) return fail(it, "node out of bounds or misaligned");
    if (it.has_parent && it.slot == 0) return fail(it, "a node in an end_child slot");
    const Node* n = blocks_.node(it.word);
    if (child_count(n) < 2) return fail(it, "node with fewer than two children");
    const HeaderFields h = decode_header(n->header);
    const std::uint32_t b = h.branch();
    if (b < it.depth || b > kMaxDepth) return fail(it, "branch position above the node's depth");
    Key ref;
    if (!reference_key(it.word, &ref)) return fail(it, "bad block on the leftmost path");
    if (Partial::count(ref) < b) return fail(it, "key shorter than the node's branch position");
    if (!fits_parent_slot(it, ref)) return fail(it, "keys do not belong in the parent's slot");
    for (std::uint32_t i = 0; i < h.stored(); ++i) {
      if (Partial::at(ref, h.depth + i) != h.prefix_at(i))
        return fail(it, "prefix array differs from the keys at position " + std::to_string(i));
    }
    for (unsigned i = kOrderedSlots; i-- > 0;) {
      if (const std::uint64_t w = *ordered_slot(n, i); w != 0)
        stack_.push_back({w, b + 1, ref, b, i, true});
    }
    return {};
  }

  const Pool& pool_;
  const Blocks& blocks_;
  std::vector<Item> stack_;
  std::uint64_t visited_ = 0;
};

std::string printable(Key k) {
  std::string s;
  for (std::byte c : k) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && u != '\\') {
      s += static_cast<char>(u);
    } else {
      static const char* hex = "0123456789abcdef";
      s += "\\x";
      s += hex[u >> 4];
      s += hex[u & 15];
    }
  }
  return s;
}

}  // namespace

Result<void> WortTree::verify() const {
  if (anchor_->magic != kAnchorMagic) return Error{Status::corrupt, "wort verify: bad anchor"};
  // Bounds, block starts and cycles first: the Verifier then reads only checked blocks.
  if (auto r = walk_preorder(pool_, blocks_, anchor_->root, [](std::uint64_t, std::uint32_t) {});
      !r)
    return r;
  Verifier v(pool_, blocks_);
  return v.run(anchor_->root);
}

void WortTree::dump(std::ostream& os) const {
  os << "wort tree (" << kSpanBits << "-bit partial keys), anchor @"
     << pool_.offset_of(anchor_) << "\n";
  if (auto r = walk_preorder(pool_, blocks_, anchor_->root, [](std::uint64_t, std::uint32_t) {});
      !r) {
    os << "  (not drawn: " << r.error().message << ")\n";
    return;
  }
  (void)walk_preorder(pool_, blocks_, anchor_->root, [&](std::uint64_t w, std::uint32_t level) {
    os << std::string(2 * level + 2, ' ');
    if (is_leaf(w)) {
      const LeafHeader* l = blocks_.leaf(w);
      os << "leaf @" << block_of(w) << " \"" << printable(leaf_key(l)) << "\" = " << l->value
         << "\n";
      return;
    }
    const Node* n = blocks_.node(w);
    const HeaderFields h = decode_header(n->header);
    os << "node @" << w << " depth " << h.depth << " prefix_len " << h.prefix_len
       << " branch " << h.branch() << " prefix [";
    for (std::uint32_t i = 0; i < h.stored(); ++i) os << std::hex << h.prefix_at(i) << std::dec;
    if (h.prefix_len > h.stored()) os << "...";
    os << "] children " << child_count(n) << "\n";
  });
}

}  // namespace wort
