#include "baseline/art/node4.h"

#include <cassert>

#include "baseline/art/node16.h"
#include "baseline/art/sorted_children.h"

namespace wort::art {

Node4* Node4::shrunk_from(Arena& arena, const Node16& from) {
  assert(from.count <= kCapacity);
  auto* n = new_node<Node4>(arena);
  copy_header(n, &from);
  for (std::size_t i = 0; i < from.count; ++i) {
    n->keys[i] = from.keys[i];
    n->children[i] = from.children[i];
  }
  n->count = from.count;
  return n;
}

std::optional<Child> Node4::next(unsigned from) const noexcept {
  return sorted::next(keys, children, count, from);
}

void Node4::add(std::uint8_t byte, Ref child) noexcept {
  assert(count < kCapacity);
  sorted::insert(keys, children, count, byte, child);
  ++count;
}

void Node4::remove(std::uint8_t byte) noexcept {
  const std::size_t pos = sorted::lower_bound(keys, count, byte);
  assert(pos < count && keys[pos] == byte);
  sorted::erase(keys, children, count, pos);
  --count;
}

}  // namespace wort::art

namespace wort::art {

std::string Node4::invariant_error() const {
  return sorted::check("node4", keys, children, count, 1);
}

}  // namespace wort::art
