#include "index/nvtree/nvtree_inner.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <chrono>

#include "pm/check.h"

namespace wort::nvtree {

void Inner::configure(unsigned pln_capacity, unsigned fanout, unsigned fill) noexcept {
  pln_cap_ = pln_capacity;
  fanout_ = fanout;
  fill_ = fill;
}

Sep Inner::make_sep(Key k) {
  Sep s;
  s.prefix = key_prefix(k);
  s.len = static_cast<std::uint32_t>(k.size());
  if (k.size() > kMaxInline) {
    s.arena = static_cast<std::uint32_t>(arena_.size());
    arena_.emplace_back(as_string(k));
  }
  return s;
}

Key Inner::sep_key(const Sep& s, std::array<std::byte, 8>& buf) const noexcept {
  if (s.len <= kMaxInline) {
    for (unsigned i = 0; i < 8; ++i) buf[i] = static_cast<std::byte>(s.prefix >> (56 - 8 * i));
    return {buf.data(), s.len};
  }
  return as_key(arena_[s.arena]);
}

int Inner::compare(const Sep& s, const Probe& p) const noexcept {
  if (s.prefix != p.prefix) return s.prefix < p.prefix ? -1 : 1;
  if (s.len <= kMaxInline && p.key.size() <= kMaxInline)
    return s.len < p.key.size() ? -1 : (s.len > p.key.size() ? 1 : 0);
  std::array<std::byte, 8> buf;
  return compare_keys(sep_key(s, buf), p.key);
}

// The last of keys[1..n) that is <= p, or 0 (the first key is a lower bound only).
unsigned Inner::last_le(const Sep* keys, unsigned n, const Probe& p) const noexcept {
  unsigned lo = 1, hi = n;
  while (lo < hi) {
    const unsigned mid = (lo + hi) / 2;
    if (compare(keys[mid], p) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

void Inner::rebuild(std::vector<LeafRef> leaves) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> arena;  // only the separators still in use
  for (LeafRef& r : leaves) {
    if (r.sep.len <= kMaxInline) continue;
    arena.push_back(std::move(arena_[r.sep.arena]));
    r.sep.arena = static_cast<std::uint32_t>(arena.size() - 1);
  }
  arena_ = std::move(arena);
  plns_.clear();
  levels_.clear();
  for (std::size_t i = 0; i < leaves.size(); i += fill_) {
    Pln p;
    p.sep.reserve(pln_cap_ + 1);
    p.leaf.reserve(pln_cap_ + 1);
    p.live.reserve(pln_cap_ + 1);
    for (std::size_t j = i; j < leaves.size() && j < i + fill_; ++j) {
      p.sep.push_back(leaves[j].sep);
      p.leaf.push_back(leaves[j].leaf);
      p.live.push_back(leaves[j].live);
    }
    plns_.push_back(std::move(p));
  }
  // IN levels, bottom up over the PLNs' first separators, until one node remains.
  std::vector<Sep> below;
  for (const Pln& p : plns_) below.push_back(p.sep[0]);
  std::vector<Level> up;
  while (below.size() > 1) {
    Level lv;
    const std::size_t nodes = (below.size() + fanout_ - 1) / fanout_;
    lv.key.resize(nodes * fanout_);
    lv.count.resize(nodes);
    std::vector<Sep> next;
    for (std::size_t j = 0; j < nodes; ++j) {
      const std::size_t first = j * fanout_;
      const std::size_t n = std::min<std::size_t>(fanout_, below.size() - first);
      for (std::size_t c = 0; c < n; ++c) lv.key[first + c] = below[first + c];
      lv.count[j] = static_cast<std::uint32_t>(n);
      next.push_back(below[first]);
    }
    up.push_back(std::move(lv));
    below = std::move(next);
  }
  levels_.assign(up.rbegin(), up.rend());
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - t0).count();
  ++rebuilds_;
  last_rebuild_ns_ = static_cast<std::uint64_t>(ns);
  rebuild_ns_ += last_rebuild_ns_;
}

Inner::Pos Inner::find(const Probe& p) const noexcept {
  assert(!plns_.empty());
  std::size_t node = 0;
  for (const Level& lv : levels_)
    node = node * fanout_ + last_le(&lv.key[node * fanout_], lv.count[node], p);
  const Pln& pln = plns_[node];
  return {static_cast<std::uint32_t>(node),
          last_le(pln.sep.data(), static_cast<unsigned>(pln.sep.size()), p)};
}

std::uint64_t Inner::predecessor(Pos pos) const noexcept {
  if (pos.idx > 0) return plns_[pos.pln].leaf[pos.idx - 1];
  if (pos.pln > 0) return plns_[pos.pln - 1].leaf.back();
  return 0;
}

void Inner::replace(Pos pos, std::uint64_t left, std::uint32_t left_live, std::uint64_t right,
                    std::uint32_t right_live, const Sep& sep) {
  WORT_DCHECK(pos.pln < plns_.size() && pos.idx < plns_[pos.pln].leaf.size() && left != 0);
  Pln& p = plns_[pos.pln];
  p.leaf[pos.idx] = left;
  p.live[pos.idx] = left_live;
  if (right == 0) return;
  p.sep.insert(p.sep.begin() + pos.idx + 1, sep);
  p.leaf.insert(p.leaf.begin() + pos.idx + 1, right);
  p.live.insert(p.live.begin() + pos.idx + 1, right_live);
  if (p.leaf.size() > pln_cap_) rebuild(all());  // the PLN overflowed: rebuild everything
}

void Inner::erase(Pos pos) {
  WORT_DCHECK(pos.pln < plns_.size() && pos.idx < plns_[pos.pln].leaf.size());
  Pln& p = plns_[pos.pln];
  // The first separator is a lower bound only: the next leaf inherits it.
  if (pos.idx + 1 < p.sep.size() && pos.idx == 0) p.sep[1] = p.sep[0];
  p.sep.erase(p.sep.begin() + pos.idx);
  p.leaf.erase(p.leaf.begin() + pos.idx);
  p.live.erase(p.live.begin() + pos.idx);
  if (p.leaf.empty()) rebuild(all());
}

std::vector<LeafRef> Inner::all() const {
  std::vector<LeafRef> out;
  out.reserve(leaves());
  for (const Pln& p : plns_)
    for (std::size_t i = 0; i < p.leaf.size(); ++i) out.push_back({p.sep[i], p.leaf[i], p.live[i]});
  return out;
}

std::size_t Inner::leaves() const noexcept {
  std::size_t n = 0;
  for (const Pln& p : plns_) n += p.leaf.size();
  return n;
}

std::size_t Inner::in_nodes() const noexcept {
  std::size_t n = 0;
  for (const Level& lv : levels_) n += lv.count.size();
  return n;
}

std::size_t Inner::dram_bytes() const noexcept {
  std::size_t b = plns_.capacity() * sizeof(Pln);
  for (const Pln& p : plns_)
    b += p.sep.capacity() * sizeof(Sep) + p.leaf.capacity() * 8 + p.live.capacity() * 4;
  for (const Level& lv : levels_) b += lv.key.capacity() * sizeof(Sep) + lv.count.capacity() * 4;
  for (const std::string& s : arena_) b += sizeof(std::string) + (s.size() > 15 ? s.capacity() : 0);
  return b;
}

}  // namespace wort::nvtree
