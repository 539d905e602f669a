#include "index/art/node16.h"

#include <cassert>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "index/art/node4.h"
#include "index/art/node48.h"
#include "index/art/sorted_children.h"

namespace wort::art {

Node16* Node16::grown_from(const Node4& from) {
  auto* n = new Node16;
  copy_header(n, &from);
  for (std::size_t i = 0; i < from.count; ++i) {
    n->keys[i] = from.keys[i];
    n->children[i] = from.children[i];
  }
  n->count = from.count;
  return n;
}

Node16* Node16::shrunk_from(const Node48& from) {
  assert(from.count <= kCapacity);
  auto* n = new Node16;
  copy_header(n, &from);
  for (unsigned b = 0; b < 256; ++b) {
    if (from.child_index[b] == Node48::kEmpty) continue;
    n->keys[n->count] = static_cast<std::uint8_t>(b);  // ascending b keeps keys sorted
    n->children[n->count] = from.children[from.child_index[b] - 1];
    ++n->count;
  }
  return n;
}

int Node16::index_of(std::uint8_t byte) const noexcept {
#if defined(__SSE2__)
  // Compare all 16 key bytes at once; mask off slots past count.
  const __m128i needle = _mm_set1_epi8(static_cast<char>(byte));
  const __m128i hay = _mm_loadu_si128(reinterpret_cast<const __m128i*>(keys.data()));
  const unsigned hits = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(needle, hay))) &
                        ((1u << count) - 1u);
  return hits != 0 ? __builtin_ctz(hits) : -1;
#else
  for (std::size_t i = 0; i < count; ++i) {
    if (keys[i] == byte) return static_cast<int>(i);
  }
  return -1;
#endif
}

Ref* Node16::find(std::uint8_t byte) noexcept {
  const int i = index_of(byte);
  return i < 0 ? nullptr : &children[static_cast<std::size_t>(i)];
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
