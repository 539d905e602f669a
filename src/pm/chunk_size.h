// pm/chunk_size.h — the chunk size a pool gets when PoolOptions::chunk_size is 0.
#pragma once

#include <cstdint>

namespace wort::pm {

//! PoolOptions::chunk_size 0: at least 256 chunks, each 4 KiB .. 1 MiB, and larger chunks
//! where 1 MiB would give more than the allocator's chunk limit (pools over 16 TiB).
std::uint32_t auto_chunk_size(std::uint64_t size);

}  // namespace wort::pm
