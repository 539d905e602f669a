// crashsim/harness.h — crash-test a key/value index under the Px86 persistency model.
//
// run_kv() creates a pool in DRAM, builds the index, applies `setup` untraced, then applies
// `ops` with the simulator installed. At every crash point — before every fence, and at each
// operation's acknowledgement — it builds crash images (each dirty cache line cut at any
// prefix of its store log no shorter than its durable point: exhaustively up to a cap, then
// nothing-extra, everything, each line alone, each pair and seeded random picks), opens the
// index on a copy of each image (recovery) and runs the oracles:
//   LOST_ACK       an acknowledged operation is missing or has the wrong value
//   NOT_ATOMIC     the in-flight operation is partly there (neither before nor after state)
//   EXTRA_KEY      a key that no operation put there
//   RECOVERY_FAILED  open() returned an error on a crash image
//   VERIFY         verify() failed after recovery
//   AUDIT          allocator audit after recovery: leak, double use, reached-but-free
//   CONTINUATION   operations after recovery disagree with the reference
//   DRAIN          (opt-in) after removing every key, more blocks allocated than an empty index has
//   SECOND_CRASH   a crash during recovery, recovered again, fails any of the above
//   RECOVERY_HUNG  an image's recovery + checks exceeded the time or memory budget
//   RECOVERY_CRASHED the process died of a signal while recovering or checking an image
//   DIRTY_READ     (opt-in, Options::dirty_reads) a reader on another thread, looking up the
//                  in-flight key at a point inside the operation, saw its effect (the new
//                  value, or the key gone) before it was durable: the image holding only what
//                  is durable at that point recovers the old state (Simulator: read points)
//   TORN_READ      (with dirty_reads) that reader saw a value that is neither the key's
//                  value before the operation nor after it
//   LIVE           the traced run itself disagreed with the reference (a wrong Status or
//                  lookup before any crash), or its final verify()/audit failed
// and, on every traced operation without enumeration, the lints:
//   MISSING_FLUSH  a store not written back at an acknowledgement
//   MISSING_FENCE  written back but not fenced at an acknowledgement
//   UNTRACKED_STORE a pool word changed without pm::store / pm::copy
//   REDUNDANT_FLUSH a flush of a line with nothing new to write back (performance finding)
//   REDUNDANT_FENCE a fence with nothing to order (performance finding)
//   MISSING_FENCE  also: a commit store issued while a line flushed before it is not fenced
//   STORE_AFTER_COMMIT a pool store after the operation's last commit store (outside blocks
//                  it frees)
//   COMMIT_COUNT   (Options::commits) an operation made more or fewer commit stores than its
//                  index declares
// The lints also run (lints_after_crash) during recovery and the continuation operations.
// Every finding carries a replay string (seed, crash point, per-line choice vector) that
// Options::replay accepts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <span>
#include <vector>

#include "wort/index.h"

