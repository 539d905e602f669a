// baseline/art/nodes.h — the four node layouts together, and the child search that dispatches
// on the type byte, inline: a lookup runs it once per level, and a call into another
// translation unit per level (plus one into each NodeN::find) cost more than the search.
#pragma once

#include <cstdint>

#include "baseline/art/node.h"
#include "baseline/art/node16.h"
#include "baseline/art/node256.h"
#include "baseline/art/node4.h"
#include "baseline/art/node48.h"

namespace wort::art {

//! The child slot for `byte`, or nullptr.
inline Ref* find_child(Node* n, std::uint8_t byte) noexcept {
  switch (n->type) {
    case NodeType::node4: return static_cast<Node4*>(n)->find(byte);
    case NodeType::node16: return static_cast<Node16*>(n)->find(byte);
    case NodeType::node48: return static_cast<Node48*>(n)->find(byte);
    case NodeType::node256: break;
  }
  return static_cast<Node256*>(n)->find(byte);
}

inline const Ref* find_child(const Node* n, std::uint8_t byte) noexcept {
  return find_child(const_cast<Node*>(n), byte);  // find() does not modify
}

//! The child slot for `byte` in the node `r` refers to, dispatching on the type in r's tag
//! (ref.h): an N48 or N256 is then searched without reading its header.
inline Ref* find_child(Ref r, std::uint8_t byte) noexcept {
  Node* n = r.node();
  switch (static_cast<NodeType>(r.node_type())) {
    case NodeType::node4: return static_cast<Node4*>(n)->find(byte);
    case NodeType::node16: return static_cast<Node16*>(n)->find(byte);
    case NodeType::node48: return static_cast<Node48*>(n)->find(byte);
    case NodeType::node256: break;
  }
  return static_cast<Node256*>(n)->find(byte);
}

}  // namespace wort::art
