#include "index/registry.h"

#include <algorithm>
#include <map>

namespace wort::registry {
namespace {
// Function-local static: safe against static-initialisation order across registrars.
std::map<std::string, Entry, std::less<>>& table() {
  static std::map<std::string, Entry, std::less<>> t;
  return t;
}
}  // namespace

void add(Entry e) {
  auto name = e.name;
  table().emplace(std::move(name), std::move(e));
}

const Entry* find(std::string_view name) {
  auto it = table().find(name);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<const Entry*> all() {
  std::vector<const Entry*> out;
  for (auto& [name, e] : table()) out.push_back(&e);
  return out;
}

}  // namespace wort::registry

namespace wort {

//! One handle per Pool: claims `pool`, makes the handle, and gives the claim to it (to
//! ~Index, which gives it back to the Pool), or back at once if making it failed.
struct IndexClaim {
  template <class Make>
  static Result<std::unique_ptr<Index>> hold(Pool& pool, Make&& make) {
    if (!pool.claim_for_index())
      return Error{Status::invalid_argument,
                   "an index handle of this pool is open already (one at a time)"};
    Result<std::unique_ptr<Index>> r = make();
    if (!r) {
      Pool::release_index_claim(&pool);
      return r;
    }
    (*r)->claimed_ = &pool;
    return r;
  }
  static void release(Pool* pool) noexcept { Pool::release_index_claim(pool); }
};

Index::~Index() {
  if (claimed_ != nullptr) IndexClaim::release(claimed_);
}

Result<std::unique_ptr<Index>> Index::create(Pool& pool, std::string_view kind,
                                             const IndexOptions& opts) {
  const registry::Entry* e = registry::find(kind);
  if (!e) return Error{Status::invalid_argument, "unknown index kind '" + std::string(kind) + "'"};
  if (pool.kind() != kind)
    return Error{Status::wrong_kind, "pool was created for index kind '" +
                                         std::string(pool.kind()) + "', not '" +
                                         std::string(kind) + "'"};
  if (pool.root() != 0)
    return Error{Status::invalid_argument, "pool already holds an index; use Index::open"};
  if (!e->persistent && !pool.mapping().in_memory)
    return Error{Status::invalid_argument,
                 "index kind '" + std::string(kind) +
                     "' is volatile (its tree lives in DRAM, nothing in the pool): a file pool "
                     "would lose it at close; use Pool::create_in_memory, or a persistent kind"};
  return IndexClaim::hold(pool, [&] { return e->create(pool, opts); });
}

Result<std::unique_ptr<Index>> Index::open(Pool& pool, const OpenOptions& o) {
  const registry::Entry* e = registry::find(pool.kind());
  if (!e)
    return Error{Status::wrong_kind, "pool holds index kind '" + std::string(pool.kind()) +
                                         "', which this build does not know"};
  if (pool.root() == 0)
    return Error{Status::corrupt, "pool of kind '" + std::string(pool.kind()) +
                                      "' has no index root (created but never initialised)"};
  return IndexClaim::hold(pool, [&] {
    return o.instant_restart && e->open_instant ? e->open_instant(pool) : e->open(pool);
  });
}

std::vector<std::string> Index::kinds() {
  std::vector<std::string> out;
  for (const auto* e : registry::all()) out.push_back(e->name);
  return out;
}

}  // namespace wort
