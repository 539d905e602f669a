// index/kit/checked_walk.h — the walk over pool blocks that trusts no word it has not
// checked. Every index's recovery trace, verify() and stats() walk through it, so a damaged
// pool ends in a Status::corrupt naming the first bad word, never in a crash or a hang.
//
// What "checked" means, for each block a word names before anything in it is read:
//   - the block lies inside the pool's chunk area and is aligned as the index requires;
//   - it starts a block the allocator has carved, of a size class with room for the bytes
//     the index will read (Allocator::holds);
//   - it was not reached before in this walk (a tree reaches each block once: a second
//     visit is a cycle or a shared block, and a cycle would otherwise never end);
//   - it lies no deeper than the walk's depth bound.
// Generation-tagged words in a checked block (lock words, obsolete marks) are checked with
// `lock_word` / `tagged_word`: at open, none may be held or obsolete in the open's generation.
// Fields read from a checked block that steer the walk (a type byte, a key length, a
// count) are the index's to check, with `fits` for a length read from the block and
// `fail` for anything else; the walk stops at the first failure.
//
// Use (in an index's visit_blocks, say):
//
//   kit::CheckedWalk w(pool, "wort");
//   return w.run(anchor->root, [&](std::uint64_t word, std::uint32_t level) {
//     const std::uint64_t off = word & ~kLeafTag;
//     if (!w.enter(off, sizeof(LeafHeader), 8, "leaf")) return;   // checked, marked
//     ...read the block, check its fields...
//     visit(off);                                                  // allocator trace
//     for (child words c, in reverse key order) w.push(c, level + 1);
//   });
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "index/kit/zeroed_array.h"
#include "pm/allocator.h"
#include "pm/pool_layout.h"
#include "wort/pool.h"
#include "wort/status.h"

namespace wort::kit {

//! Bounds and block checks of pool offsets, without a walk's bookkeeping (readers that
//! validate a single word: a root pointer, a value that names a block).
class BlockCheck {
 public:
  explicit BlockCheck(const Pool& pool) noexcept : pool_(pool) {}
  //! True if `off` is aligned to `align` and starts a carved allocator block with room for
  //! `len` bytes (which also puts it inside the chunk area).
  bool holds(std::uint64_t off, std::size_t len, std::size_t align) const noexcept {
    return off != 0 && align != 0 && off % align == 0 && pool_.contains(off, len) &&
           pool_.allocator().holds(off, len);
  }
  const Pool& pool() const noexcept { return pool_; }

 private:
  const Pool& pool_;
};

//! A depth-first walk over pool words with every word checked before it is followed.
class CheckedWalk {
 public:
  //! Paths deeper than this are reported as corrupt. No index here is deeper than a key is
  //! long in bits; 1 << 16 levels covers a 8 KiB key at one bit per level.
  static constexpr std::uint32_t kDefaultMaxDepth = 1u << 16;

  CheckedWalk(const Pool& pool, std::string_view who,
              std::uint32_t max_depth = kDefaultMaxDepth)
      : check_(pool), who_(who), max_depth_(max_depth),
        base_(pool.header().first_chunk_offset),
        seen_(((pool.size() - base_) / kGranule + 63) / 64) {}

  //! Checks the block at `off` (see the file comment) and marks it reached. On failure
  //! records why (the walk stops) and returns false; the caller returns without reading.
  bool enter(std::uint64_t off, std::size_t len, std::size_t align, std::string_view what) {
    if (failed()) return false;
    if (!check_.holds(off, len, align))
      return fail(std::string(what) + " at " + hex(off) + " is not a " + std::to_string(len) +
                  "-byte, " + std::to_string(align) + "-aligned block of this pool");
    const std::uint64_t g = (off - base_) / kGranule;  // holds(): off is in the chunk area
    std::uint64_t& word = seen_.data()[g / 64];
    const std::uint64_t bit = 1ull << (g % 64);
    if (word & bit) return fail(std::string(what) + " at " + hex(off) + " reached twice (a cycle?)");
    word |= bit;
    return true;
  }

