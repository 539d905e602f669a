// index/nvtree/nvtree_inner.h — NV-Tree's DRAM inner structure: parent-of-leaf nodes (PLNs,
// each a sorted run of (separator, leaf) pairs) under contiguous inner-node (IN) levels
// addressed by index arithmetic (node j of a level has children j*F .. j*F+F-1 below), as
// in the CSB+-tree NV-Tree builds on. Nothing here is persistent: it is rebuilt from the
// leaf list at open, and rebuilt whole whenever a PLN overflows (the design's known cost,
// counted in rebuilds() / rebuild_ns()).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "index/nvtree/nvtree_key.h"

namespace wort::nvtree {

//! A separator: leaf i of a PLN holds keys in [sep[i], sep[i+1]); the first is a lower
//! bound only. Keys longer than 8 bytes live in the index's arena.
struct Sep {
  std::uint64_t prefix = 0;
  std::uint32_t len = 0;
  std::uint32_t arena = 0;  //!< index into the arena when len > 8
};

struct LeafRef {
  Sep sep;
  std::uint64_t leaf = 0;
  std::uint32_t live = 0;  //!< live keys in the leaf (so a remove knows it empties it)
};

class Inner {
 public:
  struct Pos {
    std::uint32_t pln = 0, idx = 0;
  };

  void configure(unsigned pln_capacity, unsigned fanout, unsigned fill) noexcept;
  //! Sep owning a copy of `k`.
  Sep make_sep(Key k);
  //! Replaces everything by `leaves` (in key order), `fill` per PLN; timed and counted.
  void rebuild(std::vector<LeafRef> leaves);
  bool empty() const noexcept { return plns_.empty(); }

  //! The PLN slot whose leaf covers p. Precondition: !empty().
  Pos find(const Probe& p) const noexcept;
  std::uint64_t leaf_at(Pos pos) const noexcept { return plns_[pos.pln].leaf[pos.idx]; }
  std::uint32_t& live_at(Pos pos) noexcept { return plns_[pos.pln].live[pos.idx]; }
  //! The leaf before pos in key order, or 0 if pos holds the first leaf.
  std::uint64_t predecessor(Pos pos) const noexcept;
  //! The leaf at pos became `left`; `right` (if non-zero) follows it with separator `sep`.
  //! Rebuilds everything if the PLN overflows.
  void replace(Pos pos, std::uint64_t left, std::uint32_t left_live, std::uint64_t right,
               std::uint32_t right_live, const Sep& sep);
  //! The leaf at pos left the list. Rebuilds everything if its PLN becomes empty.
  void erase(Pos pos);

  //! Every (separator, leaf) in key order.
  std::vector<LeafRef> all() const;
  std::size_t leaves() const noexcept;
  std::size_t plns() const noexcept { return plns_.size(); }
  std::size_t in_nodes() const noexcept;
  //! Levels above a leaf: IN levels + the PLN level.
  std::size_t levels() const noexcept { return levels_.size() + 1; }
  std::size_t dram_bytes() const noexcept;
  //! Key bytes of a separator (inline ones rebuilt into buf).
  Key sep_key(const Sep& s, std::array<std::byte, 8>& buf) const noexcept;
  int compare(const Sep& s, const Probe& p) const noexcept;

  std::uint64_t rebuilds() const noexcept { return rebuilds_; }
  std::uint64_t rebuild_ns() const noexcept { return rebuild_ns_; }
  std::uint64_t last_rebuild_ns() const noexcept { return last_rebuild_ns_; }

 private:
  struct Pln {
    std::vector<Sep> sep;
    std::vector<std::uint64_t> leaf;
    std::vector<std::uint32_t> live;
  };
  struct Level {
    std::vector<Sep> key;          //!< node j's keys at [j*F, j*F + count[j])
    std::vector<std::uint32_t> count;
  };
  unsigned last_le(const Sep* keys, unsigned n, const Probe& p) const noexcept;

  unsigned pln_cap_ = 128, fanout_ = 128, fill_ = 64;
  std::vector<Pln> plns_;
  std::vector<Level> levels_;  //!< top level first; the last level's children are PLNs
  std::vector<std::string> arena_;
  std::uint64_t rebuilds_ = 0, rebuild_ns_ = 0, last_rebuild_ns_ = 0;
};

}  // namespace wort::nvtree
