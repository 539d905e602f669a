// pm/allocator.h — the persistent allocator.
//
// Size classes carved from chunks; per-thread caches; no flush on the alloc/free fast path.
// The only persistent allocator state is, per chunk, its size class (written once when the
// chunk is carved, before the high-water mark moves past it) and the chunk high-water mark.
// Which blocks inside a chunk are in use is volatile: after a crash it is recomputed by
// tracing — the index visits every block it reaches from its root, and whatever lies in an
// old chunk and was not visited is free (ROART's DCMM idea). Until the trace finishes, old
// chunks hand out nothing and allocations come from fresh chunks and from the free spans
// an earlier trace or a reclaim recorded (chunk_table.h, tag 3), so the pool is usable at
// once.
//
// Contract for indexes: free(b) only after the store that unlinks b is durable (persisted),
// otherwise a crash could resurrect b while it is reused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "wort/function_ref.h"
#include "wort/status.h"

namespace wort {
class Pool;
}

namespace wort::pm {

//! Walks every block an index reaches: call visit(offset) once per block start.
using BlockVisitor = FunctionRef<void(std::uint64_t /*block offset*/)>;
//! A function that walks a structure with a BlockVisitor (index.visit_blocks). It fails
//! (corrupt, with a message) when it meets a word it cannot follow; the walk is then partial.
using BlockWalker = FunctionRef<Result<void>(BlockVisitor)>;

struct AllocatorStats {
  std::uint64_t chunks_used = 0;       //!< chunks below the high-water mark
  std::uint64_t chunks_total = 0;      //!< chunks the pool has room for
  std::uint64_t blocks_allocated = 0;  //!< blocks currently handed out
  std::uint64_t bytes_allocated = 0;   //!< sum of their class sizes
  std::uint64_t bytes_requested = 0;   //!< sum of sizes asked for (live blocks)
  std::uint64_t reclaim_scans = 0;     //!< scans of the free lists for wholly free chunks
                                       //!< (near exhaustion) since the allocator started
};

struct AuditReport {
  std::vector<std::uint64_t> leaked;        //!< allocated, not reached
  std::vector<std::uint64_t> doubly_used;   //!< reached twice, or overlapping another block
  std::vector<std::uint64_t> not_allocated; //!< reached but free (or not a block start)
  std::string walk_error;                   //!< the walk stopped at a bad word (then the
                                            //!< other lists judge only what it reached)
  bool ok() const {
    return leaked.empty() && doubly_used.empty() && not_allocated.empty() && walk_error.empty();
  }
  std::string describe() const;  //!< one line per problem (first few of each kind)
};

class Allocator {
 public:
  Allocator(Pool& pool, bool fresh);  //!< fresh: a new pool; otherwise old chunks await a trace
  ~Allocator();

