// pm/allocator.cc — size-class allocator over the pool's chunks (see allocator.h for the
// contract, chunk_table.h for the only persistent state it keeps).
//
// DRAM state per chunk (ChunkInfo): what the chunk is and, per block, the size the caller
// asked for (0 = free). That one array is the allocator's exact view of which blocks are
// live: thread caches and the global free lists only hold blocks whose entry is 0, so
// audit() and stats() need not look into other threads' caches.
//
// Fast path (allocate/free of a small block): pop/push on this thread's cache and one
// relaxed store to the DRAM per-block array. No pool store, no flush, no lock. The slow
// path (cache empty / too full, carving a chunk, large spans) takes one std::mutex.
// Apart blocks (allocate_apart) always take the mutex: no thread cache hides them, so a
// chunk of them can be evacuated (its last free makes it a free chunk).
#include "pm/allocator.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "pm/chunk_table.h"
#include "pm/persist.h"
#include "pm/pool_layout.h"
#include "pm/size_classes.h"
#include "wort/pool.h"

namespace wort::pm {
namespace {

constexpr int kMaxSlots = 256;

//! Process-wide thread slot ids, 0..kMaxSlots-1, recycled when a thread exits. A slot
//! indexes every allocator's cache array; a thread that finds no free slot uses the locked
//! path.
class SlotIds {
 public:
  int acquire() {
    std::lock_guard lock(mu_);
    for (int i = 0; i < kMaxSlots; ++i)
      if (!used_[i]) {
        used_[i] = true;
        return i;
      }
    return -1;
  }
  void release(int id) {
    std::lock_guard lock(mu_);
    used_[id] = false;
  }

 private:
  std::mutex mu_;
  bool used_[kMaxSlots] = {};
};

SlotIds& slot_ids() {
  static SlotIds* ids = new SlotIds;  // never destroyed: threads may exit after static dtors
  return *ids;
}

// The id is a trivially initialised thread_local (one %fs-relative load on the fast path);
// the object that gives it back at thread exit is created only when the id is taken.
constexpr int kNoSlot = -2;
thread_local int tls_slot_id = kNoSlot;

struct SlotReleaser {
  ~SlotReleaser() {
    if (tls_slot_id >= 0) slot_ids().release(tls_slot_id);
    tls_slot_id = -1;  // a late allocation during thread exit takes the locked path
  }
};

[[gnu::noinline]] int acquire_thread_slot() {
  thread_local SlotReleaser releaser;
  tls_slot_id = slot_ids().acquire();
  (void)releaser;
  return tls_slot_id;
}

inline int thread_slot() {
  const int id = tls_slot_id;
  return id != kNoSlot ? id : acquire_thread_slot();
}

// free() of something that is not a live block is a programmer error that would corrupt
// the free lists (a block handed out twice). Checked in debug and sanitizer builds (where
// the tests run), not in the Release fast path.
#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__)
constexpr bool kCheckFrees = true;
#else
constexpr bool kCheckFrees = false;
#endif

enum class ChunkKind : std::uint8_t { uncarved, small, large_head, interior };

struct ChunkInfo {
  ChunkKind kind = ChunkKind::uncarved;
  // Carved before this open and not yet traced. Written under mu; atomic because free()
  // reads it first without mu (recover_concurrent clears it while frees run).
  std::atomic<bool> frozen{false};
  std::uint32_t cls = 0;
  std::uint64_t span = 0;                                   // large_head: chunks
  std::unique_ptr<std::atomic<std::uint32_t>[]> requested;  // small: per block, 0 = free
  std::atomic<std::uint64_t> large_requested{0};            // large_head: 0 = free
  // Small chunk of an apart class (set when carved, like cls). Under mu: evacuating (its
  // blocks are on no free list; the last free makes it a free span) and, once traced, the
  // number of live blocks.
  bool apart = false;
  bool evacuating = false;
  std::uint32_t live = 0;
};

struct ThreadCache {
  std::vector<std::vector<std::uint64_t>> free;  // per class, a stack of block offsets
};

//! Where a block offset lands: its chunk and block index, or why it is not a block start.
struct BlockRef {
  std::uint64_t chunk = 0;
  std::uint64_t block = 0;
  const char* error = nullptr;
};

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

//! A visited-bit per block, per chunk, allocated on first touch.
class VisitedSet {
 public:
  explicit VisitedSet(std::uint64_t chunks) : bits_(chunks) {}
  //! Marks the block; false if it was already marked.
  bool mark(std::uint64_t chunk, std::uint64_t block, std::uint64_t blocks_in_chunk) {
    auto& b = bits_[chunk];
    if (b.empty()) b.assign((blocks_in_chunk + 63) / 64, 0);
    const std::uint64_t bit = 1ull << (block % 64);
    if (b[block / 64] & bit) return false;
    b[block / 64] |= bit;
    return true;
  }
  bool test(std::uint64_t chunk, std::uint64_t block) const {
    const auto& b = bits_[chunk];
    return !b.empty() && (b[block / 64] >> (block % 64)) & 1;
  }

 private:
  std::vector<std::vector<std::uint64_t>> bits_;
};

}  // namespace

struct Allocator::Impl {
  Impl(Pool& p, bool fresh);

