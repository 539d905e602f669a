// art_engine/entries.h — a node's children as a sorted DRAM list, the common currency of
// every copy: grow, shrink, copy-on-write edits and path-compression splits all collect a
// node's entries, edit the list and build a fresh node from it.
#pragma once

#include <cstdint>

#include "index/art_engine/art_layout.h"
#include "wort/function_ref.h"

namespace wort::art_engine {

//! Called per child in ascending key-byte order; return false to stop.
using ChildFn = FunctionRef<bool(std::uint8_t, Ref)>;

//! Up to 256 (key byte, child) pairs, ascending by byte.
struct Entries {
  unsigned n = 0;
  std::uint8_t bytes[256];
  Ref refs[256];

  //! Appends; the caller keeps the order ascending.
  void push(std::uint8_t b, Ref r) noexcept {
    bytes[n] = b;
    refs[n] = r;
    ++n;
  }
  //! Inserts keeping the order (b must be absent).
  void insert(std::uint8_t b, Ref r) noexcept {
    unsigned i = n;
    while (i > 0 && bytes[i - 1] > b) {
      bytes[i] = bytes[i - 1];
      refs[i] = refs[i - 1];
      --i;
    }
    bytes[i] = b;
    refs[i] = r;
    ++n;
  }
  //! Removes byte b if present.
  void erase(std::uint8_t b) noexcept {
    unsigned j = 0;
    for (unsigned i = 0; i < n; ++i) {
      if (bytes[i] == b) continue;
      bytes[j] = bytes[i];
      refs[j] = refs[i];
      ++j;
    }
    n = j;
  }
};

}  // namespace wort::art_engine
