#include "baseline/art/node16.h"

#include <bit>
#include <cassert>

#include "baseline/art/node4.h"
#include "baseline/art/node48.h"
#include "baseline/art/sorted_children.h"
#include "index/kit/match16.h"

namespace wort::art {

Node16* Node16::grown_from(Arena& arena, const Node4& from) {
  auto* n = new_node<Node16>(arena);
  copy_header(n, &from);
  for (std::size_t i = 0; i < from.count; ++i) {
    n->keys[i] = from.keys[i];
    n->children[i] = from.children[i];
  }
  n->count = from.count;
  return n;
}

Node16* Node16::shrunk_from(Arena& arena, const Node48& from) {
  assert(from.count <= kCapacity);
  auto* n = new_node<Node16>(arena);
  copy_header(n, &from);
  for (unsigned b = 0; b < 256; ++b) {
    if (from.child_index[b] == Node48::kEmpty) continue;
    n->keys[n->count] = static_cast<std::uint8_t>(b);  // ascending b keeps keys sorted
    n->children[n->count] = from.children[from.child_index[b] - 1];
    ++n->count;
  }
  return n;
}

std::optional<Child> Node16::next(unsigned from) const noexcept {
  return sorted::next(keys, children, count, from);
}

void Node16::add(std::uint8_t byte, Ref child) noexcept {
  assert(count < kCapacity);
  sorted::insert(keys, children, count, byte, child);
  ++count;
}

void Node16::remove(std::uint8_t byte) noexcept {
  const int i = index_of(byte);
  assert(i >= 0);
  sorted::erase(keys, children, count, static_cast<std::size_t>(i));
  --count;
}

}  // namespace wort::art

namespace wort::art {

std::string Node16::invariant_error() const {
  return sorted::check("node16", keys, children, count, kShrinkAt + 1);
}

}  // namespace wort::art