  // geometry
  PoolHeader* hdr;
  std::uint64_t* table;
  std::byte* base;
  std::uint64_t chunk_size;
  unsigned chunk_shift;
  std::uint64_t first;  // offset of chunk 0
  std::uint64_t count;  // chunks in the pool
  SizeClasses classes;
  std::vector<std::uint32_t> batch;  // blocks moved between a thread cache and global
  std::vector<std::uint64_t> recip;  // ceil(2^64 / class size), for block_index
  std::unique_ptr<ChunkInfo[]> chunks;

  std::mutex mu;
  // --- guarded by mu ---
  std::uint64_t hwm = 0;
  std::vector<std::vector<std::uint64_t>> global_free;  // per class
  std::multimap<std::uint64_t, std::uint64_t> free_spans;  // span length -> head chunk
  bool concurrent_trace = false;  // begin_concurrent_recovery .. recover_concurrent's end
  std::vector<std::uint64_t> freed_while_tracing;  // meanwhile: frees of frozen blocks
  // Blocks or spans returned to the global lists (a count), and its value when a reclaim
  // near exhaustion last found nothing: until it moves, another scan would find nothing too.
  std::uint64_t returns = 0, returns_at_fruitless_reclaim = ~std::uint64_t{0};
  std::uint64_t reclaim_scans = 0;
  // ---
  std::uint64_t traced_chunks = 0;  // chunks carved before this open (frozen until the trace)
  std::atomic<bool> trace_pending{false};
  std::atomic<std::uint64_t> fail_countdown{0};  // fail_nth_allocation; read-mostly
  std::unique_ptr<ThreadCache> caches[kMaxSlots];  // each touched only by its slot's thread

  std::uint64_t chunk_offset(std::uint64_t c) const { return first + (c << chunk_shift); }
  //! in_chunk / size(cls) without a division. With m = ceil(2^64 / d), floor(x * m / 2^64)
  //! equals floor(x / d) whenever x * d <= 2^64; here x < 2^30 (chunk) and d < 2^28.
  std::uint64_t block_index(std::uint64_t in_chunk, std::size_t cls) const {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(in_chunk) * recip[cls]) >> 64);
  }
  ThreadCache* my_cache();
  BlockRef locate(std::uint64_t off) const;
  bool is_live(const BlockRef& r) const;
  enum class Reach { ok, not_a_block, twice, free };
  Reach reach(std::uint64_t off, VisitedSet& seen, const char** why) const;
  void check_free(std::uint64_t off) const;
  bool free_frozen(std::uint64_t off, const ChunkInfo& ci);
  template <class Live>
  void decide_frozen(Live live);
  //! The chunk after c's span: the walk over span heads (uncarved chunks, span 0, count one).
  std::uint64_t next_head(std::uint64_t c) const {
    return c + std::max<std::uint64_t>(chunks[c].span, 1);
  }
  std::uint64_t blocks_in(std::uint64_t c) const {
    return chunks[c].kind == ChunkKind::small ? classes.blocks_per_chunk(chunks[c].cls) : 1;
  }

  void load_chunk_table();
  void set_small(std::uint64_t c, std::uint32_t cls, bool frozen);
  void set_large(std::uint64_t c, std::uint64_t span, bool frozen);
  void make_free_span(std::uint64_t c, std::uint64_t span);
  Status take_chunks(std::uint64_t k, std::uint64_t entry, std::uint64_t* head);
  void push_chunk_blocks(std::uint64_t c);
  std::uint64_t reclaim_free_chunks();
  std::uint64_t coalesce_free_spans();
  void drain_cache(ThreadCache* tc);
  void drain_my_cache();
  Status refill(std::size_t cls, std::vector<std::uint64_t>& out);
  Status allocate_small_locked(std::size_t cls, std::uint64_t* off);
  Status allocate_large(std::size_t bytes, std::uint64_t* off);
  void free_large(std::uint64_t c);
  void free_apart(std::uint64_t c, std::uint64_t block, std::uint64_t off);
};

Allocator::Impl::Impl(Pool& p, bool fresh)
    : hdr(p.at<PoolHeader>(0)),
      table(chunk_table(p.base(), *hdr)),
      base(p.base()),
      chunk_size(hdr->chunk_size),
      chunk_shift(static_cast<unsigned>(std::countr_zero(hdr->chunk_size))),
      first(hdr->first_chunk_offset),
      count(hdr->chunk_count),
      classes(hdr->chunk_size),
      chunks(new ChunkInfo[hdr->chunk_count]) {
  batch.resize(classes.count());
  for (std::size_t c = 0; c < classes.count(); ++c)
    batch[c] = std::clamp<std::uint32_t>(16384 / classes.size(c), 2, 64);
  recip.resize(classes.count());
  for (std::size_t c = 0; c < classes.count(); ++c)
    recip[c] = ~0ull / classes.size(c) + 1;  // ceil(2^64 / size); sizes are never 1
  global_free.resize(classes.count());
  hwm = hdr->chunk_hwm;
  traced_chunks = fresh ? 0 : hwm;
  if (!fresh && hwm > 0) {
    load_chunk_table();
    trace_pending.store(true, std::memory_order_relaxed);
  }
}

