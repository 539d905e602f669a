// store/block_pool.h — opening the index of a values_are_blocks pool whose values are value
// blocks (store/value_block.h) and whose own meta block hangs off a reserved index key:
// wort::Store's pools and `wort serve`'s. Both finish a first open that was killed before it
// was done, the same way.
#pragma once

#include <memory>
#include <string_view>

#include "wort/index.h"
#include "wort/pool.h"
#include "wort/status.h"

namespace wort::store {

//! The index of `pool` (kind: the pool's), created when `*init` (a new pool) and opened
//! (recovered) otherwise. A first open killed before it was done — no index root yet, or an
//! empty index without the meta block under `meta_key`; nothing was ever acknowledged — is
//! finished instead of refused: *init becomes true (the caller writes its meta block), and
//! the allocator's trace frees whatever the killed open allocated. An index with keys but
//! no meta block keeps *init false: the caller's lookup of `meta_key` finds nothing and the
//! caller refuses the pool.
Result<std::unique_ptr<Index>> open_block_index(Pool& pool, std::string_view meta_key,
                                                bool* init);

}  // namespace wort::store
