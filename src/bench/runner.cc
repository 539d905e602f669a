#include "bench/runner.h"

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <numeric>
#include <thread>

#include "bench/llc.h"
#include "bench/lookup_loops.h"
#include "bench/recovery.h"
#include "bench/rng.h"
#include "bench/sampler.h"
#include "index/registry.h"
#include "pm/allocator.h"

namespace wort::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// What one worker thread measured; merged into the phase result.
struct WorkerStats {
  explicit WorkerStats(Sampler s) noexcept : sampler(s) {}
  Sampler sampler;  // which of this thread's operations are timed
  std::array<OpStats, kOpTypes> per_type{};
  std::uint64_t ops = 0;
  std::uint64_t items = 0;
  pm::Counters counters;
  pm::Counters counters_seen;  // a mix: this thread's counters at the end of its last step
  double cpu_seconds = 0;
  double wall_seconds = 0;  // from the phase start to this thread's last operation
};

}  // namespace

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

namespace {

// Shared state of a running phase.
struct PhaseCtx {
  const BenchOptions& o;
  std::mutex index_lock;  // serialises a non-concurrent index when threads > 1
  std::atomic<std::uint64_t> done{0};
  Clock::time_point t0;
  std::uint64_t expected_ops = 0;  // for progress (0 when running for a duration)
  const ProgressFn* progress = nullptr;
  std::string label;
  std::vector<std::pair<double, std::uint64_t>> timeline;
  double next_tick = 0.1;
};

// Runs `op` (which returns the number of items it visited, or -1 on a miss) with the
// latency timed when the thread's sampler picks it (1 in sample_every on average, at
// random gaps: sampler.h) and the index lock held when threads share the index.
template <class Op>
inline void timed(PhaseCtx& ctx, WorkerStats& w, OpType type, Op&& op) {
  OpStats& s = w.per_type[static_cast<std::size_t>(type)];
  const bool sample = w.sampler.take();
  Clock::time_point t0;
  if (sample) t0 = Clock::now();
  long r;
  if (ctx.o.threads > 1 && !ctx.o.index_concurrent) {
    std::lock_guard g(ctx.index_lock);
    r = op();
  } else {
    r = op();
  }
  if (sample)
    s.latency.record(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()));
  ++s.ops;
  ++w.ops;
  if (r < 0) ++s.misses;
  else w.items += static_cast<std::uint64_t>(r);
}

// Every 1024 operations: publish progress, and (thread 0) record the time series.
inline void tick(PhaseCtx& ctx, unsigned thread, std::uint64_t local_ops) {
  if ((local_ops & 1023) != 0) return;
  const std::uint64_t total = ctx.done.fetch_add(1024, std::memory_order_relaxed) + 1024;
  if (thread != 0) return;
  const double t = seconds_since(ctx.t0);
  if (t >= ctx.next_tick) {
    ctx.timeline.emplace_back(t, total);
    ctx.next_tick = t + 0.1;
  }
  if (ctx.progress && *ctx.progress) {
    const double frac = ctx.expected_ops ? static_cast<double>(total) / ctx.expected_ops
                                         : t / std::max(ctx.o.mix.duration_s, 1e-9);
    (*ctx.progress)(ctx.label, std::min(frac, 1.0));
  }
}

// The seed of thread t's sampler in the phase named `tag`: its own stream per phase and
// thread, the same for a given --seed on every machine (FNV-1a of the tag).
std::uint64_t sampler_seed(std::uint64_t seed, const std::string& tag, unsigned t) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (char c : tag) h = (h ^ static_cast<std::uint8_t>(c)) * 0x100000001b3ull;
  return Rng::derive(seed, h + 0x5a3b1e5ull * (t + 1));
}