  //! Checks that [off, off + len) lies inside the block entered at `block` (a length
  //! or count read from the block itself). On failure records why and returns false.
  bool fits(std::uint64_t block, std::uint64_t off, std::uint64_t len, std::string_view what) {
    if (failed()) return false;
    const std::uint64_t size = check_.pool().allocator().block_size(block);
    if (off < block || len > size || off - block > size - len)
      return fail(std::string(what) + " of the block at " + hex(block) + " runs past its " +
                  std::to_string(size) + " bytes");
    return true;
  }

  //! Checks a generation-tagged word read from the block entered at `block`: a writers'
  //! lock word (index/kit/gen_lock.h: the tag above bit `shift`, flag bits `flags`
  //! below) or an obsolete mark. While the open's trace is pending, no word can carry this
  //! session's generation yet, so one held or marked obsolete in it is damage: opened, it
  //! stopped every writer that reached it (a crafted word with the generation the open was
  //! about to take: the session-18 audit). Any other tag is let through: such a word is
  //! volatile and never written back, so after a crash its durable bytes may be anything the
  //! block held before (the crash simulator's junk), and a tag other than the session's
  //! means free. (A stale value that happens to equal this open's held word is refused
  //! here too, where it would have hung the first writer.) On failure records why.
  bool tagged_word(std::uint64_t w, unsigned shift, std::uint64_t flags, std::uint64_t block,
                   std::string_view what) {
    if (failed()) return false;
    const Pool& pool = check_.pool();
    const std::uint64_t gen = pool.generation();
    if (pool.allocator().trace_pending() && w >> shift == gen && (w & flags) != 0)
      return fail(std::string(what) + " of the block at " + hex(block) + " is " + hex(w) +
                  ": held or obsolete in generation " + std::to_string(gen) +
                  ", this open's own");
    return true;
  }
  //! tagged_word for a kit::gen_lock word (tag above bit 2; locked and obsolete below).
  bool lock_word(std::uint64_t w, std::uint64_t block, std::string_view what) {
    return tagged_word(w, 2, 3, block, what);
  }

  //! Records a problem the index found in a checked block; returns false.
  bool fail(std::string why) {
    if (!failed()) error_ = Error{Status::corrupt, who_ + ": " + std::move(why)};
    return false;
  }

  //! Queues `word` to be expanded at `level`. Words pop in reverse push order (LIFO).
  void push(std::uint64_t word, std::uint32_t level) {
    if (failed()) return;
    if (level > max_depth_) {
      fail("a path deeper than " + std::to_string(max_depth_) + " levels");
      return;
    }
    stack_.push_back({word, level});
  }

  bool failed() const noexcept { return error_.code != Status::ok; }

  //! Expands `root` (if non-zero) and every word pushed since, until the stack is empty or
  //! a check fails. expand(word, level) enters, reads and pushes.
  template <class Expand>
  Result<void> run(std::uint64_t root, Expand&& expand) {
    if (root != 0) push(root, 0);
    while (!stack_.empty() && !failed()) {
      const Item it = stack_.back();
      stack_.pop_back();
      expand(it.word, it.level);
    }
    stack_.clear();
    if (failed()) return error_;
    return {};
  }

  static std::string hex(std::uint64_t v) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    do {
      s.insert(s.begin(), digits[v & 15]);
      v >>= 4;
    } while (v);
    return "0x" + s;
  }

 private:
  static constexpr std::uint64_t kGranule = 16;  // the allocator's smallest block alignment
  struct Item {
    std::uint64_t word;
    std::uint32_t level;
  };
  BlockCheck check_;
  std::string who_;
  std::uint32_t max_depth_;
  std::uint64_t base_;  // the chunk area's first byte: every block lies at or past it
  ZeroedArray<std::uint64_t> seen_;  // one bit per 16-byte granule of the chunk area (zeroed_array.h)
  std::vector<Item> stack_;
  Error error_;
};

}  // namespace wort::kit
