// art_engine/node_ops.h — the contracts the ART engine's node types and flavors meet, written
// once as C++20 concepts (as IndexConcept is for indexes), instead of a member list repeated
// in every node header. ArtEngine<F> requires ArtFlavor<F>, so a node type that misses a
// member fails to compile at the flavor, with the member named.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "index/art_engine/art_layout.h"
#include "index/art_engine/entries.h"

namespace wort::art_engine {

// clang-format off
//! Every node type: identity, size, lookups, ordered iteration, building a fresh node from
//! entries (written back, not fenced) and an internal-consistency check (used by verify()
//! and by the checked walk at open).
template <class Ops>
concept NodeOps = requires(const NodeBase* cn, NodeBase* n, std::uint8_t b, unsigned from,
                           ChildFn fn, const NodeHeader& hdr, Ref r, const Entries& e,
                           std::string* why) {
  { Ops::kType } -> std::convertible_to<NodeType>;
  { Ops::kBytes } -> std::convertible_to<std::size_t>;
  { Ops::kCapacity } -> std::convertible_to<unsigned>;
  { Ops::kInPlace } -> std::convertible_to<bool>;
  { Ops::kName } -> std::convertible_to<const char*>;
  { Ops::find(cn, b) } -> std::same_as<Ref>;              // child for b, or kNull (see below)
  { Ops::slot(n, b) } -> std::same_as<Ref*>;              // its pointer word, or nullptr
  { Ops::count(cn) } -> std::same_as<unsigned>;
  { Ops::for_each_from(cn, from, fn) } -> std::same_as<bool>;
  { Ops::build(n, hdr, r, e) };
  { Ops::check(cn, why) } -> std::same_as<bool>;
  // kReusesSlots: the node's in-place add may store a new child's pointer where a reader's
  // older view of the node still names a removed entry (WOART NODE4/NODE16, NODE48: the
  // pointer is stored before the commit word that names it). Such a type's `find` is safe
  // for a lock-free reader: it returns a leaf only after re-reading the entry's commit word
  // (slot word, bitmap, index byte) unchanged since it chose the slot — then the pointer was
  // committed — and otherwise reads the node again. Its `for_each_from` reads the entries
  // once, then each pointer when the walk gets to it (after visiting the subtrees before it:
  // long after, in a scan), and reports it only if the commit word, read again, still names
  // that slot for that key byte and the pointer, read again, is unchanged (sync.h,
  // still_named): else the entry was removed meanwhile and the slot may hold another key
  // byte's child (a leaf, or a node it has split into), even if that byte's entry has gone
  // and the first byte's come back between the walk's loads.
  // `any_child` does not re-check: a reader takes its leaf through `find` again
  // (ArtEngine::checked_leaf).
  { Ops::kReusesSlots } -> std::convertible_to<bool>;
};

//! A node type that adds and removes children in place, each with its own commit store
//! (add: cached, pm::publish / publish_field_cached; remove: pm::commit_nt; see sync.h); false from add means full.
//! add_word(n, b): the word whose store publishes an in-place add under b (the slot word,
//! the bitmap, the index byte, the child word) — what a reader that meets a fresh leaf
//! under b writes back (ArtEngine::help_fresh).
template <class Ops>
concept InPlaceNodeOps = NodeOps<Ops> && Ops::kInPlace &&
    requires(NodeBase* n, const NodeBase* cn, std::uint8_t b, Ref r) {
      { Ops::add(n, b, r) } -> std::same_as<bool>;
      { Ops::remove(n, b) };
      { Ops::add_word(cn, b) } -> std::same_as<const void*>;
    };

//! A copy-on-write node type: every change builds a new node (ArtEngine::rebuild).
template <class Ops>
concept CopyNodeOps = NodeOps<Ops> && !Ops::kInPlace;

//! What a flavor (WOART, ART+CoW) gives the engine: its kind, anchor magic, NODE4/NODE16
//! and whether split/merge rewrite headers in place (repaired from the depth after a crash).
template <class F>
concept ArtFlavor = requires {
  { F::kKind } -> std::convertible_to<std::string_view>;
  { F::kAnchorMagic } -> std::convertible_to<std::uint64_t>;
  { F::kDepthRepair } -> std::convertible_to<bool>;
} && (InPlaceNodeOps<typename F::Node4> || CopyNodeOps<typename F::Node4>)
  && (InPlaceNodeOps<typename F::Node16> || CopyNodeOps<typename F::Node16>);
// clang-format on

//! A node-type byte that no node type claims. Unreachable after the checked walk (which
//! admits only known types): reaching it is a bug, reported and aborted, never a default.
[[noreturn]] void unknown_node_type(NodeType t) noexcept;

}  // namespace wort::art_engine