// Adds each worker thread's figures into the phase result `p`.
void merge_workers(const std::vector<WorkerStats>& stats, PhaseResult& p) {
  for (const auto& w : stats) {
    p.ops += w.ops;
    p.items += w.items;
    p.cpu_seconds += w.cpu_seconds;
    p.counters = p.counters + w.counters;
    for (std::size_t i = 0; i < kOpTypes; ++i) p.per_type[i].merge(w.per_type[i]);
    p.thread_ops.push_back(w.ops);
    p.thread_seconds.push_back(w.wall_seconds);
  }
  // A phase of one operation type: its counters are the phase's (a mix counted per type).
  if (std::count_if(p.per_type.begin(), p.per_type.end(), [](const OpStats& s) { return s.ops > 0; }) == 1)
    for (auto& s : p.per_type)
      if (s.ops > 0) s.counters = p.counters;
}

// --llc=perf: the phase's LLC misses and instructions from the hardware counters, or why
// they are unavailable.
void record_perf(const BenchOptions& o, const HwCounter& hw, const std::string& hw_error,
                 std::uint64_t llc, PhaseResult& p) {
  if (hw_error.empty()) {
    p.cache.source = "perf";
    p.cache.llc_misses = static_cast<double>(llc);
    p.cache.instructions = static_cast<double>(hw.instructions());
    p.cache.at_keys = o.keys;
    p.cache.ops = p.ops;
  } else {
    p.cache.source = "unavailable: " + hw_error;
  }
}

// Runs body(ctx, thread, stats) on o.threads threads (thread 0 is the caller) and merges
// their figures. Each thread zeroes its own persistence counters first.
template <class Body>
PhaseResult run_phase(const BenchOptions& o, const std::string& name, const std::string& tag,
                      std::uint64_t expected_ops, const ProgressFn& progress,
                      const std::string& label, Body&& body) {
  PhaseCtx ctx{o};
  ctx.expected_ops = expected_ops;
  ctx.progress = &progress;
  ctx.label = label + " " + name;
  const unsigned n = std::max(1u, o.threads);
  std::vector<WorkerStats> stats;
  stats.reserve(n);
  for (unsigned t = 0; t < n; ++t)
    stats.emplace_back(Sampler(o.sample_every, sampler_seed(o.seed, tag, t)));
  auto worker = [&](unsigned t) {
    pm::reset_counters();
    const double cpu0 = thread_cpu_seconds();
    body(ctx, t, stats[t]);
    stats[t].wall_seconds = seconds_since(ctx.t0);
    stats[t].cpu_seconds = thread_cpu_seconds() - cpu0;
    stats[t].counters = pm::counters();
  };
  HwCounter hw;
  std::string hw_error;
  if (o.llc == LlcMode::perf) {
    if (auto r = hw.open(); !r) hw_error = r.error().message;
  }
  if (o.llc == LlcMode::callgrind_child) callgrind_begin();
  if (o.llc == LlcMode::perf && hw_error.empty()) hw.start();
  ctx.t0 = Clock::now();
  {
    std::vector<std::jthread> threads;
    for (unsigned t = 1; t < n; ++t) threads.emplace_back(worker, t);
    worker(0);
  }
  PhaseResult p;
  p.seconds = seconds_since(ctx.t0);
  std::uint64_t llc = 0;
  if (o.llc == LlcMode::perf && hw_error.empty()) llc = hw.stop();
  if (o.llc == LlcMode::callgrind_child) callgrind_end(tag);
  p.name = name;
  merge_workers(stats, p);
  p.timeline = std::move(ctx.timeline);
  if (o.llc == LlcMode::perf) record_perf(o, hw, hw_error, llc, p);
  if (progress) progress(ctx.label, 1.0);
  return p;
}

// Strided partition of [0, n) over the threads: thread t takes t, t+T, t+2T, ...
template <class F>
void for_my_share(PhaseCtx& ctx, unsigned t, std::uint64_t n, WorkerStats& w, F&& f) {
  const unsigned step = std::max(1u, ctx.o.threads);
  std::uint64_t local = 0;
  for (std::uint64_t i = t; i < n; i += step) {
    f(i);
    tick(ctx, t, ++local);
  }
  (void)w;
}

// A pool for one case: a file under pool_dir (removed afterwards) or anonymous memory.
struct CasePool {
  std::string path;
  std::unique_ptr<Pool> pool;
  ~CasePool() {
    pool.reset();
    if (!path.empty()) ::unlink(path.c_str());
  }
};

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

}  // namespace

