#include "baseline/art/leaf.h"

#include <cstring>
#include <new>
#include <stdexcept>

namespace wort::art {

void Leaf::too_long() { throw std::length_error("art: key longer than 4 GiB"); }

void Leaf::destroy(Arena& arena, Leaf* l) noexcept {
  const std::size_t bytes = l->bytes();
  l->~Leaf();
  arena.release(l, bytes);
}

}  // namespace wort::art
