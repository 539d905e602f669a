// store/block_pool.cc — see block_pool.h.
#include "store/block_pool.h"

#include "pm/allocator.h"

namespace wort::store {

Result<std::unique_ptr<Index>> open_block_index(Pool& pool, std::string_view meta_key,
                                                bool* init) {
  // Killed before the index root was set: nothing is reachable, the trace frees every block.
  if (!*init && pool.root() == 0) {
    if (auto r = pool.allocator().recover([](pm::BlockVisitor) -> Result<void> { return {}; }); !r)
      return r.error();
    *init = true;
  }
  auto ix = *init ? Index::create(pool, pool.kind()) : Index::open(pool);
  if (!ix || *init) return ix;
  // Killed after the index was created, before the meta block was inserted: an empty index.
  if (!(*ix)->lookup(as_key(meta_key))) {
    bool empty = true;
    (*ix)->scan(Key{}, 1, [&](Key, Value) { return empty = false; });
    *init = empty;
  }
  return ix;
}

}  // namespace wort::store
