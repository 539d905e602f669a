// roart/roart_node.h — inner nodes N4/N16/N48/N256: building, child search, in-place add
// and remove with their commit stores, and the rebuild of the volatile metadata (selective
// metadata persistence) from the persistent entries.
#pragma once

#include <cstddef>
#include <cstdint>

#include "index/roart/roart_layout.h"

namespace wort::roart {

//! Children by key byte, ascending (at most 256).
struct Children {
  std::uint8_t byte[256];
  Ref ref[256];
  unsigned n = 0;
  //! Inserts keeping the bytes ascending (precondition: b not present, n < 256).
  void insert(std::uint8_t b, Ref r) noexcept;
  //! Removes byte b if present.
  void erase(std::uint8_t b) noexcept;
};

//! Where a child reference lives: a Zentry (N4/N16/N48) or a plain reference (N256, eok,
//! anchor). The commit of a replacement keeps a Zentry's used flag and key byte.
struct ChildSlot {
  std::uint64_t* word = nullptr;
  bool zentry = false;
  Ref get() const noexcept { return zentry ? zentry_ref(*word) : *word; }
  std::uint64_t encode(Ref r) const noexcept { return zentry ? (*word & ~kRefMask) | r : r; }
};

//! Per-operation switches the tree passes down (its create-time flags).
struct NodeFlags {
  bool entry_compression = true;
  bool selective_persist = true;
};

std::size_t node_bytes(NodeType t) noexcept;
const char* node_name(NodeType t) noexcept;
unsigned node_capacity(NodeType t) noexcept;
bool is_inner_type(NodeType t) noexcept;
//! The smallest type that holds n children.
NodeType type_for(unsigned n) noexcept;

//! Writes a fresh node image into `dst` (unreachable memory, node_bytes(t) long): header,
//! children in ascending byte order, volatile metadata for generation `gen`; writes it back
//! (no fence: the publishing commit fences).
void build_node(void* dst, NodeType t, std::uint32_t level, const PrefixWord& prefix, Ref eok,
                const Children& c, std::uint64_t gen) noexcept;

//! Recomputes count, next_pos, N16 keys and N48 index from the entries and stamps the node
//! with `gen` (all volatile stores). next_pos is one PAST the highest used slot (the
//! authors' release set it to the highest used slot: the next add overwrote that child).
void rebuild_node_meta(NodeBase* n, std::uint64_t gen) noexcept;

//! The slot holding the child for byte b, or {nullptr}. Uses the volatile metadata: the
//! node must be current (generation == pool generation).
ChildSlot find_child(NodeBase* n, std::uint8_t b) noexcept;

//! Children in ascending byte order from the persistent entries alone (no metadata).
void collect_children(const NodeBase* n, Children& out) noexcept;

//! Number of used entries counted from the persistent words (recovery, verify).
unsigned count_entries(const NodeBase* n) noexcept;

//! Adds child r under byte b in place if a slot is free: the commit is pm::publish of the
//! Zentry (N4/N16/N48) or reference (N256); the fence first orders the new leaf or array
//! the caller wrote back. Returns false (nothing written) if the node is full.
bool add_child_in_place(NodeBase* n, std::uint8_t b, Ref r, NodeFlags f) noexcept;

//! Clears the entry at `s` (byte b): commit pm::commit(entry, 0), then the metadata.
void remove_child_in_place(NodeBase* n, ChildSlot s, std::uint8_t b, NodeFlags f) noexcept;

}  // namespace wort::roart
