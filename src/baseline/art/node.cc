#include "baseline/art/node.h"

#include <cassert>
#include <type_traits>

#include "baseline/art/nodes.h"

namespace wort::art {

// Calls fn with `n` cast to its concrete type.
template <class N, class Fn>
static decltype(auto) dispatch(N* n, Fn&& fn) {
  constexpr bool kConst = std::is_const_v<N>;
  using N4 = std::conditional_t<kConst, const Node4, Node4>;
  using N16 = std::conditional_t<kConst, const Node16, Node16>;
  using N48 = std::conditional_t<kConst, const Node48, Node48>;
  using N256 = std::conditional_t<kConst, const Node256, Node256>;
  switch (n->type) {
    case NodeType::node4: return fn(static_cast<N4*>(n));
    case NodeType::node16: return fn(static_cast<N16*>(n));
    case NodeType::node48: return fn(static_cast<N48*>(n));
    case NodeType::node256: break;
  }
  return fn(static_cast<N256*>(n));
}

std::optional<Child> next_child(const Node* n, unsigned from) noexcept {
  return dispatch(n, [from](auto* x) { return x->next(from); });
}

bool is_full(const Node* n) noexcept {
  switch (n->type) {
    case NodeType::node4: return n->count == Node4::kCapacity;
    case NodeType::node16: return n->count == Node16::kCapacity;
    case NodeType::node48: return n->count == Node48::kCapacity;
    case NodeType::node256: return false;
  }
  return false;
}

void add_child(Node* n, std::uint8_t byte, Ref child) noexcept {
  assert(!is_full(n) && find_child(n, byte) == nullptr);
  dispatch(n, [&](auto* x) { x->add(byte, child); });
}

void remove_child(Node* n, std::uint8_t byte) noexcept {
  dispatch(n, [byte](auto* x) { x->remove(byte); });
}

Node* grow(Arena& arena, Node* n) {
  assert(is_full(n));
  Node* bigger = nullptr;
  switch (n->type) {
    case NodeType::node4: bigger = Node16::grown_from(arena, *static_cast<Node4*>(n)); break;
    case NodeType::node16: bigger = Node48::grown_from(arena, *static_cast<Node16*>(n)); break;
    case NodeType::node48: bigger = Node256::grown_from(arena, *static_cast<Node48*>(n)); break;
    case NodeType::node256: assert(false && "a Node256 never grows"); return n;
  }
  free_node(arena, n);
  return bigger;
}

bool should_shrink(const Node* n) noexcept {
  switch (n->type) {
    case NodeType::node4: return false;  // collapsed by the tree instead
    case NodeType::node16: return n->count <= Node16::kShrinkAt;
    case NodeType::node48: return n->count <= Node48::kShrinkAt;
    case NodeType::node256: return n->count <= Node256::kShrinkAt;
  }
  return false;
}

Node* shrink(Arena& arena, Node* n) {
  assert(should_shrink(n));
  Node* smaller = nullptr;
  switch (n->type) {
    case NodeType::node4: return n;
    case NodeType::node16: smaller = Node4::shrunk_from(arena, *static_cast<Node16*>(n)); break;
    case NodeType::node48: smaller = Node16::shrunk_from(arena, *static_cast<Node48*>(n)); break;
    case NodeType::node256: smaller = Node48::shrunk_from(arena, *static_cast<Node256*>(n)); break;
  }
  free_node(arena, n);
  return smaller;
}

Node* make_node4(Arena& arena) { return new_node<Node4>(arena); }

void free_node(Arena& arena, Node* n) noexcept {
  dispatch(n, [&arena](auto* x) {
    using T = std::remove_pointer_t<decltype(x)>;
    x->~T();
    arena.release(x, kNodeBlock<T>);
  });
}

std::size_t node_bytes(const Node* n) noexcept {
  return dispatch(n, [](auto* x) { return sizeof(*x); });
}

std::string_view type_name(NodeType t) noexcept {
  switch (t) {
    case NodeType::node4: return "node4";
    case NodeType::node16: return "node16";
    case NodeType::node48: return "node48";
    case NodeType::node256: return "node256";
  }
  return "?";
}

void copy_header(Node* dst, const Node* src) noexcept {
  dst->prefix_len = src->prefix_len;
  dst->prefix = src->prefix;
  dst->terminal = src->terminal;
}

}  // namespace wort::art

namespace wort::art {

std::string invariant_error(const Node* n) {
  if (n->entries() < 2)
    return std::string(type_name(n->type)) + " with " + std::to_string(n->entries()) +
           " entries (should have been collapsed)";
  return dispatch(n, [](auto* x) { return x->invariant_error(); });
}

}  // namespace wort::art
