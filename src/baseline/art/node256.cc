#include "baseline/art/node256.h"

#include <cassert>

#include "baseline/art/node48.h"

namespace wort::art {

Node256* Node256::grown_from(Arena& arena, const Node48& from) {
  auto* n = new_node<Node256>(arena);
  copy_header(n, &from);
  for (unsigned b = 0; b < 256; ++b) {
    const std::uint8_t slot = from.child_index[b];
    if (slot != Node48::kEmpty) n->children[b] = from.children[slot - 1u];
  }
  n->count = from.count;
  return n;
}

std::optional<Child> Node256::next(unsigned from) const noexcept {
  for (unsigned b = from; b < 256; ++b) {
    if (!children[b].empty()) return Child{static_cast<std::uint8_t>(b), children[b]};
  }
  return std::nullopt;
}

void Node256::add(std::uint8_t byte, Ref child) noexcept {
  assert(children[byte].empty());
  children[byte] = child;
  ++count;
}

void Node256::remove(std::uint8_t byte) noexcept {
  assert(!children[byte].empty());
  children[byte] = Ref{};
  --count;
}

}  // namespace wort::art

namespace wort::art {

std::string Node256::invariant_error() const {
  std::size_t present = 0;
  for (const Ref& r : children) present += r.empty() ? 0 : 1;
  if (present != count)
    return "node256 holds " + std::to_string(present) + " children, count " +
           std::to_string(count);
  if (count <= kShrinkAt || count > 256)
    return "node256 count " + std::to_string(count) + " outside [41, 256]";
  return {};
}

}  // namespace wort::art