// Why: runner.h, prefault_pool. On this VM a 4 KiB fault costs ~2.2 us, on the insert that
// starts each new page of leaves (every 128th insert for 32-byte leaves), which is what the
// fixed-stride sampler used to report as the p50.
std::string prefault_pool(Pool& pool) {
  const auto t0 = Clock::now();
  if (::madvise(pool.base(), pool.size(), MADV_POPULATE_WRITE) != 0)
    return std::string("failed: ") + std::strerror(errno);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f MiB in %.3f s",
                static_cast<double>(pool.size()) / (1 << 20), seconds_since(t0));
  return buf;
}

namespace {

Result<void> open_case_pool(const BenchOptions& o, const std::string& index,
                            std::uint64_t size, CasePool& cp) {
  PoolOptions po;
  po.size = size;
  po.kind = index;
  // A volatile kind (`art`) keeps nothing in the pool and is refused in a file pool.
  const registry::Entry* e = registry::find(index);
  if (o.pool_dir.empty() || (e != nullptr && !e->persistent)) {
    auto r = Pool::create_in_memory(po);
    if (!r) return r.error();
    cp.pool = std::move(r).value();
    return {};
  }
  static std::atomic<unsigned> serial{0};
  cp.path = o.pool_dir + "/wort-bench-" + std::to_string(::getpid()) + "-" +
            std::to_string(serial++) + ".pool";
  ::unlink(cp.path.c_str());
  auto r = Pool::create(cp.path, po);
  if (!r) {
    cp.path.clear();
    return r.error();
  }
  cp.pool = std::move(r).value();
  return {};
}

// The `search` phase's lookups again (same keys, same order) in a tight loop, `loop(keys)`:
// lookup_each on wort::Index (search-virtual) or the kind's concrete loops on its class
// (search-direct, search-chained: bench/lookup_loops.h). Neither has timed()'s per-op
// bookkeeping, so the two differ only in the call. Chunks of 1024 keys keep the progress bar moving (one call of
// `loop` per chunk). No latency samples: single lookups are not timed here.
template <class Loop>
PhaseResult run_lookup_loop(const BenchOptions& o, const std::string& name, Loop&& loop,
                            const KeySet& search_keys, const std::vector<std::uint32_t>& order,
                            const std::string& tag, const ProgressFn& progress,
                            const std::string& label) {
  const std::uint64_t n = search_keys.size();
  BenchOptions one = o;
  one.threads = 1;  // only run when the search phase ran on one thread
  return run_phase(one, name, tag, n, progress, label,
                   [&](PhaseCtx& ctx, unsigned, WorkerStats& w) {
    constexpr std::uint64_t kChunk = 1024;
    const PackedKeys all = search_keys.packed();
    OpStats& s = w.per_type[static_cast<std::size_t>(OpType::lookup)];
    for (std::uint64_t b = 0; b < n; b += kChunk) {
      const PackedKeys part{all.bytes, all.offsets + b, std::min(kChunk, n - b)};
      const LookupTally t = loop(part);
      // Each key's value is its rank + 1 (as in `search`): a wrong value shows in the sum.
      std::uint64_t expected_sum = 0;
      for (std::uint64_t i = b; i < b + part.count; ++i) expected_sum += order[i] + 1u;
      std::uint64_t missed = part.count - t.found;
      if (missed == 0 && t.value_sum != expected_sum) missed = 1;
      s.ops += part.count;
      s.misses += missed;
      w.ops += part.count;
      tick(ctx, 0, b + part.count);
    }
  });
}

// Inserts keys[0, n), each with value rank + 1 (what the search phases check), one timed
// insert per key: the paper's insert phase and the mixes' load phase.
PhaseResult insert_phase(const BenchOptions& o, const std::string& name, const std::string& tag,
                         Index& idx, const KeySet& keys, std::uint64_t n,
                         const ProgressFn& progress, const std::string& label) {
  return run_phase(o, name, tag, n, progress, label,
                   [&](PhaseCtx& ctx, unsigned t, WorkerStats& w) {
    for_my_share(ctx, t, n, w, [&](std::uint64_t i) {
      timed(ctx, w, OpType::insert, [&]() -> long {
        return idx.insert(keys[i], i + 1) == Status::ok ? 0 : -1;
      });
    });
  });
}

// The tag of phase `ph` of case `c` (its sampler seeds and callgrind dumps).
std::string case_tag(const CaseResult& c, const std::string& ph) {
  return phase_tag(c.index, c.dist, c.flush_latency_ns, ph);
}

// The paper's phases weighted by their operations, for the progress bar: insert, search,
// the adapter loops (`direct`), each range fraction that is less than all keys.
std::vector<double> paper_plan(const BenchOptions& o, std::uint64_t n, bool direct,
                               const ConcreteLookups* concrete) {
  std::vector<double> plan{static_cast<double>(n), static_cast<double>(n)};
  if (direct) plan.insert(plan.end(), concrete->chained ? 3 : 2, static_cast<double>(n));
  for (double frac : o.range_fractions)
    if (std::max<std::uint64_t>(1, static_cast<std::uint64_t>(frac * n + 0.5)) < n)
      plan.push_back(static_cast<double>(o.range_queries));
  return plan;
}

// The paper's search phase: every key looked up once, in the random `order`; search_keys[i]
// is keys[order[i]].
PhaseResult search_phase(const BenchOptions& o, const std::string& tag, const Index& idx,
                         const KeySet& search_keys, const std::vector<std::uint32_t>& order,
                         const ProgressFn& progress, const std::string& label) {
  const std::uint64_t n = search_keys.size();
  return run_phase(o, "search", tag, n, progress, label,
                   [&](PhaseCtx& ctx, unsigned t, WorkerStats& w) {
    for_my_share(ctx, t, n, w, [&](std::uint64_t i) {
      const std::uint32_t k = order[i];
      timed(ctx, w, OpType::lookup, [&]() -> long {
        auto v = idx.lookup(search_keys[i]);
        return v && *v == k + 1u ? 0 : -1;
      });
    });
  });
}

// The adapter's cost: the same lookups in the same loop through wort::Index and on the
// concrete class. Both run after `search`, so both find the caches it left.
void adapter_phases(const BenchOptions& o, const ConcreteLookups& concrete, const Index& cidx,
                    const KeySet& search_keys, const std::vector<std::uint32_t>& order,
                    CaseResult& c, CaseProgress& cp, const std::string& label) {
  c.phases.push_back(run_lookup_loop(
      o, "search-virtual", [&](const PackedKeys& p) { return lookup_each(cidx, p); },
      search_keys, order, case_tag(c, "search-virtual"), cp.next_phase(), label));
  c.phases.push_back(run_lookup_loop(
      o, "search-direct", [&](const PackedKeys& p) { return concrete.direct(cidx, p); },
      search_keys, order, case_tag(c, "search-direct"), cp.next_phase(), label));
  // One lookup's latency: each lookup waits for the one before (lookup_chained).
  if (concrete.chained)
    c.phases.push_back(run_lookup_loop(
        o, "search-chained", [&](const PackedKeys& p) { return concrete.chained(cidx, p); },
        search_keys, order, case_tag(c, "search-chained"), cp.next_phase(), label));
}

// One range phase per requested fraction below all keys: range_queries ranges of `count`
// keys each, from random starts; `sorted` holds the ranks in key order.
void range_phases(const BenchOptions& o, const Index& idx, const KeySet& keys,
                  const std::vector<std::uint32_t>& sorted, CaseResult& c, CaseProgress& cp,
                  const std::string& label) {
  const std::uint64_t n = keys.size();
  for (double frac : o.range_fractions) {
    const auto count = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(frac * n + 0.5));
    if (count >= n) continue;
    char name[48];
    std::snprintf(name, sizeof name, "range%g%%", frac * 100);
    const std::uint64_t q = o.range_queries;
    c.phases.push_back(run_phase(o, name, case_tag(c, name), q, cp.next_phase(), label,
                                 [&](PhaseCtx& ctx, unsigned t, WorkerStats& w) {
      for_my_share(ctx, t, q, w, [&](std::uint64_t i) {
        Rng r(Rng::derive(o.seed, 1000 + i));
        const std::uint64_t s = r.below(n - count);
        timed(ctx, w, OpType::range, [&]() -> long {
          std::uint64_t seen = 0;
          idx.range(keys[sorted[s]], keys[sorted[s + count]], [&](Key, Value) {
            ++seen;
            return true;
          });
          return seen == count ? static_cast<long>(seen) : -1;
        });
      });
    }));
  }
}