  //! Allocates `bytes` (> 0). Blocks of 64 bytes or more are 64-byte aligned, smaller ones
  //! are aligned to 16. The content is unspecified (not zeroed). out_of_space leaves
  //! everything as it was.
  Status allocate(std::size_t bytes, std::uint64_t* offset) noexcept;
  //! Allocates `bytes` (> 0) from chunks that hold only blocks allocated this way (the
  //! apart size classes: 16-byte steps, size_classes.h; large spans as allocate()). Such a
  //! block is 16-byte aligned. Apart blocks bypass the thread caches (allocate and free take
  //! the allocator's mutex), so every free apart block is on the global lists and a chunk
  //! whose blocks are all freed can be given back (evacuate(), or near exhaustion). For
  //! blocks whose owner can free any of them on demand (a cache's items): evacuate().
  Status allocate_apart(std::size_t bytes, std::uint64_t* offset) noexcept;
  //! Stops handing out the blocks of the apart chunk holding `offset` (its free blocks
  //! leave the free lists); when its last live block is freed it becomes a free chunk
  //! (durably, chunk_table.h tag 3) that any size class can carve: memcached's slab
  //! rebalancing, where the caller frees the live blocks. False (nothing changes) if the
  //! chunk is not an apart chunk, awaits a trace, or is evacuating already.
  bool evacuate(std::uint64_t offset) noexcept;
  //! What chunk `c` (0 .. chunk count - 1) is, for a caller that picks chunks to evacuate.
  //! `*span`: chunks of a large block or a free span starting at c (1 otherwise); `*live`:
  //! the blocks allocated in it (an apart chunk's live blocks, 1 for a large block, else 0).
  enum class ChunkUse : std::uint8_t {
    free,        //!< never carved, or a free span's head
    apart,       //!< an apart chunk
    evacuating,  //!< an apart chunk being evacuated
    large,       //!< the head of a large block
    interior,    //!< inside a large block or free span
    other,       //!< ordinary small blocks, or awaiting a trace
  };
  ChunkUse chunk_use(std::uint64_t c, std::uint64_t* span, std::uint32_t* live) const noexcept;
  //! Returns the free blocks every thread's cache holds to the global lists, where any
  //! thread's allocation finds them (a thread's cache is otherwise seen only by that
  //! thread: near exhaustion, another thread's out_of_space may be blocks cached there).
  //! The caller guarantees that no other thread allocates or frees an ordinary block of
  //! this allocator meanwhile (e.g. every such call of theirs holds a lock the caller
  //! holds exclusively). Apart blocks are never cached. No flush (the caches are DRAM).
  void drain_all_caches() noexcept;
  //! Failure injection (tests; rax's fail-the-Nth-allocation): the `nth` allocate() from now
  //! on (1 = the next) fails with out_of_space and changes nothing; 0 turns it off. One shot.
  void fail_nth_allocation(std::uint64_t nth) noexcept;
  //! Returns a block (see the contract above). No flush.
  void free(std::uint64_t offset) noexcept;
  //! Usable size of the block at `offset` (its size class); 0 if `offset` is not in a
  //! carved chunk.
  std::size_t block_size(std::uint64_t offset) const noexcept;
  //! True if `offset` starts a block of a carved chunk (live or free, traced or not) with
  //! room for `len` bytes. Never reads pool memory past the chunk table: the checked walk
  //! (index/kit/checked_walk.h) asks it before following a pool word.
  bool holds(std::uint64_t offset, std::size_t len) const noexcept;

  //! Recovery: marks every block the walker reports as in use and frees the rest of the old
  //! chunks. Fails with corrupt if the walker fails, or a visited offset is not a block
  //! start in an old or new chunk, or is visited twice (or, in a chunk carved since the
  //! open, is free). Called once by Index::open (kit::recover). With no trace pending (fresh pool, second call) it only checks the
  //! walk the same way and changes nothing. On failure nothing changes either. Before it
  //! runs, free() of a block in an old chunk is ignored (the trace decides), and stats() and
  //! audit() do not count or judge old chunks. Not concurrent with other allocator calls.
  Result<void> recover(BlockWalker walk);
  //! True until recover() has run on a reopened pool.
  bool trace_pending() const noexcept;

  //! Instant restart (ROART §3.4.2), step 1, called before the index serves any request:
  //! from now until recover_concurrent() ends, free() of a block in a chunk the pending trace
  //! decides is recorded (the block ends up free even if the walk reached it). False (and
  //! nothing changes) if no trace is pending.
  bool begin_concurrent_recovery() noexcept;
  //! Instant restart, step 2: recover() run while the index serves requests, on a thread of
  //! its own, after begin_concurrent_recovery(). allocate() and free() may run meanwhile
  //! (fresh chunks serve the allocations, as before any trace). The walk must reach every
  //! block of the traced chunks that is live when it returns: reachable, or unlinked but not
  //! yet passed to free() (an index that defers its frees reports those too) — a block it
  //! misses is made free, and a later free() of it would free it twice. It may reach a block
  //! more than once or reach blocks freed meanwhile, and must not report a block at or above
  //! trace_boundary() (those chunks are not traced). On failure the traced chunks stay
  //! frozen (nothing is reused, nothing lost) and frees of their blocks are ignored again.
  //! Without begin_concurrent_recovery() (or with no trace pending) it is recover().
  Result<void> recover_concurrent(BlockWalker walk);
  //! Offset of the high-water mark at this open: blocks at or above it are this session's
  //! own; below it lie the chunks a pending trace decides, and the spans that were free at
  //! the open, which may serve this session's allocations too (a walk may report blocks of
  //! those: they are not judged).
  std::uint64_t trace_boundary() const noexcept;

  //! Compares the allocator's view with the blocks the walker reaches.
  AuditReport audit(BlockWalker walk) const;
  AllocatorStats stats() const noexcept;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace wort::pm
