// index/fastfair/fastfair_node.h — one node: reading its logical content (end, dead slot,
// linear search, inner routing) and the FAST in-place insert and delete (§3, Algorithm 1).
//
// FAST insert: records right of the position shift right one by one, right to left, each
// as "pointer, then key"; the key store of the new record is the commit (pm::commit_nt:
// a non-temporal store persists no earlier than the stores before it to its own line, so
// the line holding the new pointer needs no write-back of its own). A line is written
// back (and fenced) only when
// the shift is about to dirty the next line to the left, so lines reach PM in shift order
// and any crash leaves at most one dead slot. FAST delete: the commit (pm::commit_nt)
// stores the right neighbour's key word into the deleted slot, which makes it dead; that
// store is the whole delete. The left shift that
// squeezes the dead slot out (left to right, each step "pointer into the left slot, then
// the next key word into this one", same line rule: the write-back happens before a NEW
// line is dirtied, Witcher bug 3) is made by the next writer of the node before its own
// commit (repair_dead), exactly as after a crash — so no remove stores after its commit.
#pragma once

#include <cstdint>
#include <utility>

#include "index/fastfair/fastfair_key.h"
#include "index/fastfair/fastfair_layout.h"
#include "pm/faults.h"
#include "pm/persist.h"

namespace wort::fastfair {

//! Test-only faults: each reproduces a bug of the authors' code, or stops a split where a
//! crash would, so a test can show the bug is caught or the state repaired. Set only by
//! tests, and only in a build with WORT_FAULTS (pm/faults.h); elsewhere `active` is the
//! constant 0 and every check of it compiles to nothing.
namespace faults {
enum : unsigned {
  left_shift_flush_at_line_start = 1u,  // Witcher bug 3: remove_key's write-back
  split_no_fence_before_link = 2u,      // the sibling may reach PM after the link
  stop_after_link = 4u,                 // split stops before the cut (crash state)
  stop_after_cut = 8u,                  // split stops before the parent insert
  skip_dead_repair = 16u,               // Witcher bug 4: writers leave a dead slot as it is
  stop_after_detach = 32u,              // a merge stops once the parent let go (crash state)
  no_writer_validation = 64u,           // the leaf path skips its re-validation after the lock
  writer_pause = 128u,                  // the leaf path calls pause_hook (see below)
  append_keeps_counter = 256u,          // an append leaves the switch counter as it is
  reader_ignores_cut = 512u,            // a right-to-left reader takes a cut for the end
};
#if WORT_FAULTS
inline unsigned active = 0;
//! Called by a leaf-path writer with `writer_pause`: pause_hook(0) after its descent, before
//! it locks the leaf; pause_hook(1) once the leaf is locked and validated.
inline void (*pause_hook)(int where) = nullptr;
#else
inline constexpr unsigned active = 0;
#endif
//! pause_hook(where), if the faults `f` (a copy of `active`) hold writer_pause and a hook.
inline void pause(unsigned f, int where) noexcept {
#if WORT_FAULTS
  if ((f & writer_pause) && pause_hook) pause_hook(where);
#else
  (void)f, (void)where;
#endif
}
}  // namespace faults

//! One atomic acquire load of a pool word a writer may change under a reader (or under a
//! leaf-path writer's lock-free descent).
template <class T>
inline T ld(const T* p) noexcept {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

//! Flushes and fences the line being written when the next store goes to another line
//! (the FAST rule); finish() writes back the last one.
class LineWriter {
 public:
  void touch(const void* p) noexcept {
    const auto line = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{63};
    if (line == line_) return;
    if (line_ != 0) {
      pm::flush(reinterpret_cast<const void*>(line_), 64);
      pm::fence();
      fenced_ = true;
    }
    line_ = line;
  }
  //! Writes back and fences the line written last (if any).
  void finish() noexcept {
    if (line_ != 0) pm::persist(reinterpret_cast<const void*>(line_), 64);
    line_ = 0;
  }
  //! True once a line change has fenced: every write-back issued before it is ordered.
  bool fenced() const noexcept { return fenced_; }

 private:
  std::uintptr_t line_ = 0;
  bool fenced_ = false;
};

//! Whether two pool addresses lie in one 64-byte line (a non-temporal commit needs no
//! write-back or fence for earlier stores to its own line: README "The commit store").
inline bool same_line(const void* a, const void* b) noexcept {
  return ((reinterpret_cast<std::uintptr_t>(a) ^ reinterpret_cast<std::uintptr_t>(b)) &
          ~std::uintptr_t{63}) == 0;
}

//! Passes the records from r (before e) whose key word is below lt (SearchKey::lt: inline
//! keys below the search key), two per step with one bound test per two keys. Returns the
//! first record not passed (e if none) with its key word in *k (kEmpty at e). One atomic
//! load per key word, `probe` before each (tests).
template <class Probe>
[[gnu::always_inline]] inline const Record* pass_below(const Record* r, const Record* e,
                                                       std::uint64_t lt, std::uint64_t* k,
                                                       Probe& probe) noexcept {
  for (const Record* const e1 = e - 1; r < e1; r += 2) {
    probe();
    if ((*k = ld(&r[0].key)) >= lt) return r;
    probe();
    if ((*k = ld(&r[1].key)) >= lt) return r + 1;
  }
  if (r != e) {
    probe();
    if ((*k = ld(&r->key)) >= lt) return r;
    ++r;
  }
  *k = kEmpty;
  return r;
}

struct NodeRef {
  Node* n;
  unsigned slots;

  Record* rec() const noexcept { return n->rec; }
  bool leaf() const noexcept { return n->h.level == 0; }

  //! First slot holding kEmpty (slots if none).
  unsigned end() const noexcept {
    unsigned i = 0;
    while (i < slots && n->rec[i].key != kEmpty) ++i;
    return i;
  }
  //! Slot i < end is dead when its key word equals its right neighbour's.
  bool dead(unsigned i, unsigned end) const noexcept {
    return i + 1 < end && n->rec[i].key == n->rec[i + 1].key;
  }
  //! The dead slot, or -1.
  int find_dead(unsigned end) const noexcept {
    for (unsigned i = 0; i + 1 < end; ++i)
      if (n->rec[i].key == n->rec[i + 1].key) return static_cast<int>(i);
    return -1;
  }
  //! end() and find_dead() in one pass.
  std::pair<unsigned, int> end_and_dead() const noexcept {
    const Record* r = n->rec;
    int dead = -1;
    std::uint64_t prev = kEmpty;  // never equal to a key before the end
    unsigned i = 0;
    for (; i < slots; ++i) {
      const std::uint64_t k = r[i].key;
      if (k == kEmpty) break;
      if (k == prev) dead = static_cast<int>(i) - 1;
      prev = k;
    }
    return {i, dead};
  }
  //! Live records (slots before end, minus a dead one).
  unsigned live_count() const noexcept {
    const auto [e, d] = end_and_dead();
    return e - (d >= 0 ? 1u : 0u);
  }
  //! Smallest live key word, kEmpty if none.
  //! (A dead slot 0 holds the same word as the live slot 1.) One atomic load: a writer reads
  //! the first key of a sibling whose own writer may be changing it.
  std::uint64_t first_key() const noexcept { return ld(&n->rec[0].key); }
  //! Largest live key word, kEmpty if none (the slot before end is never dead).
  std::uint64_t last_key() const noexcept {
    const unsigned e = end();
    return e == 0 ? kEmpty : n->rec[e - 1].key;
  }

  //! Leaf: the live slot holding `s`; else -1 if a larger key was met (s is not in this
  //! node's range), -2 if s is beyond every key (it may be in the sibling). Linear search,
  //! left to right (§5).
  int find(const SearchKey& s, const KeyReader& kr) const noexcept {
    for (unsigned i = 0; i < slots; ++i) {
      const std::uint64_t k = n->rec[i].key;
      if (k < s.lt) continue;  // an inline key below s
      if (k == kEmpty) return -2;
      const int c = kr.compare(s, k);
      if (c < 0) return -1;
      if (c == 0) {
        if (i + 1 < slots && n->rec[i + 1].key == k) continue;  // dead: the copy right is live
        return static_cast<int>(i);
      }
    }
    return -2;
  }

  //! What a writer that holds the node reads of it, in one pass left to right: the end, the
  //! dead slot, find()'s answer and lower_bound()'s slot (each as those functions give it).
  struct Scan {
    unsigned end;  // first slot holding kEmpty (slots if none)
    int dead;      // the dead slot, or -1
    int at;        // the live slot holding s; -1 a larger key met; -2 beyond every key
    unsigned pos;  // first slot (< end) whose key is >= s (end if none)
  };
  Scan scan(const SearchKey& s, const KeyReader& kr) const noexcept {
    const Record* r = n->rec;
    Scan sc{0, -1, -2, 0};
    std::uint64_t prev = kEmpty;  // never equal to a key before the end
    unsigned i = 0;
    for (; i < slots; ++i) {  // keys below s
      const std::uint64_t k = r[i].key;
      if (k >= s.lt && (k == kEmpty || kr.compare(s, k) <= 0)) break;
      if (k == prev) sc.dead = static_cast<int>(i) - 1;
      prev = k;
    }
    sc.pos = i;
    if (i < slots && r[i].key != kEmpty) {
      const std::uint64_t k = r[i].key;  // the first key >= s (prev < s: not its copy)
      if (kr.compare(s, k) == 0)
        sc.at = static_cast<int>(i + 1 < slots && r[i + 1].key == k ? i + 1 : i);
      else
        sc.at = -1;
      for (prev = k, ++i; i < slots; ++i) {  // the rest: the end and the dead slot only
        const std::uint64_t kk = r[i].key;
        if (kk == kEmpty) break;
        if (kk == prev) sc.dead = static_cast<int>(i) - 1;
        prev = kk;
      }
    }
    sc.end = i;
    return sc;
  }
  //! scan() of a node that holds no dead slot (the caller knows: dead is -1): the keys below
  //! s are passed two per step with one test each, the rest only to find the end.
  Scan scan_clean(const SearchKey& s, const KeyReader& kr) const noexcept {
    const Record* const first = n->rec;
    const Record* const e = first + slots;
    const Record* r = first;
    auto none = [] {};
    std::uint64_t k;
    int c = 1;
    for (;; ++r) {  // keys below s
      r = pass_below(r, e, s.lt, &k, none);
      if (k == kEmpty || (c = kr.compare(s, k)) <= 0) break;
    }
    Scan sc{0, -1, -2, static_cast<unsigned>(r - first)};
    if (k != kEmpty) {
      sc.at = c == 0 ? static_cast<int>(sc.pos) : -1;
      for (++r; r < e && r->key != kEmpty;) ++r;  // the rest: the end only
    }
    sc.end = static_cast<unsigned>(r - first);
    return sc;
  }

  //! Inner: the child for `s` (last live record with key <= s, else leftmost). *beyond is
  //! set if s is at or past the last key (then it may belong to the sibling). One atomic
  //! load per word (the same mov on x86-64): a leaf-path writer routes with it while the
  //! structure writer may change the node, and validates its whole descent afterwards. The
  //! keys are passed first and only the last one's pointer is loaded: every pointer a writer
  //! stores names a child (it is stored before its key).
  std::uint64_t route(const SearchKey& s, const KeyReader& kr, bool* beyond) const noexcept {
    *beyond = true;
    const Record* const first = n->rec;
    const Record* const e = first + slots;
    const Record* r = first;
    auto none = [] {};
    for (;; ++r) {
      // No dead-slot test needed: a dead slot's key equals its right neighbour's, so when
      // it is <= s the live copy after it is taken instead.
      std::uint64_t k;
      r = pass_below(r, e, s.lt, &k, none);
      if (k == kEmpty) break;
      if (kr.compare(s, k) < 0) {
        *beyond = false;
        break;
      }
    }
    std::uint64_t child = r == first ? ld(&n->h.leftmost) : ld(&r[-1].ptr);
    if (child == 0) child = ld(&n->rec[0].ptr);  // below a split sibling's fence: not reached
    return child;
  }

  //! First slot (< end) whose key is >= s (end if none). No dead slot expected.
  unsigned lower_bound(const SearchKey& s, const KeyReader& kr, unsigned end) const noexcept {
    unsigned i = 0;
    for (; i < end; ++i) {
      const std::uint64_t k = n->rec[i].key;
      if (k >= s.lt && kr.compare(s, k) <= 0) break;
    }
    return i;
  }
};

// --- lock-free readers (§5) ---------------------------------------------------------------
//
// Readers take no lock. Every word a writer may change under them is read with one atomic
// acquire load (ld); writers store the words readers follow with release stores
// (pm::store_release) and commit with non-temporal stores (pm::commit_nt / publish_nt), so
// a reader never sees a commit before it is durable. A node is read in the direction its
// switch counter gives — even (inserts: records move right) left to right, odd (deletes and
// the left shift that squeezes a dead slot out: records move left) right to left — so a
// record moving the way the scan goes cannot be passed; the counter is read again after the
// node and the node is read again if it changed (a writer changed direction meanwhile).
//
// A record is read key, pointer, key again: a slot whose key changed between the two key
// loads is a torn read (read the node again). Left to right, the next slot's key is read
// after the pointer and before the key's second load: equal to this one, this slot is the
// dead left copy (its pointer may be the left neighbour's, written by the shift before its
// key) and the live copy is the next slot (find_ltr). Right to left, the first copy met is
// the right (live) one for a search, which stops at the first key <= its key; a read of
// every record skips each key not below the last one it took (collect_sync), and a kEmpty
// met after a record is a cut under the read (cut_under_read). FAST_FAIR issue #16: the
// authors' inner search loaded a record twice and could pair one record's key with
// another's pointer; here a routing left to right passes keys only and reads the last one
// passed as find_ltr reads a record (route_ltr), and right to left each decision uses the
// one load of each word.

//! The default reader probe (tests pass one that runs a writer step before each load).
struct NoProbe {
  void operator()() const noexcept {}
};

//! A lock-free leaf search: at >= 0 the slot found (value its value), -1 not in this node
//! (a larger key met), -2 beyond every key (it may be in the sibling).
struct Found {
  int at;
  std::uint64_t value;
};

namespace detail {
enum : int { kTorn = -3 };

//! Left to right, whether slot i was the dead left copy when its pointer was loaded: the
//! next slot's key is loaded after the pointer and BEFORE the key's second load. An
//! insert's right shift copies slot i into slot i+1 (pointer, key) before it stores slot
//! i-1's pointer into slot i, then its key; while slot i's key is unchanged (the second
//! load), slot i+1 keeps that copy (a later shift would copy the same key into it again),
//! so a pointer that was no longer slot i's own is seen with next == k. Loaded after the
//! second load (kStrictCopies = false, the order before), the first insert could finish and
//! a second one shift slot i again into slot i+1 in between (two inserts change no
//! counter): the reader took k with its left neighbour's value
//! (`DeadCopyUnderALeftToRightReaderIsSeen`).
template <bool kStrictCopies, class Probe>
inline Found find_ltr(const Node* n, unsigned slots, const SearchKey& s, const KeyReader& kr,
                      Probe& probe) noexcept {
  const Record* const e = n->rec + slots;
  for (const Record* r = n->rec;; ++r) {
    std::uint64_t k;
    r = pass_below(r, e, s.lt, &k, probe);  // inline keys below s: one load and one test each
    if (k == kEmpty) return {-2, 0};         // (also past the last slot)
    const int c = kr.compare(s, k);
    if (c < 0) return {-1, 0};
    if (c > 0) continue;
    const unsigned i = static_cast<unsigned>(r - n->rec);
    probe();
    const std::uint64_t v = ld(&n->rec[i].ptr);
    std::uint64_t next = kEmpty;
    if (kStrictCopies && i + 1 < slots) {
      probe();
      next = ld(&n->rec[i + 1].key);
    }
    probe();
    if (ld(&n->rec[i].key) != k) return {kTorn, 0};
    if (!kStrictCopies && i + 1 < slots) {
      probe();
      next = ld(&n->rec[i + 1].key);
    }
    if (next == k) continue;  // the dead left copy: the next slot is live
    return {static_cast<int>(i), v};
  }
}

//! A right-to-left reader met kEmpty after a record right of it: the node was cut under the
//! read (a split's commit, or a borrow's whose left node gives: kEmpty stored in the middle
//! of the records, no counter change), and the records it read right of the cut are the new
//! node's copies — the new node's first record, in the cut slot, it has not read. Taking
//! the kEmpty for the end moving left missed that one record (a lookup answered "absent", a
//! scan skipped it as passed: README "The reader failures of the same-leaves test"); the
//! node is read again instead, and then ends at the cut. Only a cut puts kEmpty left of a
//! record a reader can still see without a counter change: a left shift and a remove store
//! kEmpty only at the end (a reader that read a record there before them and meets the
//! later kEmpty reads again too: the node changed, nothing is lost). False only with the
//! test-only fault `reader_ignores_cut` (the reader before the fix); read only here.
inline bool cut_under_read() noexcept {
  return !(faults::active & faults::reader_ignores_cut);
}

//! The end seen left to right (the first kEmpty key), for the right-to-left readers.
template <class Probe>
inline unsigned end_ltr(const Node* n, unsigned slots, Probe& probe) noexcept {
  unsigned e = 0;
  for (; e < slots; ++e) {
    probe();
    if (ld(&n->rec[e].key) == kEmpty) break;
  }
  return e;
}

template <class Probe>
inline Found find_rtl(const Node* n, unsigned slots, const SearchKey& s, const KeyReader& kr,
                      Probe& probe) noexcept {
  bool met_larger = false;
  for (unsigned i = end_ltr(n, slots, probe); i-- > 0;) {
    probe();
    const std::uint64_t k = ld(&n->rec[i].key);
    if (k == kEmpty) {
      // Nothing read right of it: the end moved left (a left shift's last store, a remove
      // of the last record). After a record: a cut (see cut_under_read).
      if (met_larger && cut_under_read()) [[unlikely]] return {kTorn, 0};
      continue;
    }
    const int c = kr.compare(s, k);
    if (c > 0) return {met_larger ? -1 : -2, 0};
    met_larger = true;
    if (c < 0) continue;
    probe();
    const std::uint64_t v = ld(&n->rec[i].ptr);
    probe();
    if (ld(&n->rec[i].key) != k) return {kTorn, 0};
    return {static_cast<int>(i), v};
  }
  return {met_larger ? -1 : -2, 0};
}
}  // namespace detail

//! Lock-free leaf search in the direction of the switch counter, read again until the
//! counter is the same before and after (kRetry = false: the broken variant without that
//! retry, kept so a test can show it failing). `after`: the node's sibling word, loaded
//! before that last counter load, so it is the one of the read the counter validated (a
//! merge that appended to this node past the end the read saw, then unlinked the node the
//! read could have gone on to, changed the counter: see sibling_for). kMask < 0xffff: the
//! broken variant that compares only those counter bits (0xff: the paper's one-byte counter,
//! whose value was exactly this low byte), kept so a test can show a wrap fooling it.
template <bool kRetry = true, class Probe = NoProbe, SwitchCount kMask = 0xffff,
          bool kStrictCopies = true>
inline Found find_sync(const Node* n, unsigned slots, const SearchKey& s, const KeyReader& kr,
                       Probe probe = {}, std::uint64_t* after = nullptr) noexcept {
  for (;;) {
    probe();
    const SwitchCount c = ld(&n->h.switch_counter) & kMask;
    const Found f = (c & 1u) ? detail::find_rtl(n, slots, s, kr, probe)
                             : detail::find_ltr<kStrictCopies>(n, slots, s, kr, probe);
    if (f.at == detail::kTorn) continue;
    if (after != nullptr) {
      probe();
      *after = ld(&n->h.sibling);
    }
    if constexpr (kRetry) {
      probe();
      if ((ld(&n->h.switch_counter) & kMask) != c) continue;
    }
    return f;
  }
}

namespace detail {
//! route_sync left to right: the keys below s are passed with one load each; then the last
//! one passed (slot j) is read as find_ltr reads a record: key, pointer, the next slot's
//! key, key again. Its pointer is the child when its key is unchanged and <= s and the next
//! key is the one the pass stopped at (above s, or kEmpty): slot j is then live (a right shift copies slot j into slot
//! j+1 before it changes slot j's pointer, so a pointer that was no longer slot j's own is
//! seen with a next key <= s), and no key in (key j, s] was in the node when the next key was
//! loaded. Otherwise the node is read again (*torn). The child (0: no key <= s); *beyond
//! false if a key above s was met.
template <class Probe>
[[gnu::always_inline]] inline std::uint64_t route_ltr(const Node* n, unsigned slots,
                                                      const SearchKey& s, const KeyReader& kr,
                                                      bool* beyond, bool* torn,
                                                      Probe& probe) noexcept {
  const Record* const first = n->rec;
  const Record* const e = first + slots;
  const Record* r = first;
  std::uint64_t stop;  // the key word the pass stopped at (kEmpty at the end)
  for (;; ++r) {
    r = pass_below(r, e, s.lt, &stop, probe);
    if (stop == kEmpty) break;
    if (kr.compare(s, stop) < 0) {
      *beyond = false;
      break;
    }
  }
  if (r == first) return 0;
  const Record* const last = r - 1;
  probe();
  const std::uint64_t k = ld(&last->key);
  probe();
  const std::uint64_t child = ld(&last->ptr);
  std::uint64_t next = kEmpty;
  if (r != e) {
    probe();
    next = ld(&r->key);
  }
  probe();
  // (the next key unchanged since the pass stopped at it: above s, or kEmpty)
  if (ld(&last->key) != k || next != stop || k == kEmpty ||
      (k >= s.lt && kr.compare(s, k) < 0)) {
    *torn = true;
    return 0;
  }
  return child;
}

//! route_sync right to left: the first key <= s met is the live record (its pointer read
//! between two equal loads of its key). The child (0: none met); *beyond whether no key
//! above s was met first; *torn on a torn record or a cut under the read (read again).
template <class Probe>
[[gnu::always_inline]] inline std::uint64_t route_rtl(const Node* n, unsigned slots,
                                                      const SearchKey& s, const KeyReader& kr,
                                                      bool* beyond, bool* torn,
                                                      Probe& probe) noexcept {
  std::uint64_t child = 0;
  bool first = true;
  for (unsigned i = end_ltr(n, slots, probe); i-- > 0;) {
    probe();
    const std::uint64_t k = ld(&n->rec[i].key);
    if (k == kEmpty) {
      if (!first && cut_under_read()) {  // a cut under the read: read again
        *torn = true;
        break;
      }
      continue;
    }
    if (kr.compare(s, k) < 0) {
      first = false;
      continue;
    }
    probe();
    child = ld(&n->rec[i].ptr);
    probe();
    if (ld(&n->rec[i].key) != k) *torn = true;
    *beyond = first;
    break;
  }
  if (child == 0 && !*torn) *beyond = first;
  return child;
}
}  // namespace detail

//! Lock-free inner routing: the child for `s` (the last live record with key <= s, else
//! leftmost); *beyond if s is at or past the last key. Same protocol as find_sync.
template <bool kRetry = true, class Probe = NoProbe>
inline std::uint64_t route_sync(const Node* n, unsigned slots, const SearchKey& s,
                                const KeyReader& kr, bool* beyond, Probe probe = {},
                                std::uint64_t* after = nullptr) noexcept {
  for (;;) {
    probe();
    const SwitchCount c = ld(&n->h.switch_counter);
    bool torn = false;
    *beyond = true;
    std::uint64_t child = (c & 1u) == 0
                              ? detail::route_ltr(n, slots, s, kr, beyond, &torn, probe)
                              : detail::route_rtl(n, slots, s, kr, beyond, &torn, probe);
    if (torn) continue;
    if (after != nullptr) {  // as in find_sync
      probe();
      *after = ld(&n->h.sibling);
    }
    if constexpr (kRetry) {
      probe();
      if (ld(&n->h.switch_counter) != c) continue;
    }
    if (child == 0) child = ld(&n->h.leftmost);
    if (child == 0) child = ld(&n->rec[0].ptr);  // below a split sibling's fence: not reached
    return child;
  }
}

//! After a lock-free read of a node ended beyond its keys: the right neighbour to look in
//! for s, from the node's sibling word loaded before the read (`before`) and after it
//! (`after`). `after` first: a split's link is visible once its cut is. If `after` starts
//! above s (or is 0) and `before` differs, `before`: a merge (or a borrow that takes
//! records) appends the right node's records to this node past the end the read may have
//! seen, then unlinks the right node — which still holds them (retired, unchanged, kept by
//! the reader's pin). 0 if neither holds s's range. `node_at` maps an offset to its node.
//! `after` must be loaded before the read's last counter check (find_sync's `after`): a
//! split of this node (link B, cut) and then a merge of B back into it (append past the cut
//! the read saw, sibling word back to `before`) would otherwise leave B's records in
//! neither; the append changes the counter, so the read is repeated instead.
template <class NodeAt>
inline std::uint64_t sibling_for(std::uint64_t before, std::uint64_t after, const SearchKey& s,
                                 const KeyReader& kr, NodeAt node_at) noexcept {
  for (const std::uint64_t sib : {after, before}) {
    if (sib != 0) {
      const std::uint64_t first = ld(&node_at(sib)->rec[0].key);
      if (first != kEmpty && kr.compare(s, first) >= 0) return sib;
    }
    if (before == after) break;
  }
  return 0;
}

//! A scan's next node after a lock-free read of one: of the sibling words loaded before and
//! after the read (`after` as in sibling_for), the one whose first key is smaller (a
//! split's new node precedes the old sibling; a merged-away right node precedes the node
//! its unlink made the sibling).
template <class NodeAt>
inline std::uint64_t next_for_scan(std::uint64_t before, std::uint64_t after,
                                   const KeyReader& kr, NodeAt node_at) noexcept {
  if (before == after || before == 0) return after;
  if (after == 0) return before;
  const std::uint64_t fb = ld(&node_at(before)->rec[0].key);
  const std::uint64_t fa = ld(&node_at(after)->rec[0].key);
  if (fb == kEmpty) return after;
  if (fa == kEmpty) return before;
  return kr.compare_words(fb, fa) < 0 ? before : after;
}

namespace detail {
//! collect_sync left to right: the records read into out, in key order; their count, or
//! kTorn (a slot changed under the read).
template <bool kStrictCopies, class Probe>
[[gnu::always_inline]] inline int collect_ltr(const Node* n, unsigned slots,
                                              const SearchKey* from, const KeyReader& kr,
                                              Record* out, Probe& probe) noexcept {
  unsigned m = 0;
  probe();
  std::uint64_t k = ld(&n->rec[0].key);
  for (unsigned i = 0; i < slots && k != kEmpty; ++i) {
    if (from != nullptr && kr.compare(*from, k) > 0) {  // below the start: key only
      if (i + 1 < slots) probe();
      k = i + 1 < slots ? ld(&n->rec[i + 1].key) : kEmpty;
      continue;
    }
    probe();
    const std::uint64_t v = ld(&n->rec[i].ptr);
    std::uint64_t next = kEmpty;
    if (kStrictCopies && i + 1 < slots) {  // before the key's second load (find_ltr)
      probe();
      next = ld(&n->rec[i + 1].key);
    }
    probe();
    if (ld(&n->rec[i].key) != k) return kTorn;
    if (!kStrictCopies && i + 1 < slots) {
      probe();
      next = ld(&n->rec[i + 1].key);
    }
    if (next != k && (m == 0 || out[m - 1].key != k)) out[m++] = Record{k, v};
    k = next;  // (next == k: this slot is the dead left copy, the next one is live)
  }
  return static_cast<int>(m);
}

//! collect_sync right to left: the records read into out, reversed into key order at the
//! end; their count, or kTorn (a slot changed, or a cut under the read).
template <bool kStrictCopies, class Probe>
[[gnu::always_inline]] inline int collect_rtl(const Node* n, unsigned slots,
                                              const SearchKey* from, const KeyReader& kr,
                                              Record* out, Probe& probe) noexcept {
  unsigned m = 0;
  for (unsigned i = end_ltr(n, slots, probe); i-- > 0;) {
    probe();
    const std::uint64_t k = ld(&n->rec[i].key);
    if (k == kEmpty) {
      if (m != 0 && cut_under_read()) return kTorn;  // a cut under the read: read again
      continue;
    }
    if (from != nullptr && kr.compare(*from, k) > 0) break;  // the rest is below too
    probe();
    const std::uint64_t v = ld(&n->rec[i].ptr);
    probe();
    if (ld(&n->rec[i].key) != k) return kTorn;
    // A key not below the last one collected is a dead left copy: its live record was
    // collected before (see collect_sync).
    if (m != 0 && (out[m - 1].key == k ||
                   (kStrictCopies && kr.compare_words(k, out[m - 1].key) > 0)))
      continue;
    out[m++] = Record{k, v};
  }
  for (unsigned a = 0, b = m; a + 1 < b; ++a, --b) std::swap(out[a], out[b - 1]);
  return static_cast<int>(m);
}
}  // namespace detail

//! Lock-free read of a leaf's live records with keys >= `from` (all if null), in key order,
//! into out (capacity >= slots); returns how many. A record read twice (it moved during
//! the read) appears once. Left to right, the next slot's key, loaded after this slot's
//! pointer for the dead check, is the next iteration's key. `probe` and `after` as in
//! find_sync.
//! Right to left, a dead left copy (a removed record's value under its right neighbour's
//! key k) is met only after k's live record was read: while the counter is odd records only
//! move left, so (k's live slot) - (the slot the reader reads) starts at most 0, at the end
//! found first, and grows by at most 1 per slot read; the dead copy is met when it is 1, so
//! it was 0 before — the reader read k's live slot. Not necessarily just before, though:
//! two removes (50, then 40, whose writer first squeezes 50's dead slot out, moving 60
//! into it) make 40's slot the dead copy of 60 after the reader collected 60 and 50 in
//! their old slots. So a key not below the last one collected is skipped, not only an
//! equal one (`DeadCopyMetLateByARightToLeftReaderIsSkipped`; kStrictCopies = false: the
//! broken variant, equal keys only).
template <class Probe = NoProbe, bool kStrictCopies = true>
inline unsigned collect_sync(const Node* n, unsigned slots, const SearchKey* from,
                             const KeyReader& kr, Record* out, Probe probe = {},
                             std::uint64_t* after = nullptr) noexcept {
  for (;;) {
    probe();
    const SwitchCount c = ld(&n->h.switch_counter);
    const int m = (c & 1u) == 0
                      ? detail::collect_ltr<kStrictCopies>(n, slots, from, kr, out, probe)
                      : detail::collect_rtl<kStrictCopies>(n, slots, from, kr, out, probe);
    if (m == detail::kTorn) continue;
    if (after != nullptr) {  // as in find_sync
      probe();
      *after = ld(&n->h.sibling);
    }
    probe();
    if (ld(&n->h.switch_counter) != c) continue;
    return static_cast<unsigned>(m);
  }
}

//! FAST insert of {key, ptr} at slot pos (<= end < slots, no dead slot). Commit: the key
//! store, non-temporal, into the line the shift wrote last (that line is not written back:
//! the movnti persists no earlier than the stores before it to its line). pm::publish_nt
//! (a fence first) when a write-back of ANOTHER line is not yet fenced: `unfenced` (a key
//! block or the caller's value block written back just before) or the switch counter's,
//! unless the shift crossed a line (its fence came after them).
void fast_insert(NodeRef nr, unsigned end, unsigned pos, std::uint64_t key, std::uint64_t ptr,
                 bool unfenced);
//! FAST delete of the live slot pos (< end, no dead slot). Commit: its one record store
//! (pm::commit_nt, or pm::publish_nt after a switch-counter write-back), which makes the slot
//! dead. The node keeps that dead slot until its next writer calls repair_dead.
void fast_remove(NodeRef nr, unsigned end, unsigned pos);
//! Removes the node's dead slot (a delete's, or a crashed insert's) by the left shift
//! (pm::store + line rule + a final write-back, no commit). Every writer calls it before
//! it changes the node (so its stores precede that writer's commit). Returns whether
//! there was one.
bool repair_dead(NodeRef nr);
//! repair_dead for a writer that has just read the node's end and dead slot (NodeRef::scan).
bool repair_dead(NodeRef nr, unsigned end, int dead);
//! The switch counter: even after inserts, odd after deletes (§5). Written (and written
//! back, unfenced: the operation's next fence orders it) only when the parity changes;
//! returns whether it did.
bool set_direction(NodeRef nr, bool inserting);
//! After an append's commit (records past the old end): the counter moved on by 2 (its
//! direction kept), so that every lock-free read of the node that began before the commit
//! is repeated (README "Concurrency"). A volatile store: no restart needs it (there is no
//! reader then), and it is not written back on purpose (the next write-back of the line
//! may take it).
void bump_after_append(NodeRef nr);

}  // namespace wort::fastfair
