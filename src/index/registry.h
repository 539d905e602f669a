// index/registry.h — make or open an index by name.
//
// Each index folder registers itself with WORT_REGISTER_INDEX(Class) in one .cc file; the
// index libraries are CMake OBJECT libraries, so the registrar objects are always linked.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "wort/index.h"

namespace wort::registry {

struct Entry {
  std::string name;
  std::function<Result<std::unique_ptr<Index>>(Pool&, const IndexOptions&)> create;
  std::function<Result<std::unique_ptr<Index>>(Pool&)> open;
};

//! Adds an entry (called from static registrars; names must be unique).
void add(Entry e);
//! The entry named `name`, or nullptr.
const Entry* find(std::string_view name);
//! Every entry, sorted by name.
std::vector<const Entry*> all();

template <IndexConcept T>
struct Registrar {
  Registrar() {
    add(Entry{std::string(T::kKind),
              [](Pool& p, const IndexOptions& o) -> Result<std::unique_ptr<Index>> {
                auto r = T::create(p, o);
                if (!r) return r.error();
                return std::unique_ptr<Index>(new IndexAdapter<T>(std::move(r).value()));
              },
              [](Pool& p) -> Result<std::unique_ptr<Index>> {
                auto r = T::open(p);
                if (!r) return r.error();
                return std::unique_ptr<Index>(new IndexAdapter<T>(std::move(r).value()));
              }});
  }
};

}  // namespace wort::registry

#define WORT_REGISTER_INDEX_CAT2(a, b) a##b
#define WORT_REGISTER_INDEX_CAT(a, b) WORT_REGISTER_INDEX_CAT2(a, b)
//! Registers a concrete index class under T::kKind.
#define WORT_REGISTER_INDEX(T)                                                   \
  static ::wort::registry::Registrar<T> WORT_REGISTER_INDEX_CAT(wort_registrar_, \
                                                                __LINE__)