// The WORT paper's phases: insert all keys, search all keys (another random order), then
// range queries covering each requested fraction of the keys.
void run_paper(const BenchOptions& o, const registry::Entry* entry, Index& idx,
               const KeySet& keys, CaseResult& c, const ProgressFn& progress_out,
               const std::string& label) {
  const std::uint64_t n = keys.size();
  const ConcreteLookups* concrete = entry != nullptr ? concrete_lookups(entry->name) : nullptr;
  const bool direct = o.search_direct && o.threads <= 1 && concrete != nullptr && concrete->direct;
  CaseProgress cp(progress_out, paper_plan(o, n, direct, concrete));
  c.phases.push_back(insert_phase(o, "insert", case_tag(c, "insert"), idx, keys, n,
                                  cp.next_phase(), label));
  c.stats = idx.stats();

  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  Rng rng(Rng::derive(o.seed, 10));
  shuffle(order, rng);
  // The keys copied in search order: the phase reads them sequentially, as the insert phase
  // does, so random reads of the key table are neither timed nor counted as cache misses.
  KeySet search_keys;
  search_keys.reserve(n, keys.total_bytes());
  for (std::uint64_t i = 0; i < n; ++i) search_keys.push(as_string(keys[order[i]]));
  c.phases.push_back(
      search_phase(o, case_tag(c, "search"), idx, search_keys, order, cp.next_phase(), label));
  // With threads sharing the index every lookup takes a lock: no like-for-like adapter loop.
  if (direct) adapter_phases(o, *concrete, idx, search_keys, order, c, cp, label);
  search_keys = KeySet{};

  // Ranks in key order, so that [sorted[s], sorted[s+count]) holds exactly `count` keys.
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return compare_keys(keys[a], keys[b]) < 0;
  });
  range_phases(o, idx, keys, order, c, cp, label);
}

