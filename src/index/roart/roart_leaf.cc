#include "index/roart/roart_leaf.h"

#include "index/kit/anchor.h"
#include "index/kit/radix_key.h"
#include "pm/allocator.h"
#include "pm/check.h"
#include "pm/persist.h"

namespace wort::roart {

namespace {
std::uint64_t load8(const std::byte* p) noexcept {
  std::uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}
std::uint64_t load4(const std::byte* p) noexcept {
  std::uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}
//! 64x64 -> 128-bit multiply, halves folded (wyhash's mixer: one multiply per 16 bytes).
std::uint64_t mum(std::uint64_t a, std::uint64_t b) noexcept {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<std::uint64_t>(r) ^ static_cast<std::uint64_t>(r >> 64);
}
constexpr std::uint64_t kS0 = 0xa0761d6478bd642full, kS1 = 0xe7037ed1a0b428dbull;
}  // namespace

// Keys of up to 16 bytes cost one multiply (two overlapping loads cover 4..16 bytes), longer
// ones one per 16 bytes plus the last 16. Part of the pool format (fingerprints are stored).
std::uint16_t fingerprint(Key k) noexcept {
  const std::byte* p = k.data();
  const std::size_t n = k.size();
  std::uint64_t h = kS0 ^ n, a, b;
  if (n <= 16) {
    if (n >= 8) {
      a = load8(p);
      b = load8(p + n - 8);
    } else if (n >= 4) {
      a = load4(p);
      b = load4(p + n - 4);
    } else {
      a = n == 0 ? 0
                 : std::uint64_t{static_cast<std::uint8_t>(p[0])} << 16 |
                       std::uint64_t{static_cast<std::uint8_t>(p[n >> 1])} << 8 |
                       static_cast<std::uint8_t>(p[n - 1]);
      b = 0;
    }
  } else {
    std::size_t i = 0;
    for (; i + 16 < n; i += 16) h = mum(load8(p + i) ^ kS1, load8(p + i + 8) ^ h);
    a = load8(p + n - 16);
    b = load8(p + n - 8);
  }
  h = mum(a ^ kS1, b ^ h);
  h = mum(h ^ kS0, h ^ kS1 ^ n);
  return static_cast<std::uint16_t>(h >> 48);
}

std::size_t common_prefix(Key a, Key b, std::size_t from) noexcept {
  return radix::Partials<8>::mismatch(a, b, from);
}

Status make_leaf(Pool& pool, Key k, Value v, std::uint64_t* off) noexcept {
  WORT_DCHECK(k.size() <= kMaxRoartKey);  // put() rejects longer keys (level is 16-bit)
  if (Status s = pool.allocator().allocate(leaf_bytes(k.size()), off); s != Status::ok) return s;
  Leaf* l = pool.at<Leaf>(*off);
  const Leaf head{{v}, static_cast<std::uint32_t>(k.size()), 0};
  pm::copy(l, &head, sizeof head);
  if (!k.empty()) pm::copy(l->key, k.data(), k.size());
  pm::flush(l, leaf_bytes(k.size()));
  return Status::ok;
}

void commit_value(const Pool& pool, Leaf* l, Value v) noexcept {
  kit::commit_value_nt(pool, &l->value.raw, v);
}

}  // namespace wort::roart
