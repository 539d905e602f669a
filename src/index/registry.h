// index/registry.h — make or open an index by name.
//
// Each index folder registers itself with WORT_REGISTER_INDEX(Class) in one .cc file; the
// index libraries are CMake OBJECT libraries, so the registrar objects are always linked.
#pragma once

#include <functional>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wort/index.h"

namespace wort::registry {

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

struct Entry {
  std::string name;
  //! False for an index that keeps nothing in the pool (the volatile `art`): the shared
  //! persistence tests (damaged pools, failure injection, crash) skip it.
  bool persistent = true;
  //! True for an index whose operations may be called from many threads at once
  //! (T::kConcurrent): `wort bench --threads N` then calls it without its serialising lock.
  bool concurrent = false;
  //! T::kMaxKeySize: the longest key the kind stores (Index::max_key_size).
  std::size_t max_key_size = kMaxKeyLength;
  std::function<Result<std::unique_ptr<Index>>(Pool&, const IndexOptions&)> create;
  std::function<Result<std::unique_ptr<Index>>(Pool&)> open;
  //! T::open_instant(pool) if the class has one (serves before the recovery trace ends:
  //! OpenOptions::instant_restart), else empty.
  std::function<Result<std::unique_ptr<Index>>(Pool&)> open_instant;
  //! Looks up every key, in order, on the concrete class behind `idx` (made by this
  //! entry's create/open): one dynamic_cast, then lookup_each on T, a non-virtual,
  //! inlinable T::lookup per key. The benchmark compares it with lookup_each on `Index`
  //! (the same loop, a virtual call per key) to measure the type-erased handle's overhead.
  std::function<LookupTally(const Index&, const PackedKeys&)> lookup_direct;
  //! The same on the concrete class, each lookup's key chosen through the previous
  //! lookup's value (lookup_chained): one lookup's latency, not a loop's throughput.
  std::function<LookupTally(const Index&, const PackedKeys&)> lookup_chained;
};

//! Adds an entry (called from static registrars; names must be unique).
void add(Entry e);
//! The entry named `name`, or nullptr.
const Entry* find(std::string_view name);
//! Every entry, sorted by name.
std::vector<const Entry*> all();

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

//! Entry::lookup_direct and Entry::lookup_chained for index class T: the lookup loop `Loop`
//! (lookup_each or lookup_chained) run on the concrete class behind the handle.
template <IndexConcept T, LookupTally (*Loop)(const T&, const PackedKeys&)>
LookupTally on_concrete(const Index& idx, const PackedKeys& keys) {
  return Loop(dynamic_cast<const IndexAdapter<T>&>(idx).impl(), keys);
}

//! T::kPersistent if the class declares it, else true.
template <class T>
constexpr bool is_persistent() {
  if constexpr (requires { T::kPersistent; }) return T::kPersistent;
  else return true;
}

//! T::kConcurrent if the class declares it, else false.
template <class T>
constexpr bool is_concurrent() {
  if constexpr (requires { T::kConcurrent; }) return T::kConcurrent;
  else return false;
}

//! Entry::open_instant for index class T: T::open_instant if it has one.
template <IndexConcept T>
std::function<Result<std::unique_ptr<Index>>(Pool&)> open_instant_of() {
  if constexpr (requires(Pool& p) { T::open_instant(p); })
    return [](Pool& p) { return adapt<T>(T::open_instant(p)); };
  else
    return {};
}

template <IndexConcept T>
struct Registrar {
  Registrar() {
    add(Entry{std::string(T::kKind), is_persistent<T>(), is_concurrent<T>(), T::kMaxKeySize,
              [](Pool& p, const IndexOptions& o) { return adapt<T>(T::create(p, o)); },
              [](Pool& p) { return adapt<T>(T::open(p)); }, open_instant_of<T>(),
              &on_concrete<T, &lookup_each<T>>, &on_concrete<T, &lookup_chained<T>>});
  }
};

}  // namespace wort::registry

#define WORT_REGISTER_INDEX_CAT2(a, b) a##b
#define WORT_REGISTER_INDEX_CAT(a, b) WORT_REGISTER_INDEX_CAT2(a, b)
//! Registers a concrete index class under T::kKind.
#define WORT_REGISTER_INDEX(T)                                                   \
  static ::wort::registry::Registrar<T> WORT_REGISTER_INDEX_CAT(wort_registrar_, \
                                                                __LINE__)