//! Rebuilds the DRAM chunk view from the persistent table (validated by Pool::open) and
//! freezes every carved chunk until recover(); free spans are free at once.
void Allocator::Impl::load_chunk_table() {
  for (std::uint64_t c = 0; c < hwm;) {
    const std::uint64_t e = table[c];
    if (chunk_entry_tag(e) == ChunkTag::small) {
      set_small(c, chunk_entry_class(e), /*frozen=*/true);
      ++c;
    } else if (chunk_entry_tag(e) == ChunkTag::free) {
      set_large(c, chunk_entry_span(e), /*frozen=*/false);
      free_spans.emplace(chunk_entry_span(e), c);
      c += chunk_entry_span(e);
    } else {
      set_large(c, chunk_entry_span(e), /*frozen=*/true);
      c += chunk_entry_span(e);
    }
  }
}

//! Makes c..c+span-1 a free span, in DRAM and durably (chunk_table.h, tag 3): its entry
//! is written back, not fenced (the caller fences once for all). Needs mu.
void Allocator::Impl::make_free_span(std::uint64_t c, std::uint64_t span) {
  set_large(c, span, /*frozen=*/false);
  free_spans.emplace(span, c);
  store(&table[c], chunk_entry_free(span));
  flush(&table[c], sizeof table[c]);
}

void Allocator::Impl::set_small(std::uint64_t c, std::uint32_t cls, bool frozen) {
  ChunkInfo& ci = chunks[c];
  ci.kind = ChunkKind::small;
  ci.cls = cls;
  ci.span = 1;
  ci.apart = classes.is_apart(cls);
  ci.evacuating = false;
  ci.live = 0;
  ci.frozen.store(frozen, std::memory_order_relaxed);
  ci.requested.reset(new std::atomic<std::uint32_t>[classes.blocks_per_chunk(cls)]());
  ci.large_requested.store(0, std::memory_order_relaxed);
}

void Allocator::Impl::set_large(std::uint64_t c, std::uint64_t span, bool frozen) {
  ChunkInfo& ci = chunks[c];
  ci.kind = ChunkKind::large_head;
  ci.span = span;
  ci.apart = ci.evacuating = false;
  ci.frozen.store(frozen, std::memory_order_relaxed);
  ci.requested.reset();
  ci.large_requested.store(0, std::memory_order_relaxed);
  for (std::uint64_t i = 1; i < span; ++i) {
    chunks[c + i].kind = ChunkKind::interior;
    chunks[c + i].requested.reset();
    chunks[c + i].frozen.store(false, std::memory_order_relaxed);
  }
}

//! Finds k contiguous chunks (a free span first, best fit, else above the high-water mark)
//! and makes `entry` their durable chunk-table head entry. Needs mu.
Status Allocator::Impl::take_chunks(std::uint64_t k, std::uint64_t entry, std::uint64_t* head) {
  auto it = free_spans.lower_bound(k);
  if (it != free_spans.end()) {
    const std::uint64_t h = it->second, n = it->first;
    free_spans.erase(it);
    if (n > k) {
      // Remainder head first, taken head last (see chunk_table.h for why).
      store_persist(&table[h + k], chunk_entry_free(n - k));
      set_large(h + k, n - k, /*frozen=*/false);
      free_spans.emplace(n - k, h + k);
    }
    store_persist(&table[h], entry);
    *head = h;
    return Status::ok;
  }
  if (k > count - hwm) {
    // Near exhaustion: turn wholly free small chunks back into free spans, merge neighbours,
    // and try the spans once more — unless nothing came back since the last such scan found
    // nothing (a full pool would otherwise rescan every free list at each failed refill).
    if (returns == returns_at_fruitless_reclaim) return Status::out_of_space;
    if (reclaim_free_chunks() + coalesce_free_spans() == 0 ||
        free_spans.lower_bound(k) == free_spans.end()) {
      returns_at_fruitless_reclaim = returns;
      return Status::out_of_space;
    }
    return take_chunks(k, entry, head);
  }
  const std::uint64_t h = hwm;
  store_persist(&table[h], entry);        // the entry is durable before
  hwm += k;
  store_persist(&hdr->chunk_hwm, hwm);    // the mark moves past it
  *head = h;
  return Status::ok;
}

//! Puts every block of freshly carved small chunk c on its class's global list, lowest
//! offset on top. Needs mu.
void Allocator::Impl::push_chunk_blocks(std::uint64_t c) {
  const std::uint32_t cls = chunks[c].cls;
  const std::uint32_t size = classes.size(cls);
  const std::uint32_t n = classes.blocks_per_chunk(cls);
  auto& list = global_free[cls];
  for (std::uint32_t i = n; i-- > 0;) list.push_back(chunk_offset(c) + std::uint64_t{i} * size);
}

