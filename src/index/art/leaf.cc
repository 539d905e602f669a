#include "index/art/leaf.h"

#include <cstring>
#include <new>
#include <stdexcept>

namespace wort::art {

Leaf* Leaf::make(Key k, Value v) {
  if (k.size() > UINT32_MAX) throw std::length_error("art: key longer than 4 GiB");
  void* mem = ::operator new(sizeof(Leaf) + k.size());
  auto* l = new (mem) Leaf;
  l->value = v;
  l->key_len = static_cast<std::uint32_t>(k.size());
  if (!k.empty()) std::memcpy(static_cast<std::byte*>(mem) + sizeof(Leaf), k.data(), k.size());
  return l;
}

void Leaf::destroy(Leaf* l) noexcept {
  l->~Leaf();
  ::operator delete(static_cast<void*>(l));
}

}  // namespace wort::art