// One step of a mix: the operation and its key (an insert's key is a fresh one, `fresh` its
// index in the key set; kExhausted when a duration run has used them all, or, for another
// operation, when a shuffled run has drawn every loaded key once).
struct Step {
  MixOp op = MixOp::lookup;
  Key key;
  std::uint64_t fresh = 0;
};
constexpr std::uint64_t kExhausted = ~std::uint64_t{0};

// Draws steps for one thread: the operation by the ratios, the key by the chooser.
class StepDrawer {
 public:
  StepDrawer(const BenchOptions& o, unsigned t, std::uint64_t loaded, const KeySet& keys,
             std::atomic<std::uint64_t>& next_fresh, std::atomic<std::uint64_t>& next_once)
      : m_(o.mix), keys_(keys), next_fresh_(next_fresh), next_once_(next_once),
        rng_(Rng::derive(o.seed, 100 + t)), chooser_(o.mix.choice, loaded, o.mix.choice_param),
        loaded_(loaded) {}
  Step next() {
    Step s;
    s.op = pick_op(m_, rng_.real());
    if (s.op != MixOp::insert && m_.choice == Choice::shuffled) {
      const std::uint64_t i = next_once_.fetch_add(1, std::memory_order_relaxed);
      if (i >= loaded_) s.fresh = kExhausted;
      else s.key = keys_[chooser_.once(i)];
      return s;
    }
    const std::uint64_t rank = chooser_.next(rng_);
    if (s.op != MixOp::insert) {
      s.key = keys_[rank];
      return s;
    }
    s.fresh = next_fresh_.fetch_add(1, std::memory_order_relaxed);
    if (s.fresh >= keys_.size()) s.fresh = kExhausted;
    else s.key = keys_[s.fresh];
    return s;
  }

 private:
  const MixSpec& m_;
  const KeySet& keys_;
  std::atomic<std::uint64_t>& next_fresh_;
  std::atomic<std::uint64_t>& next_once_;
  Rng rng_;
  KeyChooser chooser_;
  std::uint64_t loaded_;
};