//! Small chunks all of whose blocks sit on the global free lists become free one-chunk
//! spans, durably (tag 3: an instant restart can use them before its trace ends). Blocks
//! held in thread caches keep their chunk. Needs mu. Returns chunks reclaimed.
std::uint64_t Allocator::Impl::reclaim_free_chunks() {
  ++reclaim_scans;
  std::vector<std::uint32_t> listed(hwm, 0);
  for (const auto& list : global_free)
    for (std::uint64_t off : list) ++listed[(off - first) >> chunk_shift];
  auto whole = [&](std::uint64_t c) {
    return chunks[c].kind == ChunkKind::small &&
           !chunks[c].frozen.load(std::memory_order_relaxed) &&
           listed[c] == classes.blocks_per_chunk(chunks[c].cls);
  };
  std::uint64_t n = 0;
  for (auto& list : global_free)
    std::erase_if(list, [&](std::uint64_t off) { return whole((off - first) >> chunk_shift); });
  for (std::uint64_t c = 0; c < hwm; ++c) {
    if (!whole(c)) continue;
    make_free_span(c, 1);
    ++n;
  }
  if (n > 0) fence();
  return n;
}

//! Merges free spans that touch into one (DRAM only; see chunk_table.h for why taking
//! part of a merged span later is still crash-consistent: the remainder's head is written
//! first, the taken head last). Needs mu. Returns the number of merges.
std::uint64_t Allocator::Impl::coalesce_free_spans() {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;  // head, length
  for (auto [len, head] : free_spans) spans.emplace_back(head, len);
  std::sort(spans.begin(), spans.end());
  free_spans.clear();
  std::uint64_t merges = 0;
  for (std::size_t i = 0; i < spans.size();) {
    auto [head, len] = spans[i++];
    while (i < spans.size() && spans[i].first == head + len) {
      len += spans[i++].second;
      ++merges;
    }
    set_large(head, len, false);
    free_spans.emplace(len, head);
  }
  return merges;
}

//! Returns every block in `tc` to the global lists. Needs mu, and `tc`'s thread out of it.
void Allocator::Impl::drain_cache(ThreadCache* tc) {
  if (!tc) return;
  for (std::size_t cls = 0; cls < tc->free.size(); ++cls) {
    auto& stack = tc->free[cls];
    if (stack.empty()) continue;
    global_free[cls].insert(global_free[cls].end(), stack.rbegin(), stack.rend());
    stack.clear();
    ++returns;
  }
}

//! Returns every block in this thread's cache to the global lists. Needs mu.
void Allocator::Impl::drain_my_cache() { drain_cache(my_cache()); }

Status Allocator::Impl::refill(std::size_t cls, std::vector<std::uint64_t>& out) {
  std::lock_guard lock(mu);
  auto& list = global_free[cls];
  if (list.empty()) {
    std::uint64_t c;
    const std::uint64_t entry = chunk_entry_small(static_cast<std::uint32_t>(cls));
    if (Status s = take_chunks(1, entry, &c); s != Status::ok) {
      // This thread's other classes may hold whole chunks' worth of free blocks.
      drain_my_cache();
      if (s = take_chunks(1, entry, &c); s != Status::ok) return s;
    }
    set_small(c, static_cast<std::uint32_t>(cls), false);
    push_chunk_blocks(c);
  }
  const std::size_t n = std::min<std::size_t>(batch[cls], list.size());
  out.insert(out.end(), list.end() - static_cast<std::ptrdiff_t>(n), list.end());
  list.resize(list.size() - n);
  // Both are stacks with the lowest offset on top; moving the top n keeps that order.
  return Status::ok;
}

Status Allocator::Impl::allocate_small_locked(std::size_t cls, std::uint64_t* off) {
  std::vector<std::uint64_t> one;
  one.reserve(batch[cls]);
  if (Status s = refill(cls, one); s != Status::ok) return s;
  *off = one.back();
  one.pop_back();
  std::lock_guard lock(mu);
  auto& list = global_free[cls];
  list.insert(list.end(), one.rbegin(), one.rend());
  return Status::ok;
}

Status Allocator::Impl::allocate_large(std::size_t bytes, std::uint64_t* off) {
  const std::uint64_t k = (bytes + chunk_size - 1) >> chunk_shift;
  std::lock_guard lock(mu);
  std::uint64_t h;
  if (Status s = take_chunks(k, chunk_entry_large(k), &h); s != Status::ok) {
    drain_my_cache();
    if (s = take_chunks(k, chunk_entry_large(k), &h); s != Status::ok) return s;
  }
  set_large(h, k, false);
  chunks[h].large_requested.store(bytes, std::memory_order_relaxed);
  *off = chunk_offset(h);
  return Status::ok;
}

//! free() of an apart block: onto the global list, or, in an evacuating chunk, nowhere
//! (the chunk's last free makes it a free span, durably).
void Allocator::Impl::free_apart(std::uint64_t c, std::uint64_t block, std::uint64_t off) {
  std::lock_guard lock(mu);
  ChunkInfo& ci = chunks[c];
  ci.requested[block].store(0, std::memory_order_relaxed);
  --ci.live;
  ++returns;
  if (!ci.evacuating) {
    global_free[ci.cls].push_back(off);
    return;
  }
  if (ci.live != 0) return;
  make_free_span(c, 1);
  fence();
}

void Allocator::Impl::free_large(std::uint64_t c) {
  std::lock_guard lock(mu);
  chunks[c].large_requested.store(0, std::memory_order_relaxed);
  free_spans.emplace(chunks[c].span, c);
  ++returns;
}

ThreadCache* Allocator::Impl::my_cache() {
  const int id = thread_slot();
  if (id < 0) return nullptr;
  auto& slot = caches[id];
  if (!slot) [[unlikely]] {
    slot = std::make_unique<ThreadCache>();
    slot->free.resize(classes.count());
  }
  return slot.get();
}

