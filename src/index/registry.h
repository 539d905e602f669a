// index/registry.h — make or open an index by name.
//
// Each index folder registers itself with WORT_REGISTER_INDEX(Class) in one .cc file; the
// index libraries are CMake OBJECT libraries, so the registrar objects are always linked.
#pragma once

#include <functional>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wort/index.h"

namespace wort::registry {

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
};

//! Adds an entry (called from static registrars; names must be unique).
void add(Entry e);
//! The entry named `name`, or nullptr.
const Entry* find(std::string_view name);
//! Every entry, sorted by name.
std::vector<const Entry*> all();

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
              [](Pool& p) { return adapt<T>(T::open(p)); }, open_instant_of<T>()});
  }
};

}  // namespace wort::registry

#define WORT_REGISTER_INDEX_CAT2(a, b) a##b
#define WORT_REGISTER_INDEX_CAT(a, b) WORT_REGISTER_INDEX_CAT2(a, b)
//! Registers a concrete index class under T::kKind.
#define WORT_REGISTER_INDEX(T)                                                   \
  static ::wort::registry::Registrar<T> WORT_REGISTER_INDEX_CAT(wort_registrar_, \
                                                                __LINE__)