namespace wort::crashsim {

//! One mutating operation of a crash test.
struct KvOp {
  enum class Kind : std::uint8_t { insert, upsert, update, remove };
  Kind kind = Kind::insert;
  std::string key;  //!< raw key bytes
  Value value = 0;
};

//! How many commit stores (pm::commit / pm::publish / pm::commit_sharing_fence) one
//! acknowledged operation makes, per kind, as the index's README declares. An operation that
//! changes nothing (insert of a present key, update or remove of an absent one) is `noop`;
//! `create` is Index::create (Pool creation itself is not counted).
struct CommitRule {
  std::uint8_t min = 0, max = 0;
};
struct CommitTable {
  CommitRule insert, upsert, update, remove, noop, create;
};

struct Options {
  std::uint64_t seed = 1;
  std::uint64_t pool_size = 1ull << 20;
  std::uint32_t chunk_size = 16u << 10;
  bool values_are_blocks = false;      //!< PoolOptions::values_are_blocks (the server's items)
  //! PoolOptions::chunk_area_offset: non-zero puts the chunk area (every block the index
  //! links) at this offset, past a gap nobody writes, e.g. 2^32 + 64 KiB for offsets with a
  //! non-zero high half (tests/support/crash_ops.h, above_4gib). The simulator skips the gap
  //! (crashsim/sparse.h); pool_size stays the size of the chunk area.
  std::uint64_t chunk_area_offset = 0;
  std::size_t exhaustive_cap = 64;     //!< enumerate all images of a crash point up to this many
  std::size_t random_samples = 8;      //!< seeded random images beyond the structured ones
  std::size_t pair_lines = 32;         //!< pairs of fully applied lines among at most this many
  bool continuation = true;            //!< run continuation ops after each recovery
  std::size_t continuation_ops = 6;
  bool second_crash = true;            //!< crash during recovery, then recover again
  bool drain = false;                  //!< opt-in DRAIN oracle
  //! With `drain`: DRAIN on one image in this many (picked by the image's seed); 0 or 1: all.
  //! The sanitizer builds sample (tests/support/crash_ops.h, sanitizer_sample).
  std::size_t drain_every = 1;
  bool lints = true;
  bool explore = true;                 //!< false: lints only, no crash images
  std::size_t max_crash_points = 0;    //!< explore only the first N crash points; 0 = all
  std::string replay;                  //!< non-empty: only the crash image it names
  //! COMMIT_COUNT oracle: each acknowledged operation (traced ones and continuation ones
  //! after a crash) made the commit stores this table allows. Unset: not checked.
  std::optional<CommitTable> commits;
  //! Lints (with their own kinds, the detail saying "after a crash") also while an image
  //! recovers and while the continuation operations run on it.
  bool lints_after_crash = true;
  //! The commit-ordering lints: MISSING_FENCE at a commit store (a line flushed earlier not
  //! yet fenced) and STORE_AFTER_COMMIT. On for every index whose commit sites have been
  //! brought to the one-commit rule; tests/support/crash_ops.cc lists the ones not yet.
  bool commit_lints = true;
  //! Also crash-test creation: Pool::create_in_memory and the factory's create run with a
  //! recording tracer; the recording is then replayed into the simulator (crash points at
  //! every fence and at create's return, lints, Options::commits' `create` row). Before
  //! create returns, an image may fail to attach or open (no pool or no index yet: not a
  //! finding) or must open as an empty index; at its return it must open. Setup follows.
  bool trace_create = false;
  //! DIRTY_READ / TORN_READ: at every event of every traced operation, another thread looks
  //! up the in-flight key (as a concurrent lock-free reader would); if it sees the new
  //! state, the image with nothing beyond the durable state is recovered and must show it
  //! too. Only for an index whose readers never wait for a writer (the writer is stopped
  //! mid-operation while the reader runs).
  bool dirty_reads = false;
  //! Bounds (crashsim/isolate.h): the run happens in a forked child; an image whose recovery
  //! and checks take longer than image_seconds, or need more than memory_budget_mb of new
  //! address space, is a RECOVERY_HUNG finding; a signal inside one is RECOVERY_CRASHED.
  bool isolate = true;
  double image_seconds = 60;
  std::uint64_t memory_budget_mb = 2048;
};

//! Concurrent histories (run_concurrent_kv): how the writers take turns (crashsim/schedule.h).
struct ScheduleOptions {
  //! At every switch point of the running writer (before each fence, at each operation
  //! boundary) the seeded coin hands the turn to another writer with this probability.
  double switch_probability = 0.5;
  //! The running writer stalls (the turn passes on) when it starts a wait loop that
  //! announces itself (Tracer::on_wait: the indexes' lock and sequence spins); outside any
  //! traced event, it also counts as stalled (blocked on something that does not announce
  //! itself) after burning this much CPU, sleeping this long (a futex), or this much wall
  //! time whatever it does.
  double stall_cpu_ms = 2;
  double stall_sleep_ms = 20;
  double stall_wall_s = 5;
  //! No traced event of any writer for this long: a LIVE finding and the run stops.
  double hang_s = 60;
  //! TESTING THE MODEL ONLY: a fence of any writer makes every writer's write-backs durable
  //! (the unsound one-global-fence model). tests/crashsim/concurrent_crash_test.cc shows the
  //! toy that relies on another thread's fence passing under it and caught without it.
  bool global_fences = false;
  //! TESTING THE MODEL ONLY: a writer's non-temporal stores are visible to the other
  //! writers before its fence (as trace mode stores them), which the hardware never shows;
  //! the test shows the false findings the ROWEX indexes then get.
  bool nt_visible_before_fence = false;
  //! TESTING THE SCHEDULER ONLY (the broken variant): a writer does not wait for its turn
  //! before a lock attempt (Tracer::on_before_cas ignored), so a loose writer takes a lock
  //! in parallel with the turn holder and which of them gets it is OS timing; the test of
  //! replay determinism must fail with it.
  bool ungated_cas = false;
  //! TESTING THE SCHEDULER ONLY: non-zero, each writer sleeps a pseudo-random 0..99 us
  //! (its own generator, seeded by this and the writer) before each traced event and each
  //! lock attempt: a different timing of the same schedule, which must not change it.
  std::uint64_t jitter_seed = 0;
};

struct Finding {
  std::string kind;    //!< "LOST_ACK", "MISSING_FLUSH", ... (see above)
  std::string detail;  //!< what was wrong, with the operation and key
  std::string replay;  //!< feed to Options::replay to reproduce
};

struct Report {
  std::uint64_t ops = 0;            //!< traced operations
  std::uint64_t crash_points = 0;   //!< points at which images were built
  std::uint64_t images = 0;         //!< crash images recovered and checked (second crashes included)
  //! Options::dirty_reads: read points at which the concurrent reader saw the in-flight
  //! operation's new state, so its durability was checked (at most one per operation).
  std::uint64_t read_checks = 0;
  double seconds = 0;
  std::vector<Finding> findings;    //!< de-duplicated by (kind, crash site); capped
  std::uint64_t failed_images = 0;  //!< images with at least one correctness finding
  std::uint64_t suppressed = 0;     //!< findings dropped as duplicates or over the cap
  std::string error;                //!< set if the run could not happen (bad replay, no pool)
  // run_concurrent_kv only
  std::uint64_t switches = 0;       //!< turns handed on by the seeded coin, or back to a
                                    //!< writer a stall left loose (at an op boundary)
  std::uint64_t stalls = 0;         //!< turns handed on because the running writer stalled
  std::string schedule;             //!< the replay's stalls= of the whole run ("-": none)

