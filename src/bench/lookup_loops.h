// bench/lookup_loops.h — the benchmark's lookup loops: every key looked up in order through
// wort::Index (a virtual call per key) or on the concrete class (an inlinable call), and the
// chained loop whose each lookup waits for the one before (one lookup's latency). The
// search-virtual, search-direct and search-chained phases of `wort bench` and
// tools/lookup_rounds.cc run them.
//
// The loops on a concrete class need the class: src/bench/lookup_loops.cc instantiates them
// for every index kind of the tree (it includes their headers); a kind defined elsewhere (a
// test's toy index) adds its own with WORT_BENCH_LOOKUPS(Class). A kind with none gets no
// search-direct or search-chained phase.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "wort/index.h"

namespace wort::bench {

//! Keys stored back to back, as the benchmark keeps them: key i is
//! bytes[offsets[i], offsets[i + 1]) (so `offsets` has count + 1 entries).
struct PackedKeys {
  const std::byte* bytes = nullptr;
  const std::size_t* offsets = nullptr;
  std::size_t count = 0;

  Key operator[](std::size_t i) const noexcept {
    return {bytes + offsets[i], offsets[i + 1] - offsets[i]};
  }
};

//! What a lookup loop found: keys present, and the sum of their values (a checksum that
//! also keeps the compiler from dropping the lookups).
struct LookupTally {
  std::uint64_t found = 0;
  std::uint64_t value_sum = 0;
};

//! Looks up every key with `ix.lookup`, in order. `Ix` is a concrete index class (a
//! direct call) or `Index` (a virtual call): one loop for both, so that timing the two
//! differs only in the call.
template <class Ix>
LookupTally lookup_each(const Ix& ix, const PackedKeys& keys) {
  LookupTally t;
  for (std::size_t i = 0; i < keys.count; ++i) {
    if (const std::optional<Value> v = ix.lookup(keys[i])) {
      ++t.found;
      t.value_sum += *v;
    }
  }
  return t;
}

//! 0, computed from v: a data dependency the compiler cannot see through and the core
//! cannot skip (`and $0` is not a zeroing idiom, unlike xor or sub of a register with itself).
inline std::uint64_t zero_depending_on(std::uint64_t v) noexcept {
#if defined(__x86_64__)
  asm("andq $0, %0" : "+r"(v));
  return v;
#else
  volatile std::uint64_t zero = 0;  // an opaque zero; the dependency is then only the add
  return v * zero;
#endif
}

//! Looks up every key with `ix.lookup`, in order, the address of each key computed from the
//! previous lookup's value (plus a zero that depends on it): no lookup can start before the
//! one before it has read its leaf. A loop of independent lookups (lookup_each) lets the
//! core overlap one lookup's cache misses with the next one's, so its time per lookup is a
//! throughput; this loop's is the latency of one lookup, as a lone request sees it (and as
//! the bench's sampled latencies, each timed between two clock reads, measure it).
template <class Ix>
LookupTally lookup_chained(const Ix& ix, const PackedKeys& keys) {
  LookupTally t;
  std::uint64_t dep = 0;
  for (std::size_t i = 0; i < keys.count; ++i) {
    const std::optional<Value> v = ix.lookup(keys[i + dep]);
    if (v) {
      ++t.found;
      t.value_sum += *v;
    }
    dep = zero_depending_on(v.value_or(0));
  }
  return t;
}

//! The loops on the concrete class behind an Index handle made by the kind's registry entry.
struct ConcreteLookups {
  //! lookup_each on the concrete class (one dynamic_cast, then a non-virtual,
  //! inlinable T::lookup per key): search-direct, against lookup_each on `Index`.
  LookupTally (*direct)(const Index&, const PackedKeys&) = nullptr;
  //! lookup_chained on the concrete class: search-chained.
  LookupTally (*chained)(const Index&, const PackedKeys&) = nullptr;
};

//! The concrete loops of index kind `kind`, or nullptr if none were added.
const ConcreteLookups* concrete_lookups(std::string_view kind);
//! Adds the concrete loops of a kind (from WORT_BENCH_LOOKUPS; kinds must be unique).
void add_concrete_lookups(std::string_view kind, ConcreteLookups l);

//! The loop `Loop` (lookup_each or lookup_chained) run on the concrete class T behind `idx`.
template <IndexConcept T, LookupTally (*Loop)(const T&, const PackedKeys&)>
LookupTally on_concrete(const Index& idx, const PackedKeys& keys) {
  return Loop(dynamic_cast<const IndexAdapter<T>&>(idx).impl(), keys);
}

//! ConcreteLookups for index class T.
template <IndexConcept T>
constexpr ConcreteLookups concrete_lookups_of() {
  return {&on_concrete<T, &lookup_each<T>>, &on_concrete<T, &lookup_chained<T>>};
}

template <IndexConcept T>
struct LookupsRegistrar {
  LookupsRegistrar() { add_concrete_lookups(T::kKind, concrete_lookups_of<T>()); }
};

}  // namespace wort::bench

#define WORT_BENCH_LOOKUPS_CAT2(a, b) a##b
#define WORT_BENCH_LOOKUPS_CAT(a, b) WORT_BENCH_LOOKUPS_CAT2(a, b)
//! Adds the concrete lookup loops of index class T (under T::kKind) for the benchmark.
#define WORT_BENCH_LOOKUPS(T)                                                         \
  static ::wort::bench::LookupsRegistrar<T> WORT_BENCH_LOOKUPS_CAT(wort_bench_lookups_, \
                                                                   __LINE__)
