// baseline/art/prefix.h — hybrid path compression and key-byte helpers.
//
// A node's compressed path (its "prefix") may be up to a whole key long (keys of 1 KiB and
// more), so nodes do not store it all. The Leis et al. hybrid scheme: the node keeps the
// full length and the first kInlinePrefix (8) bytes; the rest is read, when needed, from
// any leaf below the node — every leaf there carries the same bytes at the same depth,
// because leaves hold whole keys.
//
//   lookup  optimistic: skips the prefix bytes without comparing them (only prefix_len is
//           used) and confirms the whole key at the leaf (one key compare per lookup, no
//           extra leaf loads). A key that diverges inside a prefix is rejected at the leaf.
//   insert, seek (scan/range)  pessimistic: compare the full prefix (leaf load only when
//           prefix_len > 8), because they must know exactly where the key diverges.
// 8-byte integer keys never need the leaf load: a prefix there is at most 7 bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baseline/art/node.h"
#include "wort/key.h"

namespace wort::art {

//! Byte `i` of a key as an unsigned branch byte.
inline std::uint8_t byte_at(Key k, std::size_t i) noexcept {
  return static_cast<std::uint8_t>(k[i]);
}

//! The smallest key's leaf below `n` (exists: inner nodes are never empty).
const Leaf* min_leaf(const Node* n) noexcept;

//! The node's full prefix bytes, for a node whose prefix starts at key byte `depth`.
//! Points into the node (prefix_len <= 8) or into a leaf below it.
const std::byte* full_prefix(const Node* n, std::size_t depth) noexcept;

//! How many leading prefix bytes of `n` equal key[depth...]; at most
//! min(prefix_len, key.size() - depth). Pessimistic (full prefix). Inline: every insert
//! runs it at every level, and prefixes of up to 8 bytes need no leaf.
inline std::size_t matching_prefix(const Node* n, Key key, std::size_t depth) noexcept {
  const std::size_t left = key.size() - depth;
  const std::size_t limit = n->prefix_len < left ? n->prefix_len : left;
  const std::byte* p = n->prefix_len <= kInlinePrefix ? n->prefix.data() : full_prefix(n, depth);
  const std::byte* q = key.data() + depth;
  std::size_t i = 0;
  while (i < limit && p[i] == q[i]) ++i;
  return i;
}

//! Optimistic check: the key is long enough and its bytes equal the inline part.
bool prefix_may_match(const Node* n, Key key, std::size_t depth) noexcept;

//! Sets the prefix to `len` bytes whose first ones are at `bytes` (only the first
//! min(len, 8) are read).
void set_prefix(Node* n, const std::byte* bytes, std::size_t len) noexcept;

//! Length of the common prefix of a[depth...] and b[depth...].
std::size_t common_prefix(Key a, Key b, std::size_t depth) noexcept;

//! Makes `child`'s prefix parent.prefix + branch byte + child.prefix, for collapsing a
//! one-child `parent` into its slot. Needs only inline bytes: the merged inline part is a
//! prefix of parent.inline + byte + child.inline.
void merge_prefix(const Node* parent, std::uint8_t byte, Node* child) noexcept;

}  // namespace wort::art