  bool has(std::string_view kind) const;
  std::size_t count(std::string_view kind) const;
  //! No correctness finding (lints REDUNDANT_* are performance findings and do not count).
  bool correct() const;
  //! No finding at all (and, like correct(), no error: a run that could not happen is not clean).
  bool clean() const { return error.empty() && findings.empty(); }
  std::string summary() const;  //!< one line of counts plus the first findings
};

//! How the harness makes and reopens the structure under test.
struct Factory {
  std::string kind;  //!< stored in the pool header
  std::function<Result<std::unique_ptr<Index>>(Pool&)> create;
  std::function<Result<std::unique_ptr<Index>>(Pool&)> open;
};

//! Factory for a concrete index class (registered or not, e.g. the toy structures).
template <IndexConcept T>
Factory factory_of() {
  return Factory{std::string(T::kKind),
                 [](Pool& p) { return adapt<T>(T::create(p, IndexOptions{})); },
                 [](Pool& p) { return adapt<T>(T::open(p)); }};
}

//! Runs the crash test described at the top of this file.
Report run_kv(const Factory& f, std::span<const KvOp> setup, std::span<const KvOp> ops,
              const Options& opts);

//! Concurrent histories: after the untraced setup, threads.size() writer threads (at most
//! crashsim::kMaxThreads) each apply their own operation list to the same index, one at a
//! time, taking turns at fences and operation boundaries by a schedule seeded with
//! opts.seed (and when the running writer blocks on a lock the paused one holds); all feed
//! one Px86 model in which each writer's flush marks are its own and only its own fence
//! orders them. Crash points: before every fence of any writer and at each
//! acknowledgement; images and oracles as run_kv, the reference being every acknowledged
//! operation and, per key, any linearisation of the operations in flight (each wholly
//! before or after, independently; on one key, in either order). Lints per writer. Not
//! supported: dirty_reads, trace_create.
Report run_concurrent_kv(const Factory& f, std::span<const KvOp> setup,
                         std::span<const std::vector<KvOp>> threads, const Options& opts,
                         const ScheduleOptions& sched = {});

template <IndexConcept T>
Report run_kv(std::span<const KvOp> setup, std::span<const KvOp> ops, const Options& opts) {
  return run_kv(factory_of<T>(), setup, ops, opts);
}

}  // namespace wort::crashsim