// A thread's steps drawn in advance, keys copied in order: the measured loop reads them
// sequentially, so neither the generators nor random reads of the key table are timed.
class StepPlan {
 public:
  void add(const Step& s) {
    ops_.push_back({s.op, s.fresh});
    keys_.push(as_string(s.key));
  }
  Step operator[](std::size_t j) const { return {ops_[j].op, keys_[j], ops_[j].fresh}; }

 private:
  struct Op {
    MixOp op;
    std::uint64_t fresh;
  };
  std::vector<Op> ops_;
  KeySet keys_;
};

// Runs one step, timed (sampled) by its operation type.
void run_step_op(PhaseCtx& ctx, WorkerStats& w, Index& idx, const Step& st, std::uint64_t i,
                 std::size_t scan_len) {
  const Key k = st.key;
  switch (st.op) {
    case MixOp::lookup:
      timed(ctx, w, OpType::lookup, [&]() -> long { return idx.lookup(k) ? 0 : -1; });
      break;
    case MixOp::update:
      timed(ctx, w, OpType::update, [&]() -> long {
        return idx.update(k, i + 7) == Status::ok ? 0 : -1;
      });
      break;
    case MixOp::remove:
      timed(ctx, w, OpType::remove, [&]() -> long { return idx.remove(k) == Status::ok ? 0 : -1; });
      break;
    case MixOp::scan:
      timed(ctx, w, OpType::scan, [&]() -> long {
        return static_cast<long>(idx.scan(k, scan_len, [](Key, Value) { return true; }));
      });
      break;
    case MixOp::insert:
      timed(ctx, w, OpType::insert, [&]() -> long {
        return idx.insert(k, st.fresh + 1) == Status::ok ? 0 : -1;
      });
      break;
  }
}

// Runs one step and adds the persistence counters it moved to its operation type's: a mix's
// report then gives lines written back per update, per insert, ... (one read of this
// thread's counters per operation; the paper workload's phases, one type each, skip it).
void run_step(PhaseCtx& ctx, WorkerStats& w, Index& idx, const Step& st, std::uint64_t i,
              std::size_t scan_len) {
  static constexpr OpType kType[] = {OpType::lookup, OpType::insert, OpType::update,
                                     OpType::remove, OpType::scan};
  const OpType type = kType[static_cast<int>(st.op)];
  if (st.fresh == kExhausted) {  // no key left to draw (see Step): count a miss of its type
    timed(ctx, w, type, []() -> long { return -1; });
    return;
  }
  run_step_op(ctx, w, idx, st, i, scan_len);
  // What moved since the previous step's end is this step's: nothing between steps writes
  // to the pool, and the phase zeroed the counters before its first step.
  const pm::Counters& now = pm::counters();
  pm::Counters& c = w.per_type[static_cast<std::size_t>(type)].counters;
  pm::Counters& seen = w.counters_seen;
  c.flushes += now.flushes - seen.flushes;
  c.lines_flushed += now.lines_flushed - seen.lines_flushed;
  c.fences += now.fences - seen.fences;
  c.nt_stores += now.nt_stores - seen.nt_stores;
  c.commits += now.commits - seen.commits;
  seen = now;
}