BlockRef Allocator::Impl::locate(std::uint64_t off) const {
  BlockRef r;
  if (off < first || off >= first + (count << chunk_shift)) {
    r.error = "outside the chunk area";
    return r;
  }
  r.chunk = (off - first) >> chunk_shift;
  const ChunkInfo& ci = chunks[r.chunk];
  const std::uint64_t in_chunk = off - chunk_offset(r.chunk);
  switch (ci.kind) {
    case ChunkKind::uncarved: r.error = "in a chunk that was never carved"; break;
    case ChunkKind::interior: r.error = "inside a large block, not at its start"; break;
    case ChunkKind::large_head:
      if (in_chunk != 0) r.error = "inside a large block, not at its start";
      break;
    case ChunkKind::small: {
      const std::uint32_t size = classes.size(ci.cls);
      r.block = block_index(in_chunk, ci.cls);
      if (in_chunk % size != 0) r.error = "not at a block start";
      else if (r.block >= classes.blocks_per_chunk(ci.cls)) r.error = "in a chunk's unused tail";
      break;
    }
  }
  return r;
}

bool Allocator::Impl::is_live(const BlockRef& r) const {
  const ChunkInfo& ci = chunks[r.chunk];
  return ci.kind == ChunkKind::small ? ci.requested[r.block].load(std::memory_order_relaxed) != 0
                                     : ci.large_requested.load(std::memory_order_relaxed) != 0;
}

//! One block reached by a walk (recover, audit): marks it and says what is wrong with it.
//! `why` is set for not_a_block.
Allocator::Impl::Reach Allocator::Impl::reach(std::uint64_t off, VisitedSet& seen,
                                              const char** why) const {
  const BlockRef r = locate(off);
  *why = r.error;
  if (r.error) return Reach::not_a_block;
  if (!seen.mark(r.chunk, r.block, blocks_in(r.chunk))) return Reach::twice;
  if (!chunks[r.chunk].frozen.load(std::memory_order_relaxed) && !is_live(r)) return Reach::free;
  return Reach::ok;
}

void Allocator::Impl::check_free(std::uint64_t off) const {
  const BlockRef r = locate(off);
  const char* why = r.error;
  if (!why && !chunks[r.chunk].frozen.load(std::memory_order_acquire) && !is_live(r))
    why = "the block is free (double free?)";
  if (!why) return;
  std::fprintf(stderr, "wort allocator: free(%s): %s\n", hex(off).c_str(), why);
  std::abort();
}

//! free() of a block whose chunk read frozen: true if it is still frozen, and then the
//! trace decides (it is free unless reachable) — unless a concurrent trace runs, whose walk
//! may have reached the block before its unlink: that free is recorded. False if the trace
//! unfroze the chunk meanwhile (the caller frees it the ordinary way). Takes mu: the check
//! and the record are one step against recover_concurrent's decision.
bool Allocator::Impl::free_frozen(std::uint64_t off, const ChunkInfo& ci) {
  std::lock_guard lock(mu);
  if (!ci.frozen.load(std::memory_order_relaxed)) return false;
  if (concurrent_trace) freed_while_tracing.push_back(off);
  return true;
}

//! The trace's decision over every frozen chunk (under mu): a block for which
//! live(chunk, block index, offset) holds stays allocated (its request size unknown), the
//! rest go to the free lists; a chunk or large span with nothing live becomes a free span,
//! durably (tag 3), so the next open — an instant restart above all, which hands out only
//! unfrozen chunks until its trace ends — can use it at once. Then the chunk unfreezes, with
//! release, so a free() that reads it unfrozen without mu sees the decision. (No free() of a
//! block in a chunk found empty can be pending: the walk reaches every block still to be
//! freed.)
template <class Live>
void Allocator::Impl::decide_frozen(Live live) {
  bool freed_spans = false;
  for (std::uint64_t c = 0; c < count; c = next_head(c)) {
    ChunkInfo& ci = chunks[c];
    if (!ci.frozen.load(std::memory_order_relaxed)) continue;
    if (ci.kind == ChunkKind::small) {
      const std::uint32_t size = classes.size(ci.cls), n = classes.blocks_per_chunk(ci.cls);
      auto& list = global_free[ci.cls];
      const std::size_t listed = list.size();
      ci.live = 0;
      for (std::uint32_t i = n; i-- > 0;) {
        const std::uint64_t off = chunk_offset(c) + std::uint64_t{i} * size;
        if (live(c, i, off)) {
          ci.requested[i].store(size, std::memory_order_relaxed);
          ++ci.live;
        } else {
          list.push_back(off);
        }
      }
      if (list.size() - listed == n) {  // nothing live: the whole chunk is free
        list.resize(listed);
        make_free_span(c, 1);
        freed_spans = true;
      }
    } else if (live(c, 0, chunk_offset(c))) {
      ci.large_requested.store(ci.span << chunk_shift, std::memory_order_relaxed);
    } else {
      make_free_span(c, ci.span);
      freed_spans = true;
    }
    ci.frozen.store(false, std::memory_order_release);
  }
  if (freed_spans) fence();
  ++returns;
}

