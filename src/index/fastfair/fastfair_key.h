// index/fastfair/fastfair_key.h — key words: inline 8-byte keys and KeyBlocks, and the
// comparison of a search key with a stored key word (see fastfair_layout.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "index/fastfair/fastfair_layout.h"
#include "wort/key.h"

namespace wort::fastfair {

//! A search key, prepared once per operation: its inline word if it has one.
struct SearchKey {
  Key bytes;
  std::uint64_t word = 0;  // the inline word (valid if inl)
  //! Every key word below `lt` is an inline key below this one (the word itself when
  //! inline; 0 otherwise: a key block's word says nothing of its order). The search loops
  //! pass such words with one comparison and call compare() only for the others.
  std::uint64_t lt = 0;
  bool inl = false;

  static SearchKey of(Key k) noexcept {
    SearchKey s;
    s.bytes = k;
    if (k.size() == 8) {
      const std::uint64_t w = key_u64(k);
      if (w < kTagBase) {
        s.word = w;
        s.lt = w;
        s.inl = true;
      }
    }
    return s;
  }
};

//! Resolves key words to bytes (pool base + 8-byte scratch for inline words).
class KeyReader {
 public:
  explicit KeyReader(const std::byte* base) noexcept : base_(base) {}

  const KeyBlock* block(std::uint64_t word) const noexcept {
    return reinterpret_cast<const KeyBlock*>(base_ + (word & kOffsetMask));
  }

  //! The bytes of a (non-empty) key word; an inline word is written into `scratch`.
  Key bytes(std::uint64_t word, std::byte (&scratch)[8]) const noexcept {
    if (!is_indirect(word)) {
      for (int i = 7; i >= 0; --i) {
        scratch[i] = static_cast<std::byte>(word & 0xff);
        word >>= 8;
      }
      return Key{scratch, 8};
    }
    const KeyBlock* b = block(word);
    return Key{reinterpret_cast<const std::byte*>(b + 1), b->len};
  }

  //! compare_keys(s, key of word): <0, 0, >0. `word` is not kEmpty.
  int compare(const SearchKey& s, std::uint64_t word) const noexcept {
    if (s.inl && word < kTagBase) return s.word < word ? -1 : (s.word > word ? 1 : 0);
    std::byte scratch[8];
    return compare_keys(s.bytes, bytes(word, scratch));
  }

  //! Order of two stored key words (neither kEmpty).
  int compare_words(std::uint64_t a, std::uint64_t b) const noexcept {
    if (a == b) return 0;
    if (a < kTagBase && b < kTagBase) return a < b ? -1 : 1;
    std::byte sa[8], sb[8];
    return compare_keys(bytes(a, sa), bytes(b, sb));
  }

 private:
  const std::byte* base_;
};

}  // namespace wort::fastfair