// A PiBench/YCSB-style mix: load the first `loaded` keys in order (one thread, so the load
// is deterministic), then run the mix; inserts take the remaining keys in order.
void run_mix(const BenchOptions& o, Index& idx, const KeySet& keys, std::uint64_t loaded,
             CaseResult& c, const ProgressFn& progress_out, const std::string& label) {
  auto tag = [&](const std::string& ph) { return phase_tag(c.index, c.dist, c.flush_latency_ns, ph); };
  // Load, then run (a duration run weighs as much as the load).
  CaseProgress cp(progress_out, {static_cast<double>(loaded),
                                 static_cast<double>(o.mix.ops ? o.mix.ops : loaded)});
  BenchOptions load_opts = o;
  load_opts.threads = 1;
  c.phases.push_back(insert_phase(load_opts, "load", tag("load"), idx, keys, loaded, cp.next_phase(), label));
  c.stats = idx.stats();

  const MixSpec& m = o.mix;
  const unsigned threads = std::max(1u, o.threads);
  std::atomic<std::uint64_t> next_fresh{loaded};
  std::atomic<std::uint64_t> next_once{0};
  const std::uint64_t run_ops = m.ops;
  // With an operation count, every thread's steps are drawn before the phase (thread by
  // thread, so fresh insert keys are assigned deterministically).
  std::vector<StepPlan> plans(run_ops ? threads : 0);
  for (unsigned t = 0; t < plans.size(); ++t) {
    StepDrawer draw(o, t, loaded, keys, next_fresh, next_once);
    for (std::uint64_t i = t; i < run_ops; i += threads) plans[t].add(draw.next());
  }
  c.phases.push_back(run_phase(o, "run", tag("run"), run_ops, cp.next_phase(), label,
                               [&](PhaseCtx& ctx, unsigned t, WorkerStats& w) {
    StepDrawer draw(o, t, loaded, keys, next_fresh, next_once);  // duration runs draw as they go
    std::uint64_t local = 0;
    for (std::uint64_t i = t;; i += threads, ++local) {
      Step st;
      if (run_ops) {
        if (i >= run_ops) break;
        st = plans[t][local];
      } else {
        if ((local & 255) == 0 && seconds_since(ctx.t0) >= m.duration_s) break;
        st = draw.next();
      }
      run_step(ctx, w, idx, st, i, m.scan_len);
      tick(ctx, t, local + 1);
    }
  }));
}

// Keys the mix's inserts need beyond the loaded ones.
std::uint64_t fresh_keys_needed(const BenchOptions& o) {
  const MixSpec& m = o.mix;
  if (m.insert <= 0) return 0;
  if (m.ops == 0) return o.keys;  // duration run: as many again
  return static_cast<std::uint64_t>(static_cast<double>(m.ops) * m.insert / m.total() * 1.1) +
         1024;
}

}  // namespace

CaseProgress::CaseProgress(const ProgressFn& out, std::vector<double> weights) : out_(out) {
  if (weights.empty()) weights.push_back(1);
  double total = 0;
  for (double& w : weights) total += w = std::max(w, 0.0);
  double at = 0;
  for (double w : weights) {
    start_.push_back(total > 0 ? at / total : 0);
    share_.push_back(total > 0 ? w / total : 1.0 / static_cast<double>(weights.size()));
    at += w;
  }
}

void CaseProgress::report(std::size_t phase, const std::string& label, double f) {
  if (!out_) return;
  const std::size_t i = std::min(phase, start_.size() - 1);
  const double at = start_[i] + std::clamp(f, 0.0, 1.0) * share_[i];
  last_ = std::clamp(std::max(last_, at), 0.0, 1.0);
  out_(label, last_);
}

ProgressFn CaseProgress::next_phase() {
  const std::size_t i = next_++;
  return [this, i](const std::string& label, double f) { report(i, label, f); };
}

const PhaseResult* CaseResult::phase(std::string_view name) const {
  for (const auto& p : phases)
    if (p.name == name) return &p;
  return nullptr;
}

double CaseResult::phase_ratio(std::string_view a, std::string_view b) const {
  const PhaseResult* pa = phase(a);
  const PhaseResult* pb = phase(b);
  if (pa == nullptr || pb == nullptr) return std::nan("");
  return pa->cpu_ns_per_op() / pb->cpu_ns_per_op();
}

std::string phase_tag(const std::string& index, KeyDist d, std::uint32_t lat,
                      const std::string& phase) {
  return index + "/" + std::string(to_string(d)) + "/" + std::to_string(lat) + "/" + phase;
}

std::uint64_t auto_pool_size(std::size_t keys, double avg_key_len) {
  // Generous: radix trees with CoW nodes and B+-trees with half-full leaves stay well below
  // this; /dev/shm pages cost nothing until touched.
  const double per_key = 320 + 3 * avg_key_len;
  const auto bytes = static_cast<std::uint64_t>(static_cast<double>(keys) * per_key);
  return std::max<std::uint64_t>(bytes, 64ull << 20);
}