// ---------------------------------------------------------------------------------------

Allocator::Allocator(Pool& pool, bool fresh) : impl_(std::make_unique<Impl>(pool, fresh)) {}
Allocator::~Allocator() = default;

void Allocator::drain_all_caches() noexcept {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  for (const std::unique_ptr<ThreadCache>& tc : m.caches) m.drain_cache(tc.get());
}

void Allocator::fail_nth_allocation(std::uint64_t nth) noexcept {
  impl_->fail_countdown.store(nth, std::memory_order_relaxed);
}

Status Allocator::allocate(std::size_t bytes, std::uint64_t* offset) noexcept {
  Impl& m = *impl_;
  if (bytes == 0) return Status::invalid_argument;
  if (m.fail_countdown.load(std::memory_order_relaxed) != 0) [[unlikely]] {
    if (m.fail_countdown.fetch_sub(1, std::memory_order_relaxed) == 1) return Status::out_of_space;
  }
  if (bytes > m.classes.max_small()) {
    const Status s = m.allocate_large(bytes, offset);
    if (Tracer* t = tracer(); t && s == Status::ok) [[unlikely]]
      t->on_alloc(m.base + *offset, block_size(*offset));
    return s;
  }
  const std::size_t cls = m.classes.class_of(bytes);
  std::uint64_t off;
  if (ThreadCache* tc = m.my_cache()) [[likely]] {
    auto& stack = tc->free[cls];
    if (stack.empty()) [[unlikely]] {
      if (Status s = m.refill(cls, stack); s != Status::ok) return s;
    }
    off = stack.back();
    stack.pop_back();
  } else if (Status s = m.allocate_small_locked(cls, &off); s != Status::ok) {
    return s;
  }
  const std::uint64_t c = (off - m.first) >> m.chunk_shift;
  const std::uint64_t i = m.block_index(off - m.chunk_offset(c), cls);
  m.chunks[c].requested[i].store(static_cast<std::uint32_t>(bytes), std::memory_order_relaxed);
  *offset = off;
  if (Tracer* t = tracer()) [[unlikely]]
    t->on_alloc(m.base + off, m.classes.size(cls));
  return Status::ok;
}

void Allocator::free(std::uint64_t offset) noexcept {
  Impl& m = *impl_;
  if constexpr (kCheckFrees) m.check_free(offset);
  if (Tracer* t = tracer()) [[unlikely]]
    t->on_free(m.base + offset, block_size(offset));
  const std::uint64_t c = (offset - m.first) >> m.chunk_shift;
  ChunkInfo& ci = m.chunks[c];
  if (ci.frozen.load(std::memory_order_acquire)) [[unlikely]] {
    if (m.free_frozen(offset, ci)) return;
    // recover_concurrent decided the chunk meanwhile and kept the block (the walk reached
    // it, as its contract asks of a block still to be freed): an ordinary free.
    if constexpr (kCheckFrees) m.check_free(offset);
  }
  if (ci.kind == ChunkKind::large_head) return m.free_large(c);
  const std::uint32_t cls = ci.cls;
  const std::uint64_t i = m.block_index(offset - m.chunk_offset(c), cls);
  if (ci.apart) [[unlikely]] return m.free_apart(c, i, offset);
  ci.requested[i].store(0, std::memory_order_relaxed);
  ThreadCache* tc = m.my_cache();
  if (!tc) [[unlikely]] {
    std::lock_guard lock(m.mu);
    m.global_free[cls].push_back(offset);
    ++m.returns;
    return;
  }
  auto& stack = tc->free[cls];
  stack.push_back(offset);
  if (stack.size() > 2 * m.batch[cls]) [[unlikely]] {
    // Return the bottom (least recently freed) batch to the global list.
    std::lock_guard lock(m.mu);
    auto& list = m.global_free[cls];
    const auto n = static_cast<std::ptrdiff_t>(m.batch[cls]);
    list.insert(list.end(), stack.begin(), stack.begin() + n);
    stack.erase(stack.begin(), stack.begin() + n);
    ++m.returns;
  }
}

Status Allocator::allocate_apart(std::size_t bytes, std::uint64_t* offset) noexcept {
  Impl& m = *impl_;
  if (bytes == 0 || bytes > m.classes.max_small()) return allocate(bytes, offset);
  if (m.fail_countdown.load(std::memory_order_relaxed) != 0) [[unlikely]] {
    if (m.fail_countdown.fetch_sub(1, std::memory_order_relaxed) == 1) return Status::out_of_space;
  }
  const std::size_t cls = m.classes.apart_class_of(bytes);
  std::uint64_t off;
  {
    std::lock_guard lock(m.mu);
    auto& list = m.global_free[cls];
    if (list.empty()) {
      std::uint64_t c;
      const std::uint64_t entry = chunk_entry_small(static_cast<std::uint32_t>(cls));
      if (Status s = m.take_chunks(1, entry, &c); s != Status::ok) {
        m.drain_my_cache();  // ordinary classes may hold whole chunks' worth of free blocks
        if (s = m.take_chunks(1, entry, &c); s != Status::ok) return s;
      }
      m.set_small(c, static_cast<std::uint32_t>(cls), false);
      m.push_chunk_blocks(c);
    }
    off = list.back();
    list.pop_back();
    const std::uint64_t c = (off - m.first) >> m.chunk_shift;
    ChunkInfo& ci = m.chunks[c];
    ci.requested[m.block_index(off - m.chunk_offset(c), cls)].store(
        static_cast<std::uint32_t>(bytes), std::memory_order_relaxed);
    ++ci.live;
  }
  *offset = off;
  if (Tracer* t = tracer()) [[unlikely]]
    t->on_alloc(m.base + off, m.classes.size(cls));
  return Status::ok;
}

