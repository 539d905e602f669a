// art_engine/sync.h — what lock-free readers and the tree's writers need to share pool words:
// atomic loads of every word a writer may change under a reader, and the commit of a
// commit word narrower than 8 bytes (NODE16 bitmap, NODE48 index byte), non-temporal or
// cached.
//
// Dirty reads (README "No dirty reads") are prevented two ways. Removes, merges, shrinks and
// value updates commit non-temporally (pm::commit_nt / pm::publish_nt + fence: no other core
// can read the new value before it is durable, ROART §3.4.1). The commits that make a new
// leaf reachable (inserts) are cached (pm::publish: fence, store, write-back, fence: a
// movnti would evict a line the insert has just used: release_to_readers + pm::publish, or
// publish_field_cached); their leaf is born fresh and a
// reader that meets a fresh leaf writes the publishing store back and fences before it uses
// the leaf. An 8-byte store is the unit: a narrower commit word is committed by storing the
// aligned 8-byte word that holds it, the other bytes unchanged (only the writer holding the
// node's lock stores to a node's words, so nothing else can change them).
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "index/art_engine/art_layout.h"
#include "index/kit/hot_load.h"
#include "pm/faults.h"
#include "pm/persist.h"

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace wort::art_engine {

//! One atomic acquire load of a pool word a writer may change under the reader.
template <class T>
inline T load(const T* p) noexcept {
  static_assert(std::is_integral_v<T>);
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

//! load() of a commit byte that writers commit through its aligned 8-byte word
//! (commit_field / publish_field_cached: NODE48's index[b]). The same one-byte acquire load, except
//! under ThreadSanitizer, which matches an acquire with a release only at the same address:
//! there it loads the whole aligned word (what the commit stored) and extracts the byte, so
//! the sanitizer sees the publication (on x86 both are plain loads).
inline std::uint8_t load_committed_byte(const std::uint8_t* p) noexcept {
#if defined(__SANITIZE_THREAD__)
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::uint64_t w = __atomic_load_n(
      reinterpret_cast<const std::uint64_t*>(a & ~std::uintptr_t{7}), __ATOMIC_ACQUIRE);
  return static_cast<std::uint8_t>(w >> (8 * (a & 7)));
#else
  return load(p);
#endif
}

//! A trivially copyable 8-byte word (a node header, a NODE4 slot word) read whole.
template <class T>
inline T load_word(const T* p) noexcept {
  static_assert(sizeof(T) == 8 && std::is_trivially_copyable_v<T>);
  return std::bit_cast<T>(__atomic_load_n(reinterpret_cast<const std::uint64_t*>(p),
                                          __ATOMIC_ACQUIRE));
}

#if WORT_FAULTS  // test builds only (pm/faults.h)
//! Tests only — the broken variants PmartConcurrency.AScanSkipsAnEntryReusedUnderIt and
//! AScanSkipsAnEntryReusedBetweenItsLoads must catch: a node's ordered walk (for_each_from)
//! trusts its snapshot of the node's entries and reports whatever pointer the entry's slot
//! holds by the time the walk gets there (no re-check at all); or it re-checks the commit
//! word but does not read the pointer again (an A-B-A between the two loads fools it).
inline std::atomic<bool> g_broken_walk_trusts_snapshot{false};
inline std::atomic<bool> g_broken_walk_skips_pointer_reread{false};

//! Tests only: called, if set, between an ordered walk's load of an entry's child pointer
//! and its re-check (still_named), with g_walk_ctx — where a test makes the A-B-A happen.
using WalkHook = void (*)(void*);
inline std::atomic<WalkHook> g_walk_hook{nullptr};
inline void* g_walk_ctx = nullptr;
#endif

//! For an ordered walk that has just read an entry's child pointer c from *slot: true if it
//! may report it. `named()` re-reads the entry's commit word (node_ops.h, kReusesSlots): it
//! must still name that slot for that key byte — else the entry was removed since the walk's
//! snapshot (and the slot perhaps reused by another byte). Then the pointer is read again
//! and must still be c: between the first load and the re-check the entry could have been
//! removed, the slot reused by another byte and freed again, and the first byte added back
//! there (an A-B-A the commit word alone does not show). Equal, c is the entry's: a pointer
//! that leaves a slot returns to it only with the same key byte (a removed entry's leaf or
//! node is unlinked for good and, retired, is not reused while this reader is pinned; a
//! split or merge moves a node only within its byte's slots; a writer stores a pointer only
//! under the node's lock, after its checks, and never takes it back).
template <class Named>
inline bool still_named(const Ref* slot, Ref c, Named named) noexcept {
  WORT_FAULT_HOOK(g_walk_hook, g_walk_ctx);
  const bool n = named();
  if (n && load(slot) == c) [[likely]] return true;
  if (n) return WORT_FAULT(g_broken_walk_skips_pointer_reread);
  return WORT_FAULT(g_broken_walk_trusts_snapshot);
}

//! load(p) of a child pointer word on the lookup's hot path: kit::hot_load (one mov).
inline Ref load_ref(const Ref* p) noexcept { return kit::hot_load(p); }

//! The node's branch position from one 4-byte load of depth and prefix_len together (an
//! in-place split or merge changes both and keeps their sum: read apart, they could mix).
inline unsigned load_branch_pos(const NodeBase* n) noexcept {
  static_assert(offsetof(NodeHeader, depth) == 0 && offsetof(NodeHeader, prefix_len) == 2 &&
                std::endian::native == std::endian::little);
  const std::uint32_t w = __atomic_load_n(reinterpret_cast<const std::uint32_t*>(&n->hdr),
                                          __ATOMIC_ACQUIRE);
  return (w & 0xffffu) + (w >> 16);
}

namespace detail {
//! The aligned 8-byte word holding *field, with *field replaced by v.
template <class T>
inline std::uint64_t* widened(T* field, T v, std::uint64_t* out) noexcept {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8);
  const auto a = reinterpret_cast<std::uintptr_t>(field);
  auto* w = reinterpret_cast<std::uint64_t*>(a & ~std::uintptr_t{7});
  std::uint64_t word = __atomic_load_n(w, __ATOMIC_RELAXED);
  std::memcpy(reinterpret_cast<unsigned char*>(&word) + (a & 7), &v, sizeof(T));
  *out = word;
  return w;
}
}  // namespace detail

//! pm::commit_nt of a commit word of up to 8 bytes (through its aligned 8-byte word).
template <class T>
inline void commit_field(T* field, T v) noexcept {
  std::uint64_t word;
  std::uint64_t* w = detail::widened(field, v, &word);
  pm::commit_nt(w, word);
}

//! Release order for the readers' acquire loads of a cached commit store (pm::publish's
//! own store is relaxed): a release fence, no instruction on x86; under ThreadSanitizer,
//! which does not model fences with relaxed stores well, __tsan_release on the word.
[[gnu::always_inline]] inline void release_to_readers(const void* word) noexcept {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(const_cast<void*>(word));
#else
  (void)word;
  std::atomic_thread_fence(std::memory_order_release);
#endif
}

//! An insert's commit of a commit word of up to 8 bytes (through its aligned 8-byte word):
//! release_to_readers, then pm::publish (fence: the new leaf written back before it; the
//! store; its write-back; fence). Cached: another thread may read the word before its
//! fence; the leaf it publishes is fresh until then. (The 8-byte insert commits call
//! release_to_readers + pm::publish at their sites.)
template <class T>
inline void publish_field_cached(T* field, T v) noexcept {
  std::uint64_t word;
  std::uint64_t* w = detail::widened(field, v, &word);
  release_to_readers(w);
  pm::publish(w, word);
}

}  // namespace wort::art_engine