Result<IndexSpec> parse_index_spec(std::string_view entry) {
  IndexSpec spec;
  const std::size_t colon = entry.find(':');
  spec.kind = std::string(entry.substr(0, colon));
  if (spec.kind.empty()) return Error{Status::invalid_argument, "empty index kind in '" + std::string(entry) + "'"};
  std::size_t w = 0;
  for (std::size_t at = colon; at != std::string_view::npos;) {
    const std::size_t next = entry.find(':', at + 1);
    const std::string word(entry.substr(at + 1, next == std::string_view::npos ? std::string_view::npos : next - at - 1));
    if (w == spec.options.words.size())
      return Error{Status::invalid_argument, "'" + std::string(entry) + "': at most 4 option words"};
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(word.c_str(), &end, 0);
    if (word.empty() || word[0] == '-' || *end != '\0' || errno != 0)
      return Error{Status::invalid_argument, "'" + std::string(entry) + "': option word '" + word +
                                                 "' is not a number (decimal or 0x hex)"};
    spec.options.words[w++] = v;
    at = next;
  }
  return spec;
}

CaseResult run_case(const BenchOptions& o, const std::string& index, KeyDist dist,
                    std::uint32_t flush_latency_ns, const ProgressFn& progress) {
  CaseResult c;
  c.index = index;
  c.dist = dist;
  c.flush_latency_ns = flush_latency_ns;
  const std::string label = index + "/" + std::string(to_string(dist)) +
                            (flush_latency_ns ? "/" + std::to_string(flush_latency_ns) + "ns" : "");
  const bool mix = o.workload != "paper";
  const std::uint64_t extra = mix ? fresh_keys_needed(o) : 0;

  KeySpec ks{dist, o.keys + extra, o.seed, o.min_len, o.max_len, o.words_file};
  auto keys_r = make_key_set(ks);
  if (!keys_r) {
    c.error = keys_r.error().message;
    return c;
  }
  const KeySet& keys = keys_r.value();
  c.key_source = keys.source;
  c.keys = std::min<std::size_t>(o.keys, keys.size());
  c.avg_key_len = keys.size() ? static_cast<double>(keys.total_bytes()) / keys.size() : 0;

  pm::Config cfg = o.pm;
  cfg.flush_latency_ns = flush_latency_ns;
  if (flush_latency_ns > 0 && cfg.mode == pm::Mode::real) cfg.mode = pm::Mode::emulated;
  if (auto r = pm::configure(cfg); !r) {
    c.error = r.error().message;
    return c;
  }

  CasePool cp;
  const std::uint64_t size = o.pool_size ? o.pool_size : auto_pool_size(keys.size(), c.avg_key_len);
  const IndexSpec spec = parse_index_spec(index).value();  // validate() checked it
  if (auto r = open_case_pool(o, spec.kind, size, cp); !r) {
    c.error = "pool: " + r.error().message;
    return c;
  }
  auto idx_r = Index::create(*cp.pool, spec.kind, spec.options);
  if (!idx_r) {
    c.error = "create: " + idx_r.error().message;
    return c;
  }
  Index& idx = *idx_r.value();
  c.prefault = o.prefault ? prefault_pool(*cp.pool) : "off";
  BenchOptions oc = o;
  const registry::Entry* entry = registry::find(spec.kind);
  oc.index_concurrent = entry != nullptr && entry->concurrent;
  if (mix) run_mix(oc, idx, keys, c.keys, c, progress, label);
  else run_paper(oc, entry, idx, keys, c, progress, label);
  c.pool_bytes = cp.pool->allocator().stats().bytes_allocated;
  if (o.verify) {
    auto v = idx.verify();
    c.verified = v.ok();
    if (!v) c.error = "verify: " + v.error().message;
  }
  const bool volatile_index = cp.pool->root() == 0;  // e.g. the DRAM ART baseline
  idx_r.value().reset();
  if (o.recovery && o.llc != LlcMode::callgrind_child) {
    if (volatile_index) c.recovery.error = "volatile index: keeps nothing in the pool";
    else c.recovery = measure_recovery(o, spec, keys, c.keys);
  }
  return c;
}

}  // namespace wort::bench