bool Allocator::evacuate(std::uint64_t offset) noexcept {
  Impl& m = *impl_;
  if (offset < m.first) return false;
  const std::uint64_t c = (offset - m.first) >> m.chunk_shift;
  if (c >= m.count) return false;
  std::lock_guard lock(m.mu);
  ChunkInfo& ci = m.chunks[c];
  if (ci.kind != ChunkKind::small || !ci.apart || ci.evacuating ||
      ci.frozen.load(std::memory_order_relaxed))
    return false;
  ci.evacuating = true;
  std::erase_if(m.global_free[ci.cls],
                [&](std::uint64_t off) { return (off - m.first) >> m.chunk_shift == c; });
  if (ci.live == 0) {
    m.make_free_span(c, 1);
    fence();
    ++m.returns;
  }
  return true;
}

Allocator::ChunkUse Allocator::chunk_use(std::uint64_t c, std::uint64_t* span,
                                         std::uint32_t* live) const noexcept {
  Impl& m = *impl_;
  *span = 1;
  *live = 0;
  if (c >= m.count) return ChunkUse::other;
  std::lock_guard lock(m.mu);
  const ChunkInfo& ci = m.chunks[c];
  if (ci.frozen.load(std::memory_order_relaxed)) return ChunkUse::other;
  switch (ci.kind) {
    case ChunkKind::uncarved: return ChunkUse::free;
    case ChunkKind::interior: return ChunkUse::interior;
    case ChunkKind::large_head:
      *span = ci.span;
      if (ci.large_requested.load(std::memory_order_relaxed) == 0) return ChunkUse::free;
      *live = 1;
      return ChunkUse::large;
    case ChunkKind::small:
      if (!ci.apart) return ChunkUse::other;
      *live = ci.live;
      return ci.evacuating ? ChunkUse::evacuating : ChunkUse::apart;
  }
  return ChunkUse::other;
}

std::size_t Allocator::block_size(std::uint64_t offset) const noexcept {
  const Impl& m = *impl_;
  if (offset < m.first) return 0;
  const std::uint64_t c = (offset - m.first) >> m.chunk_shift;
  if (c >= m.count) return 0;
  const ChunkInfo& ci = m.chunks[c];
  if (ci.kind == ChunkKind::small) return m.classes.size(ci.cls);
  if (ci.kind == ChunkKind::large_head) return ci.span << m.chunk_shift;
  return 0;
}

bool Allocator::holds(std::uint64_t offset, std::size_t len) const noexcept {
  const BlockRef r = impl_->locate(offset);
  return r.error == nullptr && len <= block_size(offset);
}

bool Allocator::trace_pending() const noexcept {
  return impl_->trace_pending.load(std::memory_order_acquire);
}

Result<void> Allocator::recover(BlockWalker walk) {
  Impl& m = *impl_;
  // With no trace pending (a fresh pool, a pool reopened before any chunk was carved, or a
  // second call) the walk is still checked the same way, but nothing changes.
  VisitedSet seen(m.count);
  std::string problem;
  Result<void> walked = walk([&](std::uint64_t off) {
    if (!problem.empty()) return;
    const char* why = nullptr;
    switch (m.reach(off, seen, &why)) {
      case Impl::Reach::ok: break;
      case Impl::Reach::not_a_block: problem = "recovery reached offset " + hex(off) + ", " + why; break;
      case Impl::Reach::twice: problem = "recovery reached block " + hex(off) + " twice"; break;
      case Impl::Reach::free: problem = "recovery reached block " + hex(off) + ", which is free"; break;
    }
  });
  if (!walked) return walked;
  if (!problem.empty()) return Error{Status::corrupt, problem};
  if (!trace_pending()) return {};

  std::lock_guard lock(m.mu);
  m.decide_frozen([&](std::uint64_t c, std::uint64_t block, std::uint64_t) { return seen.test(c, block); });
  m.trace_pending.store(false, std::memory_order_release);
  return {};
}

std::uint64_t Allocator::trace_boundary() const noexcept {
  return impl_->chunk_offset(impl_->traced_chunks);
}

bool Allocator::begin_concurrent_recovery() noexcept {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  if (!trace_pending()) return false;
  m.concurrent_trace = true;
  return true;
}

