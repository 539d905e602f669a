// index/fptree/fptree_groups.h — leaf groups (paper §4.3, App. B, Alg. 10-13): leaves are
// allocated n at a time in one pool block (a LeafGroup, fptree_layout.h); the groups form a
// persistent list from the anchor's `groups` word; the leaves not in the tree are a DRAM
// vector, rebuilt on open (every leaf of a listed group that the leaf list does not reach
// is free).
//
//   anchor.groups -> G2 -> G1 -> 0        DRAM: free = [G1.3, G2.1, G2.2, G2.3]
//                    |     |                    used = {G1: 3, G2: 1}
//                   [L . . .][L L L .]          (L: a leaf of the tree)
//
// GetLeaf (Alg. 10): pop a free leaf; if none, allocate a group, write its header (next =
// the old list head), write it back, fence, then store_persist(anchor.groups, group). The
// group is linked at the head, not at the tail: one store, so no micro-log. A crash
// before that store leaves the group unreachable and the allocator's trace frees it; a
// crash after it leaves a listed group whose leaves open() finds free.
//
// FreeLeaf (Alg. 12): push the leaf. A group whose last leaf comes back is RELEASED (taken
// out of the list with one store_persist, then freed) — not at once, as the paper does,
// but by the next GetLeaf or open(): FreeLeaf runs after the remove's commit (the leaf
// must be unlinked durably before it is reused), and a store after an operation's commit
// breaks the one-commit rule the crash simulator holds us to. A crash between the unlink
// store and the allocator's free leaves an unreachable block: the trace frees it.
//
// Paper micro-logs not kept, each because our allocator recovers by tracing: the GetLeaf
// log {PNewGroup} (the paper's allocator persists the new block's address into it, and the
// append takes two stores, tail.next and tail) and the FreeLeaf log {PCurrentGroup,
// PPrevGroup} (it lets recovery finish a deallocation the allocator recorded
// persistently). Here each list change is one 8-byte store of allocator metadata, and a
// block that no walk reaches after a crash is free. README "Leaf groups".
//
// Thread safety: one DRAM mutex around everything (the paper keeps groups to its
// single-threaded tree because they are a central synchronisation point; here the tree is
// concurrent and pays that mutex per leaf got or freed).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "index/fptree/fptree_layout.h"
#include "wort/pool.h"
#include "wort/status.h"

namespace wort::fptree_index {

class LeafGroups {
 public:
  LeafGroups(Pool& pool, Anchor* anchor, const GroupGeometry& g) noexcept
      : pool_(pool), anchor_(anchor), g_(g) {}

  bool enabled() const noexcept { return g_.leaves != 0; }
  const GroupGeometry& geometry() const noexcept { return g_; }

  //! Alg. 10: a leaf of a listed group, not in the tree, for the caller to write and link.
  //! Releases emptied groups first. Writes and persists the list (never commits).
  Status get_leaf(std::uint64_t* leaf);
  //! Alg. 12: `leaf` (of a listed group) left the tree durably and no reader holds it.
  void free_leaf(std::uint64_t leaf);
  //! open(): the DRAM state from the list and the leaves of the tree (`in_tree`, any
  //! order); groups with no leaf in the tree are released. Precondition: the checked walk
  //! accepted the list.
  void rebuild(const std::vector<std::uint64_t>& in_tree);

  //! The group holding `leaf` at a leaf position, or 0 (DRAM state; quiescent or locked).
  std::uint64_t group_of(std::uint64_t leaf) const;
  //! verify(): every leaf of every listed group is in the tree (`in_tree`) or free, not
  //! both; the counts agree. Returns a message, empty if consistent. Quiescent tree.
  std::string check(const std::vector<std::uint64_t>& in_tree) const;
  std::uint64_t group_count() const;
  std::uint64_t free_count() const;

 private:
  void release_empty_groups();  // mu_ held
  void release(std::uint64_t group);  // mu_ held; the group has no leaf in use
  std::uint64_t group_of_locked(std::uint64_t leaf) const;

  Pool& pool_;
  Anchor* anchor_;
  GroupGeometry g_;
  mutable std::mutex mu_;
  std::vector<std::uint64_t> free_;            //!< free leaves (a stack)
  std::map<std::uint64_t, std::uint32_t> used_;  //!< group -> leaves in use
  std::vector<std::uint64_t> empty_;           //!< groups whose used count fell to 0
};

}  // namespace wort::fptree_index
