#include "index/art/leaf.h"

#include <cstring>
#include <new>
#include <stdexcept>

namespace wort::art {

Leaf* Leaf::make(Arena& arena, Key k, Value v) {
  if (k.size() > UINT32_MAX) throw std::length_error("art: key longer than 4 GiB");
  void* mem = arena.allocate(sizeof(Leaf) + k.size());
  auto* l = new (mem) Leaf;
  l->value = v;
  l->key_len = static_cast<std::uint32_t>(k.size());
  if (!k.empty()) std::memcpy(static_cast<std::byte*>(mem) + sizeof(Leaf), k.data(), k.size());
  return l;
}

void Leaf::destroy(Arena& arena, Leaf* l) noexcept {
  const std::size_t bytes = l->bytes();
  l->~Leaf();
  arena.release(l, bytes);
}

}  // namespace wort::art