Result<void> Allocator::recover_concurrent(BlockWalker walk) {
  Impl& m = *impl_;
  {
    std::lock_guard lock(m.mu);
    if (!m.concurrent_trace) return recover(walk);  // not begun, or nothing pending
  }
  // The walk runs without mu: allocate() and free() go on. Below the boundary nothing it
  // reads changes (frozen chunks keep their kind, and hand out nothing); above it the
  // chunks are this session's, not the walk's to report.
  VisitedSet seen(m.count);
  std::string problem;
  Result<void> walked = walk([&](std::uint64_t off) {
    if (!problem.empty()) return;
    const std::uint64_t c = off < m.first ? m.count : (off - m.first) >> m.chunk_shift;
    if (c >= m.traced_chunks) {
      problem = "recovery reached offset " + hex(off) + ", not in a traced chunk";
      return;
    }
    const BlockRef r = m.locate(off);
    if (r.error) problem = "recovery reached offset " + hex(off) + ", " + r.error;
    else (void)seen.mark(r.chunk, r.block, m.blocks_in(r.chunk));  // twice: fine here
  });
  if (walked && !problem.empty()) walked = Error{Status::corrupt, problem};

  std::lock_guard lock(m.mu);
  if (!walked) {  // the traced chunks stay frozen: nothing reused, nothing lost
    m.concurrent_trace = false;
    m.freed_while_tracing = {};
    return walked;
  }
  // Blocks freed while the walk ran are free whatever it reached (it reads a tree that
  // changes under it: it may have reached them before their unlink). Each is recorded once:
  // a frozen block is never handed out again, so never freed twice.
  std::sort(m.freed_while_tracing.begin(), m.freed_while_tracing.end());
  auto live = [&](std::uint64_t c, std::uint64_t block, std::uint64_t off) {
    return seen.test(c, block) &&
           !std::binary_search(m.freed_while_tracing.begin(), m.freed_while_tracing.end(), off);
  };
  m.decide_frozen(live);
  m.freed_while_tracing = {};
  m.concurrent_trace = false;
  m.trace_pending.store(false, std::memory_order_release);
  return {};
}

AuditReport Allocator::audit(BlockWalker walk) const {
  const Impl& m = *impl_;
  AuditReport rep;
  VisitedSet seen(m.count);
  Result<void> walked = walk([&](std::uint64_t off) {
    const char* why = nullptr;
    switch (m.reach(off, seen, &why)) {
      case Impl::Reach::ok: break;
      case Impl::Reach::twice: rep.doubly_used.push_back(off); break;
      case Impl::Reach::not_a_block:
      case Impl::Reach::free: rep.not_allocated.push_back(off); break;
    }
  });
  if (!walked) {
    // A partial walk: what it did not reach is not known to be leaked.
    rep.walk_error = walked.error().message;
    return rep;
  }
  // Live blocks nobody reached. Chunks still frozen (trace pending) are not judged: which
  // of their blocks are live is exactly what the pending trace will decide.
  for (std::uint64_t c = 0; c < m.count; c = m.next_head(c)) {
    const ChunkInfo& ci = m.chunks[c];
    if (ci.frozen.load(std::memory_order_relaxed)) continue;
    if (ci.kind == ChunkKind::small) {
      const std::uint32_t size = m.classes.size(ci.cls);
      for (std::uint32_t i = 0; i < m.classes.blocks_per_chunk(ci.cls); ++i)
        if (ci.requested[i].load(std::memory_order_relaxed) != 0 && !seen.test(c, i))
          rep.leaked.push_back(m.chunk_offset(c) + std::uint64_t{i} * size);
    } else if (ci.kind == ChunkKind::large_head) {
      if (ci.large_requested.load(std::memory_order_relaxed) != 0 && !seen.test(c, 0))
        rep.leaked.push_back(m.chunk_offset(c));
    }
  }
  return rep;
}

AllocatorStats Allocator::stats() const noexcept {
  Impl& m = *impl_;
  AllocatorStats s;
  std::lock_guard lock(m.mu);
  s.chunks_used = m.hwm;
  s.chunks_total = m.count;
  s.reclaim_scans = m.reclaim_scans;
  for (std::uint64_t c = 0; c < m.count; c = m.next_head(c)) {
    const ChunkInfo& ci = m.chunks[c];
    if (ci.kind == ChunkKind::small) {
      const std::uint32_t size = m.classes.size(ci.cls);
      for (std::uint32_t i = 0; i < m.classes.blocks_per_chunk(ci.cls); ++i) {
        const std::uint32_t req = ci.requested[i].load(std::memory_order_relaxed);
        if (req == 0) continue;
        ++s.blocks_allocated;
        s.bytes_allocated += size;
        s.bytes_requested += req;
      }
    } else if (ci.kind == ChunkKind::large_head) {
      const std::uint64_t req = ci.large_requested.load(std::memory_order_relaxed);
      if (req == 0) continue;
      ++s.blocks_allocated;
      s.bytes_allocated += ci.span << m.chunk_shift;
      s.bytes_requested += req;
    }
  }
  return s;
}

std::string AuditReport::describe() const {
  constexpr std::size_t kShow = 5;
  std::string out;
  auto list = [&](const char* what, const std::vector<std::uint64_t>& v) {
    for (std::size_t i = 0; i < v.size() && i < kShow; ++i)
      out += std::string(what) + " block " + hex(v[i]) + "\n";
    if (v.size() > kShow)
      out += "... and " + std::to_string(v.size() - kShow) + " more " + what + " blocks\n";
  };
  list("leaked", leaked);
  list("doubly used", doubly_used);
  list("not allocated", not_allocated);
  if (out.empty()) out = "audit ok\n";
  return out;
}

}  // namespace wort::pm
