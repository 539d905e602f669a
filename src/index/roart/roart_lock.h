// roart/roart_lock.h — writers' lock words (ROWEX, §3.4.1): one V word in every inner node
// and leaf array, and one in DRAM for the anchor's root slot. The word is the kit's
// generation-tagged lock (src/index/kit/gen_lock.h): a restart, which bumps the pool
// generation, never sees one held. `obsolete` is set by the writer that unlinked the block
// (a grown / shrunk / split / merged-away node or array) as it unlocks; a writer that then
// gets the lock restarts from the root. Readers never look at the lock: they are lock-free.
#pragma once

#include <cstdint>

#include "index/kit/gen_lock.h"
#include "index/roart/roart_layout.h"
#include "pm/check.h"

namespace wort::roart {

//! True if `w` is held in generation `gen`.
inline bool lock_held(std::uint64_t w, std::uint64_t gen) noexcept {
  return kit::gen_lock_held(w, gen);
}

//! Takes the lock (spinning while another writer holds it). False, without the lock, if the
//! block is obsolete (unlinked): the caller restarts.
inline bool lock_word(Shared<std::uint64_t>* w, std::uint64_t gen) noexcept {
  return kit::gen_lock(&w->raw, gen);
}

//! Releases the lock; `obsolete` marks the block unlinked for good.
inline void unlock_word(Shared<std::uint64_t>* w, std::uint64_t gen, bool obsolete) noexcept {
  kit::gen_unlock(&w->raw, gen, obsolete);
}

//! The locks one write holds (at most three: the owner of the slot it changes, the node or
//! array that slot names, and an array below that node), taken top-down, released in
//! reverse order when the write ends, each marked obsolete if the write unlinked its block.
class WriteLocks {
 public:
  explicit WriteLocks(std::uint64_t gen) noexcept : gen_(gen) {}
  ~WriteLocks() {
    for (unsigned i = n_; i-- > 0;) unlock_word(w_[i], gen_, obsolete_[i]);
  }
  WriteLocks(const WriteLocks&) = delete;
  WriteLocks& operator=(const WriteLocks&) = delete;

  //! Takes w's lock; false (not held) if its block is obsolete: the write restarts.
  bool lock(Shared<std::uint64_t>* w) noexcept {
    WORT_DCHECK(n_ < 3);  // owner, node, array: a fourth lock is a new write path's bug
    if (!lock_word(w, gen_)) return false;
    w_[n_] = w;
    obsolete_[n_++] = false;
    return true;
  }
  //! The block whose lock word is w (held) has been unlinked.
  void obsolete(Shared<std::uint64_t>* w) noexcept {
    for (unsigned i = 0; i < n_; ++i)
      if (w_[i] == w) obsolete_[i] = true;
  }

 private:
  std::uint64_t gen_;
  Shared<std::uint64_t>* w_[3];  // [0, n_) are held
  bool obsolete_[3];
  unsigned n_ = 0;
};

}  // namespace wort::roart
