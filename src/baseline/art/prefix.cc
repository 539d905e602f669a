#include "baseline/art/prefix.h"

#include <algorithm>
#include <cstring>

#include "baseline/art/leaf.h"

namespace wort::art {

const Leaf* min_leaf(const Node* n) noexcept {
  for (;;) {
    if (n->terminal != nullptr) return n->terminal;  // the terminal sorts first
    const Ref first = next_child(n, 0)->ref;         // non-empty by the node invariant
    if (first.is_leaf()) return first.leaf();
    n = first.node();
  }
}

const std::byte* full_prefix(const Node* n, std::size_t depth) noexcept {
  if (n->prefix_len <= kInlinePrefix) return n->prefix.data();
  return min_leaf(n)->key().data() + depth;
}

bool prefix_may_match(const Node* n, Key key, std::size_t depth) noexcept {
  if (key.size() - depth < n->prefix_len) return false;
  const std::size_t inl = std::min<std::size_t>(n->prefix_len, kInlinePrefix);
  return inl == 0 || std::memcmp(n->prefix.data(), key.data() + depth, inl) == 0;
}

void set_prefix(Node* n, const std::byte* bytes, std::size_t len) noexcept {
  n->prefix_len = static_cast<std::uint32_t>(len);  // keys are < 4 GiB (Leaf::make)
  const std::size_t inl = std::min(len, kInlinePrefix);
  if (inl != 0) std::memmove(n->prefix.data(), bytes, inl);  // may overlap n->prefix
}

std::size_t common_prefix(Key a, Key b, std::size_t depth) noexcept {
  const std::size_t limit = std::min(a.size(), b.size());
  std::size_t i = depth;
  while (i < limit && a[i] == b[i]) ++i;
  return i - depth;
}

void merge_prefix(const Node* parent, std::uint8_t byte, Node* child) noexcept {
  std::array<std::byte, 2 * kInlinePrefix + 1> buf{};
  std::size_t len = std::min<std::size_t>(parent->prefix_len, kInlinePrefix);
  std::memcpy(buf.data(), parent->prefix.data(), len);
  buf[len++] = static_cast<std::byte>(byte);
  const std::size_t child_inl = std::min<std::size_t>(child->prefix_len, kInlinePrefix);
  std::memcpy(buf.data() + len, child->prefix.data(), child_inl);
  // Bytes past the parent's inline part are only right if the parent's prefix fit inline;
  // otherwise set_prefix reads just the first 8, all from the parent. Either way correct.
  const std::size_t full = std::size_t{parent->prefix_len} + 1 + child->prefix_len;
  set_prefix(child, buf.data(), full);
}

}  // namespace wort::art
