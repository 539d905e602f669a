// baseline/art/sorted_children.h — the sorted key array Node4 and Node16 share.
//
// Both keep `count` (byte, child) pairs in two parallel arrays sorted by byte, so in-order
// iteration is a plain walk; they differ only in capacity and in how find() searches.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "baseline/art/node.h"

namespace wort::art::sorted {

//! Index of the first key >= `from` (== count if none).
template <std::size_t N>
std::size_t lower_bound(const std::array<std::uint8_t, N>& keys, std::size_t count,
                        unsigned from) noexcept {
  std::size_t i = 0;
  while (i < count && keys[i] < from) ++i;
  return i;
}

//! The first child whose byte is >= `from`.
template <std::size_t N>
std::optional<Child> next(const std::array<std::uint8_t, N>& keys,
                          const std::array<Ref, N>& children, std::size_t count,
                          unsigned from) noexcept {
  const std::size_t i = lower_bound(keys, count, from);
  if (i == count) return std::nullopt;
  return Child{keys[i], children[i]};
}

//! Inserts (byte, child) keeping the order (preconditions: count < N, byte absent).
template <std::size_t N>
void insert(std::array<std::uint8_t, N>& keys, std::array<Ref, N>& children, std::size_t count,
            std::uint8_t byte, Ref child) noexcept {
  const std::size_t pos = lower_bound(keys, count, byte);
  for (std::size_t i = count; i > pos; --i) {
    keys[i] = keys[i - 1];
    children[i] = children[i - 1];
  }
  keys[pos] = byte;
  children[pos] = child;
}

//! Removes the entry at `pos` (< count), closing the gap.
template <std::size_t N>
void erase(std::array<std::uint8_t, N>& keys, std::array<Ref, N>& children, std::size_t count,
           std::size_t pos) noexcept {
  for (std::size_t i = pos; i + 1 < count; ++i) {
    keys[i] = keys[i + 1];
    children[i] = children[i + 1];
  }
  keys[count - 1] = 0;
  children[count - 1] = Ref{};
}

}  // namespace wort::art::sorted

namespace wort::art::sorted {

//! Empty if count is within [lo, N], keys strictly ascend and exactly the first count
//! slots hold children; else what is wrong.
template <std::size_t N>
std::string check(const char* name, const std::array<std::uint8_t, N>& keys,
                  const std::array<Ref, N>& children, std::size_t count, std::size_t lo) {
  if (count < lo || count > N)
    return std::string(name) + " count " + std::to_string(count) + " outside [" +
           std::to_string(lo) + ", " + std::to_string(N) + "]";
  for (std::size_t i = 0; i < N; ++i) {
    if (children[i].empty() != (i >= count))
      return std::string(name) + " slot " + std::to_string(i) + " occupancy disagrees with count";
    if (i > 0 && i < count && keys[i - 1] >= keys[i])
      return std::string(name) + " keys not strictly ascending at " + std::to_string(i);
  }
  return {};
}

}  // namespace wort::art::sorted
