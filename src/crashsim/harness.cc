// crashsim/harness.cc — run_kv: the traced run, crash points, image recovery and oracles.
//
// Control flow: the traced operations run with the Simulator installed as this thread's
// tracer. Each crash point calls Run::on_point from inside the simulator (inside on_fence,
// or from acknowledge()); it builds each selected image into a reusable buffer, attaches a
// Pool to it and opens the index (recovery), then runs the oracles. With second_crash on, a
// nested Simulator watches the image while recovery runs, and at a few of recovery's crash
// points builds a second image in another buffer, recovers that and checks it again.
#include "crashsim/harness.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "crashsim/isolate.h"
#include "crashsim/oracles.h"
#include "crashsim/replay.h"
#include "crashsim/schedule.h"
#include "crashsim/simulator.h"
#include "pm/allocator.h"
#include "pm/persist.h"
#include "pm/pool_layout.h"

namespace wort::crashsim {

bool Report::has(std::string_view kind) const { return count(kind) > 0; }

std::size_t Report::count(std::string_view kind) const {
  return static_cast<std::size_t>(std::count_if(findings.begin(), findings.end(),
                                                [&](const Finding& f) { return f.kind == kind; }));
}

bool Report::correct() const {
  return error.empty() && std::all_of(findings.begin(), findings.end(), [](const Finding& f) {
           return f.kind == "REDUNDANT_FLUSH" || f.kind == "REDUNDANT_FENCE";
         });
}

std::string Report::summary() const {
  std::ostringstream os;
  os << ops << " ops, " << crash_points << " crash points, " << images << " images, "
     << seconds << " s";
  if (seconds > 0) os << " (" << static_cast<std::uint64_t>(images / seconds) << " images/s)";
  if (read_checks) os << ", " << read_checks << " reads of a new state checked";
  if (!schedule.empty())
    os << ", " << switches << " switches, " << stalls << " stalls (stalls=" << schedule << ")";
  os << ", " << findings.size() << " findings";
  if (suppressed) os << " (+" << suppressed << " duplicates)";
  if (!findings.empty()) {
    std::map<std::string, std::size_t> kinds;
    for (const Finding& f : findings) ++kinds[f.kind];
    os << " [";
    for (const auto& [k, n] : kinds) os << k << "x" << n << (k == kinds.rbegin()->first ? "" : " ");
    os << "]";
  }
  if (!error.empty()) os << "; ERROR: " << error;
  for (std::size_t i = 0; i < findings.size() && i < 5; ++i)
    os << "\n  " << findings[i].kind << ": " << findings[i].detail
       << "\n    replay: " << findings[i].replay;
  return os.str();
}

namespace {

constexpr std::size_t kMaxFindings = 64;
constexpr std::size_t kMaxPerKind = 16;

//! The dirty-read oracle's reader thread's own persistence events (Options::dirty_reads):
//! a lock-free reader may *help* — write back words another thread committed with a cached
//! store, and fence — before it returns (WORT's fresh leaves). The reader is a hypothetical
//! thread probed at a read point, so its events do not enter the writer's model (they would
//! change the writer's lints and crash images after the probe): it records, per line it
//! wrote back, the line's bytes as that write-back saw them (memory at the read point: what
//! another core reads, every store applied, an unfenced movnti hidden), and which of those
//! its own fences then ordered. The durable image of the probe is the model's durable image
//! with those lines as they were written back. Its volatile stores (a mark cleared) are put
//! back after the probe; any other pool store, commit, allocation or free by a reader is an
//! error.
class ReaderTracer final : public pm::Tracer {
 public:
  ReaderTracer(std::byte* base, std::size_t size) noexcept : base_(base), size_(size) {}
  void on_store(void* dst, const void* src, std::size_t len) override {
    if (in_range(dst, len)) bad_ = "a pool store";
    on_volatile_store(dst, src, len);
  }
  void on_volatile_store(void* dst, const void*, std::size_t len) override {
    if (!in_range(dst, len)) return;
    const auto* p = static_cast<const std::byte*>(dst);
    undo_.push_back({static_cast<std::size_t>(p - base_), std::vector<std::byte>(p, p + len)});
  }
  void on_nt_store(void* dst, std::uint64_t) override {
    if (in_range(dst, 8)) bad_ = "a non-temporal pool store";
    on_volatile_store(dst, nullptr, 8);
  }
  void on_flush(const void* addr, std::size_t len) override {
    if (!in_range(addr, len)) return;
    const std::size_t off = static_cast<std::size_t>(static_cast<const std::byte*>(addr) - base_);
    for (std::size_t line = off / kLine * kLine; line < off + std::max<std::size_t>(len, 1);
         line += kLine) {
      Line& l = flushed_[line];
      std::memcpy(l.data(), base_ + line, kLine);
    }
  }
  void on_fence() override {
    for (auto& [line, bytes] : flushed_) fenced_[line] = bytes;
    flushed_.clear();
  }
  void on_commit(void* dst, std::size_t len, bool) override {
    if (in_range(dst, len)) bad_ = "a commit store";
  }
  void on_alloc(void*, std::size_t) override { bad_ = "an allocation"; }
  void on_free(void*, std::size_t) override { bad_ = "a free"; }

  //! Lines written back and fenced by the reader, with their bytes as written back.
  bool helped() const noexcept { return !fenced_.empty(); }
  void apply_fenced(std::byte* image) const {
    for (const auto& [line, bytes] : fenced_) std::memcpy(image + line, bytes.data(), kLine);
  }
  //! Puts back what the reader's stores replaced (newest first).
  void undo() {
    for (std::size_t i = undo_.size(); i-- > 0;)
      std::memcpy(base_ + undo_[i].off, undo_[i].old.data(), undo_[i].old.size());
    undo_.clear();
  }
  const char* bad() const noexcept { return bad_; }

 private:
  using Line = std::array<std::byte, kLine>;
  bool in_range(const void* p, std::size_t len) const noexcept {
    const auto* b = static_cast<const std::byte*>(p);
    return b >= base_ && b + len <= base_ + size_;
  }
  struct Undo {
    std::size_t off;
    std::vector<std::byte> old;
  };
  std::byte* base_;
  std::size_t size_;
  std::map<std::size_t, Line> flushed_, fenced_;
  std::vector<Undo> undo_;
  const char* bad_ = nullptr;
};

//! A reusable image buffer (page-aligned, crashsim/sparse.h: a pool's gap costs nothing);
//! bytes from dirty_end on are zero, and so are the gap's.
struct ImageBuffer {
  ZeroPages mem;
  std::size_t size = 0;
  std::size_t dirty_end = 0;

  void allocate(std::size_t n) {
    size = n;
    mem = ZeroPages(n);
    dirty_end = 0;
  }
  std::byte* data() const { return mem.data(); }
  std::span<std::byte> span() const { return {mem.data(), size}; }
  //! Zero again whatever a recovery stored into the gap (only a bug does): the next image
  //! is built around the gap and must not inherit it.
  void clear_gap(const Gap& g) {
    if (!g.empty()) mem.discard(g.begin, g.end - g.begin);
  }
};

//! Sets the process-wide persistence mode to `trace` for the run (no flush instructions on
//! DRAM) and restores the previous configuration after.
//! Installs a tracer for a scope and puts the previous one back, also on an exception
//! (a dangling tracer would outlive the Simulator it points to).
class TracerGuard {
 public:
  explicit TracerGuard(pm::Tracer* t) : prev_(pm::set_tracer(t)) {}
  ~TracerGuard() { pm::set_tracer(prev_); }
  TracerGuard(const TracerGuard&) = delete;
  TracerGuard& operator=(const TracerGuard&) = delete;

 private:
  pm::Tracer* prev_;
};

class TraceModeGuard {
 public:
  TraceModeGuard() : saved_(pm::config()) {
    pm::Config c = saved_;
    c.mode = pm::Mode::trace;
    (void)pm::configure(c);
  }
  ~TraceModeGuard() { (void)pm::configure(saved_); }

 private:
  pm::Config saved_;
};

//! Offset just past the last non-zero byte, rounded up to a line; the gap (whose bounds
//! are multiples of 64) is not read.
std::size_t used_extent(const std::byte* p, std::size_t n, const Gap& gap = {}) {
  std::size_t end = n & ~std::size_t{7};
  while (end > 0) {
    if (!gap.empty() && end > gap.begin && end <= gap.end) end = gap.begin;
    if (end == 0) break;
    std::uint64_t w;
    std::memcpy(&w, p + end - 8, 8);
    if (w != 0) break;
    end -= 8;
  }
  if (end == 0 && n % 8 != 0) end = n;
  return std::min(n, (end + kLine - 1) & ~(kLine - 1));
}

//! The gap of a pool (pm/pool_layout.h) as the simulator's ranges take it.
Gap gap_of(const Pool& pool) {
  const pm::PoolGap g = pm::gap_of(pool.header());
  return Gap{static_cast<std::size_t>(g.begin), static_cast<std::size_t>(g.end)};
}

//! Bytes of the pool in use: header, chunk table and the chunks carved so far (an index
//! stores nowhere else).
std::size_t carved_bytes(const Pool& pool) {
  const pm::PoolHeader& h = pool.header();
  const std::uint64_t end = h.first_chunk_offset + h.chunk_hwm * h.chunk_size;
  return static_cast<std::size_t>(std::min<std::uint64_t>(end, pool.size()));
}

//! Records every persistence event (creation runs before the pool's address is known; the
//! recording is replayed into the simulator once it is).
class Recorder final : public pm::Tracer {
 public:
  struct Event {
    enum class Kind : std::uint8_t { store, nt_store, flush, fence, commit, alloc, free };
    Kind kind;
    void* p;
    std::size_t len;
    bool shares_fence = false;
    std::vector<std::byte> bytes;
  };
  std::vector<Event> events;

  void on_store(void* dst, const void* src, std::size_t len) override {
    const auto* b = static_cast<const std::byte*>(src);
    events.push_back({Event::Kind::store, dst, len, false, {b, b + len}});
  }
  void on_nt_store(void* dst, std::uint64_t v) override {
    const auto* b = reinterpret_cast<const std::byte*>(&v);
    events.push_back({Event::Kind::nt_store, dst, 8, false, {b, b + 8}});
  }
  void on_flush(const void* addr, std::size_t len) override {
    events.push_back({Event::Kind::flush, const_cast<void*>(addr), len, false, {}});
  }
  void on_fence() override { events.push_back({Event::Kind::fence, nullptr, 0, false, {}}); }
  void on_commit(void* dst, std::size_t len, bool shares) override {
    events.push_back({Event::Kind::commit, dst, len, shares, {}});
  }
  void on_alloc(void* p, std::size_t len) override {
    events.push_back({Event::Kind::alloc, p, len, false, {}});
  }
  void on_free(void* p, std::size_t len) override {
    events.push_back({Event::Kind::free, p, len, false, {}});
  }

  void replay(Simulator& sim) const {
    for (const Event& e : events) {
      switch (e.kind) {
        case Event::Kind::store: sim.on_store(e.p, e.bytes.data(), e.len); break;
        case Event::Kind::nt_store: {
          std::uint64_t v;
          std::memcpy(&v, e.bytes.data(), 8);
          sim.on_nt_store(e.p, v);
          break;
        }
        case Event::Kind::flush: sim.on_flush(e.p, e.len); break;
        case Event::Kind::fence: sim.on_fence(); break;
        case Event::Kind::commit: sim.on_commit(e.p, e.len, e.shares_fence); break;
        case Event::Kind::alloc: sim.on_alloc(e.p, e.len); break;
        case Event::Kind::free: sim.on_free(e.p, e.len); break;
      }
    }
  }
};

//! Concurrent histories: per key, every state a linearisation of the operations so far can
//! leave. A key with no operation in flight and one possible value lives in the plain
//! reference map instead. A state is (value, which in-flight operations it has applied, the
//! Status each of those returned there); an operation may take effect at any moment
//! between its invocation and its response, so the states close under applying any
//! in-flight operation not yet applied, and a response keeps the states that applied it
//! with the Status it returned.
class History {
 public:
  struct State {
    std::optional<Value> v;
    std::uint8_t applied = 0;
    std::array<Status, kMaxThreads> st{};
    bool operator==(const State&) const = default;
  };
  struct Hist {
    std::vector<State> states;
    std::array<std::optional<KvOp>, kMaxThreads> pending;
  };

  void invoke(RefMap& ref, std::size_t t, const KvOp& op) {
    auto [it, fresh] = keys_.try_emplace(op.key);
    if (fresh) {
      State s;
      if (auto r = ref.find(op.key); r != ref.end()) {
        s.v = r->second;
        ref.erase(r);
      }
      it->second.states.push_back(s);
    }
    it->second.pending[t] = op;
  }

  //! False if no linearisation lets the operation return `got`; `possible` then lists what
  //! it could have returned.
  bool respond(RefMap& ref, std::size_t t, const KvOp& op, Status got, std::string* possible) {
    Hist& h = keys_.at(op.key);
    close(h);
    std::vector<State> keep, any;
    for (State s : h.states) {
      if (!(s.applied >> t & 1)) continue;
      const Status st = s.st[t];
      s.applied = static_cast<std::uint8_t>(s.applied & ~(1u << t));
      s.st[t] = Status{};
      if (std::find(any.begin(), any.end(), s) == any.end()) any.push_back(s);
      if (st == got) {
        if (std::find(keep.begin(), keep.end(), s) == keep.end()) keep.push_back(s);
      } else if (possible->find(to_string(st)) == std::string::npos) {
        if (!possible->empty()) *possible += " or ";
        *possible += to_string(st);
      }
    }
    const bool ok = !keep.empty();
    h.states = ok ? std::move(keep) : std::move(any);
    h.pending[t].reset();
    const bool idle = std::none_of(h.pending.begin(), h.pending.end(),
                                   [](const std::optional<KvOp>& o) { return o.has_value(); });
    const bool one = std::all_of(h.states.begin(), h.states.end(),
                                 [&](const State& s) { return s.v == h.states[0].v; });
    if (idle && one) {
      if (h.states[0].v) ref[op.key] = *h.states[0].v;
      keys_.erase(op.key);
    }
    return ok;
  }

  //! Every value each key of the history may hold now.
  void allowed(std::map<std::string, std::vector<std::optional<Value>>>* out) const {
    out->clear();
    for (const auto& [k, h0] : keys_) {
      Hist h = h0;
      close(h);
      auto& vs = (*out)[k];
      for (const State& s : h.states)
        if (std::find(vs.begin(), vs.end(), s.v) == vs.end()) vs.push_back(s.v);
    }
  }

 private:
  static void close(Hist& h) {
    for (std::size_t i = 0; i < h.states.size(); ++i)
      for (std::size_t t = 0; t < kMaxThreads; ++t) {
        if (!h.pending[t] || (h.states[i].applied >> t & 1)) continue;
        State n = h.states[i];
        const KvOp& op = *h.pending[t];
        RefMap one;
        if (n.v) one.emplace(op.key, *n.v);
        n.st[t] = apply_to_reference(one, op);
        const auto f = one.find(op.key);
        n.v = f == one.end() ? std::nullopt : std::optional<Value>(f->second);
        n.applied = static_cast<std::uint8_t>(n.applied | (1u << t));
        if (std::find(h.states.begin(), h.states.end(), n) == h.states.end())
          h.states.push_back(n);
      }
  }

  std::map<std::string, Hist> keys_;
};

class Run {
 public:
  Run(const Factory& f, std::span<const KvOp> setup, std::span<const KvOp> ops,
      const Options& o, int stream_fd = -1)
      : f_(f), setup_(setup), ops_(ops), o_(o), stream_fd_(stream_fd) {}
  //! Concurrent histories (run_concurrent_kv).
  Run(const Factory& f, std::span<const KvOp> setup, std::span<const std::vector<KvOp>> threads,
      const Options& o, const ScheduleOptions& so, int stream_fd)
      : f_(f), setup_(setup), o_(o), stream_fd_(stream_fd), so_(so) {
    for (const auto& t : threads) threads_.emplace_back(t);
  }

  Report go();

  //! One traced event of writer t (WriterTracer): waits for t's turn (at a switch point the
  //! seeded coin may first hand the turn on), feeds the model as thread t, counts the event.
  template <class Fn>
  void writer_event(std::size_t t, bool switch_point, Fn&& fn, bool op_boundary = false) {
    jitter(t);
    const bool loose = sched_->enter(t, switch_point, op_boundary);
    select(t);
    for (std::size_t u = 0; u < threads_.size(); ++u)
      if (u != t) sim_.hide_nt(u);  // the others' movnti not yet fenced: not visible to t
    sim_.show_nt(t);
    sim_.set_untracked_paused(loose || sim_.any_nt_hidden());
    fn();
    sched_->leave(t);
  }
  //! Writer t is about to try a lock (Tracer::on_before_cas): it waits for its turn, unless
  //! the broken variant ScheduleOptions::ungated_cas is on.
  void writer_gate(std::size_t t) {
    jitter(t);
    if (!so_.ungated_cas) sched_->wait_turn(t);
  }
  //! Writer t spins waiting for another writer (Tracer::on_wait): the turn passes on now.
  void writer_waits(std::size_t t) { sched_->waiting(t); }
  Simulator& sim() { return sim_; }

 private:
  //! ScheduleOptions::jitter_seed: a pseudo-random pause of writer t (its own generator).
  void jitter(std::size_t t) {
    if (so_.jitter_seed == 0) return;
    thread_local std::mt19937_64 rng;
    thread_local const void* seeded = nullptr;
    if (seeded != this) {
      rng.seed(so_.jitter_seed * 0x9e3779b97f4a7c15ull + t);
      seeded = this;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 100));
  }
  bool create_pool_and_index();
  bool prepare();
  void install_handlers();
  void explore_create(const Recorder& rec);
  void run_traced_ops();
  void run_traced_concurrent();
  void writer(std::size_t t);
  void select(std::size_t t) {
    cur_t_ = t;
    ops_ = threads_[t];
    op_ = op_idx_[t];
    sim_.set_thread(t);
  }
  bool concurrent() const { return !threads_.empty(); }
  std::string op_tag() const {
    return concurrent() ? "t" + std::to_string(cur_t_) + "op" + std::to_string(op_)
                        : "op" + std::to_string(op_);
  }
  void check_live();
  void probe_read();
  //! What probe_read's reader saw: the live lookup, and the durable image's lookup (or why
  //! the image could not be recovered).
  struct ProbeRead {
    std::optional<Value> seen, durable;
    std::string error;
  };
  void read_as_reader(const KvOp& op, ReaderTracer& helper, ProbeRead* r);
  void report_probe(const KvOp& op, const std::optional<Value>& before, const ProbeRead& r,
                    const ReaderTracer& helper);

  Expect expect() const;
  void on_point(bool at_ack);
  void check_image(std::span<const std::uint32_t> choice);
  void recover_and_check(std::span<const std::uint32_t> choice, std::uint64_t seed,
                         std::vector<Problem>* problems);
  void report_image(const std::string& choice_str, std::vector<Problem>& problems);
  void on_nested_point(bool at_ack);
  void check_second(std::span<const std::uint32_t> choice);
  void on_lint(Lint l, std::uintptr_t site, const std::string& detail);
  void on_lint_after_crash(Lint l, std::uintptr_t site, const std::string& detail);
  void check_commits(const KvOp* op, Status want, std::size_t commits, const std::string& where,
                     const std::string& replay);

  bool recover(const ImageBuffer& img, std::unique_ptr<Pool>* pool,
               std::unique_ptr<Index>* ix, std::vector<Problem>* problems);
  void oracles(Pool& pool, Index& ix, const Expect& ex, bool full, std::uint64_t seed,
               std::vector<Problem>* problems, const AfterOp& after_op = {});

  std::string where() const;
  std::string replay_string(std::uint64_t point, const std::string& choice,
                            const std::string& nested = {}) const;
  void add_finding(const std::string& kind, const std::string& site, std::string detail,
                   std::string replay);

  const Factory& f_;
  std::span<const KvOp> setup_, ops_;
  Options o_;
  int stream_fd_ = -1;  // isolated: findings stream to the watching parent
  ReplaySpec rp_;
  Report rep_;

  std::unique_ptr<Pool> pool_;
  std::unique_ptr<Index> index_;
  RefMap ref_;                       // acknowledged state
  std::optional<Value> after_v_;     // the in-flight key's value once the op is acknowledged
  std::vector<std::string> touched_; // every key any operation names, sorted
  pm::AllocatorStats empty_stats_;   // what a freshly created empty index holds

  Simulator sim_, nested_;
  ExtentTracker track1_, track2_;
  ImageBuffer img1_, img2_, img_read_;  // img_read_: the durable image at a read point
  Gap gap_;  // the pool's gap (Options::chunk_area_offset), skipped by every copy
  bool op_seen_durable_ = false;         // the in-flight op's effect was read and durable

  std::size_t op_ = 0;
  bool in_flight_ = false;
  std::uint64_t point_ = 0;           // id of the next outer crash point
  std::uint64_t cur_point_ = 0;       // the point being explored
  bool cur_at_ack_ = false;
  std::vector<std::uint32_t> cur_choice_;
  std::uint64_t nested_point_ = 0;    // id of the next crash point inside this recovery
  bool image_failed_ = false;
  bool recovering_ = false;           // nested_ watches an image's recovery
  bool continuing_ = false;           // nested_ watches the continuation ops on an image
  bool creating_ = false;             // crash points of Index::create (trace_create)
  //! SECOND_CRASH findings of the image being checked, as (site, finding): reported only if
  //! the image passes with one crash (otherwise they repeat its finding).
  struct PendingSecond {
    std::string site;
    Finding finding;
  };
  std::vector<PendingSecond> pending_second_;

  std::set<std::string> seen_;        // (kind, site) already reported
  std::map<std::string, std::size_t> per_kind_;

  // concurrent histories (run_concurrent_kv); threads_ empty in run_kv
  std::vector<std::span<const KvOp>> threads_;
  ScheduleOptions so_;
  Scheduler* sched_ = nullptr;
  std::size_t cur_t_ = 0;             // the writer whose event is being handled
  std::vector<std::size_t> op_idx_;   // each writer's current operation
  History hist_;
  std::map<std::string, std::vector<std::optional<Value>>> allowed_;  // for expect()
  bool hung_ = false;                 // writers left running: the index must not be touched
};

//! Writer t's tracer: every event goes through Run::writer_event (its turn, then the model).
class WriterTracer final : public pm::Tracer {
 public:
  WriterTracer(Run* r, std::size_t t) : r_(r), t_(t) {}
  void on_store(void* d, const void* s, std::size_t n) override {
    r_->writer_event(t_, false, [&] { r_->sim().on_store(d, s, n); });
  }
  void on_volatile_store(void* d, const void* s, std::size_t n) override {
    r_->writer_event(t_, false, [&] { r_->sim().on_volatile_store(d, s, n); });
  }
  void on_before_cas(void*) override { r_->writer_gate(t_); }
  void on_wait(const void*) override { r_->writer_waits(t_); }
  void on_nt_store(void* d, std::uint64_t v) override {
    r_->writer_event(t_, false, [&] { r_->sim().on_nt_store(d, v); });
  }
  void on_flush(const void* a, std::size_t n) override {
    r_->writer_event(t_, false, [&] { r_->sim().on_flush(a, n); });
  }
  void on_fence() override {
    r_->writer_event(t_, true, [&] { r_->sim().on_fence(); });
  }
  void on_commit(void* d, std::size_t n, bool shares) override {
    r_->writer_event(t_, false, [&] { r_->sim().on_commit(d, n, shares); });
  }
  void on_alloc(void* p, std::size_t n) override {
    r_->writer_event(t_, false, [&] { r_->sim().on_alloc(p, n); });
  }
  void on_free(void* p, std::size_t n) override {
    r_->writer_event(t_, false, [&] { r_->sim().on_free(p, n); });
  }
  void on_assume_durable(void* p, std::size_t n) override {
    r_->writer_event(t_, false, [&] { r_->sim().on_assume_durable(p, n); });
  }

 private:
  Run* r_;
  std::size_t t_;
};

Report Run::go() {
  const auto t0 = std::chrono::steady_clock::now();
  if (!o_.replay.empty()) {
    std::string err;
    if (!parse_replay(o_.replay, &rp_, &err)) {
      rep_.error = "bad replay string: " + err;
      return rep_;
    }
    o_.seed = rp_.seed;
  }
  if (prepare()) {
    {
      TraceModeGuard mode;
      if (concurrent()) run_traced_concurrent();
      else run_traced_ops();
    }
    if (!hung_) check_live();
  }
  if (hung_) {  // writers still run on them: leave both (the isolated child exits anyway)
    (void)index_.release();
    (void)pool_.release();
  }
  index_.reset();
  pool_.reset();
  rep_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return std::move(rep_);
}

bool Run::create_pool_and_index() {
  PoolOptions po;
  po.size = o_.pool_size;
  po.chunk_size = o_.chunk_size;
  po.kind = f_.kind;
  po.values_are_blocks = o_.values_are_blocks;
  po.chunk_area_offset = o_.chunk_area_offset;
  auto p = Pool::create_in_memory(po);
  if (!p) {
    rep_.error = "create_in_memory: " + p.error().message;
    return false;
  }
  pool_ = std::move(p).value();
  auto ix = f_.create(*pool_);
  if (!ix) {
    rep_.error = "create index: " + ix.error().message;
    return false;
  }
  index_ = std::move(ix).value();
  empty_stats_ = pool_->allocator().stats();
  return true;
}

bool Run::prepare() {
  Recorder rec;
  {
    std::optional<TraceModeGuard> mode;
    std::optional<TracerGuard> tracing;
    if (o_.trace_create) {
      mode.emplace();
      tracing.emplace(&rec);
    }
    if (!create_pool_and_index()) return false;
  }
  gap_ = gap_of(*pool_);
  img1_.allocate(pool_->size());
  if (o_.second_crash || rp_.nested) img2_.allocate(pool_->size());
  if (o_.trace_create) explore_create(rec);
  for (const KvOp& op : setup_) {
    const Status want = apply_to_reference(ref_, op);
    if (Status got = apply_op(*index_, op); got != want)
      add_finding("LIVE", "setup", "setup " + describe(op) + " returned " +
                                      std::string(to_string(got)) + ", want " +
                                      std::string(to_string(want)), "");
  }
  std::set<std::string> keys;
  for (const KvOp& op : setup_) keys.insert(op.key);
  for (const KvOp& op : ops_) keys.insert(op.key);
  for (const auto& t : threads_)
    for (const KvOp& op : t) keys.insert(op.key);
  touched_.assign(keys.begin(), keys.end());
  return true;
}

//! Replays the recording of pool and index creation into the simulator: crash points at
//! every fence and at create's return, lints, the create row of the commit table.
void Run::explore_create(const Recorder& rec) {
  TraceModeGuard mode;
  install_handlers();
  sim_.watch(pool_->base(), pool_->size(), 0, gap_);  // fresh memory: all zero, all durable
  sim_.set_replaying(true);
  creating_ = true;
  rec.replay(sim_);
  if (!rp_.active)
    check_commits(nullptr, Status::ok, sim_.commits_in_op(), "Index::create",
                  replay_string(point_, "none"));
  cur_at_ack_ = true;
  sim_.acknowledge();
  creating_ = false;
  sim_.set_replaying(false);
}

void Run::install_handlers() {
  sim_.set_point_handler([this](bool at_ack) { on_point(at_ack); });
  if (o_.lints && !rp_.active)  // a replay re-runs one image, quietly
    sim_.set_lint_handler([this](Lint l, std::size_t, std::uintptr_t site, const std::string& d) {
      on_lint(l, site, d);
    });
  sim_.set_compare_limit([this] { return carved_bytes(*pool_); });
  nested_.set_point_handler([this](bool at_ack) { on_nested_point(at_ack); });
  nested_.set_compare_limit([] { return std::size_t{0}; });  // the image's written extent
  if (o_.dirty_reads && !rp_.active && !concurrent()) sim_.set_read_handler([this] { probe_read(); });
  if (o_.lints && o_.lints_after_crash && !rp_.active)
    nested_.set_lint_handler(
        [this](Lint l, std::size_t, std::uintptr_t site, const std::string& d) {
          on_lint_after_crash(l, site, d);
        });
}

void Run::run_traced_ops() {
  sim_.watch(pool_->base(), pool_->size(), used_extent(pool_->base(), pool_->size(), gap_), gap_);
  install_handlers();
  TracerGuard restore(&sim_);
  for (op_ = 0; op_ < ops_.size(); ++op_) {
    const KvOp& op = ops_[op_];
    after_v_ = value_after(ref_, op);
    op_seen_durable_ = false;
    in_flight_ = true;
    const Status got = apply_op(*index_, op);
    if (o_.dirty_reads) sim_.read_now();  // returned, not yet acknowledged: a last read
    in_flight_ = false;
    const std::size_t commits = sim_.commits_in_op();
    const Status want = apply_to_reference(ref_, op);
    if (!rp_.active)
      check_commits(&op, want, commits, "op " + std::to_string(op_), replay_string(point_, "none"));
    if (got != want)
      add_finding("LIVE", "op" + std::to_string(op_),
                  describe(op) + " returned " + std::string(to_string(got)) + ", want " +
                      std::string(to_string(want)) + " (op " + std::to_string(op_) + ")",
                  "");
    ++rep_.ops;
    sim_.acknowledge();
    if (!rep_.error.empty()) break;
  }
  if (rp_.active && rep_.crash_points == 0 && rep_.error.empty())
    rep_.error = "replay: crash point " + std::to_string(rp_.point) + " never came (the run had " +
                 std::to_string(point_) + ")";
}

void Run::run_traced_concurrent() {
  sim_.watch(pool_->base(), pool_->size(), used_extent(pool_->base(), pool_->size(), gap_), gap_);
  install_handlers();
  sim_.set_global_fences(so_.global_fences);
  sim_.set_track_nt(!so_.nt_visible_before_fence);
  Scheduler::Params sp;
  sp.threads = threads_.size();
  sp.seed = o_.seed;
  sp.switch_probability = so_.switch_probability;
  sp.stall_cpu_ms = so_.stall_cpu_ms;
  sp.stall_sleep_ms = so_.stall_sleep_ms;
  sp.stall_wall_s = so_.stall_wall_s;
  sp.hang_s = so_.hang_s;
  if (rp_.active) sp.forced = rp_.stalls;
  auto owned = std::make_unique<Scheduler>(sp);
  Scheduler& sched = *owned;
  sched_ = &sched;
  op_idx_.assign(threads_.size(), 0);
  std::vector<std::thread> writers;
  for (std::size_t t = 0; t < threads_.size(); ++t) writers.emplace_back([this, t] { writer(t); });
  if (!sched.control()) {
    hung_ = true;
    add_finding("LIVE", "hang", "the writers hung: " + sched.hang_detail(),
                "seed=" + std::to_string(o_.seed) + ",stalls=" + sched.stall_string());
    for (std::thread& w : writers) w.detach();
    rep_.error = "the writers hung (" + sched.hang_detail() + ")";
    (void)owned.release();  // the writers still use it (the isolated child exits anyway)
    return;
  }
  for (std::thread& w : writers) w.join();
  for (std::size_t t = 0; t < threads_.size(); ++t) sim_.show_nt(t);
  sim_.set_track_nt(false);
  rep_.switches = sched.switches() + sched.handoffs();
  rep_.stalls = sched.stall_count();
  rep_.schedule = sched.stall_string();
  sched_ = nullptr;
  sim_.set_thread(0);
  if (rp_.active && rep_.crash_points == 0 && rep_.error.empty())
    rep_.error = "replay: crash point " + std::to_string(rp_.point) + " never came (the run had " +
                 std::to_string(point_) + ")";
}

void Run::writer(std::size_t t) {
  sched_->attach(t);
  WriterTracer tracer(this, t);
  TracerGuard restore(&tracer);
  const std::span<const KvOp> ops = threads_[t];
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const KvOp& op = ops[i];
    writer_event(
        t, true,
        [&] {  // the operation boundary: a switch point
          op_idx_[t] = i;
          select(t);
          hist_.invoke(ref_, t, op);
        },
        /*op_boundary=*/true);
    const Status got = apply_op(*index_, op);
    writer_event(t, false, [&] {
      std::string possible;
      if (!hist_.respond(ref_, t, op, got, &possible))
        add_finding("LIVE", op_tag(),
                    "writer " + std::to_string(t) + ": " + describe(op) + " returned " +
                        std::string(to_string(got)) + "; no order of the operations in "
                        "flight gives that (possible: " + possible + ") (op " +
                        std::to_string(i) + ")",
                    replay_string(point_, "none"));
      if (!rp_.active)
        check_commits(&op, got, sim_.commits_in_op(), "t" + std::to_string(t) + " op " +
                      std::to_string(i), replay_string(point_, "none"));
      ++rep_.ops;
      sim_.acknowledge();
    });
  }
  sched_->finish(t);
}

//! A read point inside the in-flight operation (Options::dirty_reads): another thread looks
//! the key up in the live index, as a lock-free reader running now could. If it sees the
//! operation's effect, the image with nothing beyond the durable state (every dirty line cut
//! at its durable point) is recovered on that thread (no tracer there) and must show it too.
//! Once it does, the rest of the operation is not probed (what is durable stays durable).
void Run::probe_read() {
  if (!in_flight_ || op_seen_durable_) return;
  const KvOp& op = ops_[op_];
  const auto it = ref_.find(op.key);
  const std::optional<Value> before =
      it == ref_.end() ? std::nullopt : std::optional<Value>(it->second);
  if (before == after_v_) return;  // the operation changes nothing a reader could see
  if (img_read_.size == 0) img_read_.allocate(pool_->size());
  ProbeRead r;
  ReaderTracer helper(pool_->base(), pool_->size());  // the reader's write-backs and fences
  std::thread reader([&] { read_as_reader(op, helper, &r); });
  reader.join();
  img_read_.clear_gap(gap_);
  helper.undo();  // the probe's reader is hypothetical: the writer's run goes on without it
  report_probe(op, before, r, helper);
}

//! On the reader's thread: the live lookup of `op`'s key, and if it sees the operation's
//! effect, the same lookup in the recovered image of the durable state plus what the
//! reader itself made durable.
void Run::read_as_reader(const KvOp& op, ReaderTracer& helper, ProbeRead* r) {
  pm::set_tracer(&helper);
  r->seen = index_->lookup(as_key(op.key));
  pm::set_tracer(nullptr);
  if (r->seen != after_v_) return;
  const Px86Model& model = sim_.model();
  const std::vector<std::uint32_t> nothing_extra(model.choice_limits().size(), 0);
  const std::size_t n = std::max(model.extent(), img_read_.dirty_end);
  if (!model.build_image(nothing_extra, img_read_.data(), n)) {
    r->error = "could not build the durable image";
    return;
  }
  helper.apply_fenced(img_read_.data());  // what the reader itself made durable
  img_read_.dirty_end = img_read_.size;  // recovery may write anywhere: rebuild it all next time
  auto p = Pool::attach(img_read_.span(), f_.kind);
  if (!p) {
    r->error = "the durable image does not attach: " + p.error().message;
    return;
  }
  auto ix = f_.open(**p);
  if (!ix) {
    r->error = "the durable image does not open: " + ix.error().message;
    return;
  }
  r->durable = (*ix)->lookup(as_key(op.key));
}

//! probe_read's findings: the reader wrote to the pool (LIVE), saw neither state
//! (TORN_READ), or saw the effect before it was durable (DIRTY_READ).
void Run::report_probe(const KvOp& op, const std::optional<Value>& before, const ProbeRead& r,
                       const ReaderTracer& helper) {
  if (helper.bad() != nullptr)
    add_finding("LIVE", "op" + std::to_string(op_),
                describe(op) + " (op " + std::to_string(op_) + "): the concurrent lookup made " +
                    helper.bad() + " in the pool",
                "");
  auto show = [](const std::optional<Value>& v) {
    return v ? "value " + std::to_string(*v) : std::string("absent");
  };
  const std::string what = describe(op) + " (op " + std::to_string(op_) + ")";
  if (r.seen != before && r.seen != after_v_) {
    add_finding("TORN_READ", "op" + std::to_string(op_),
                what + ": a concurrent lookup of its key saw " + show(r.seen) + ", neither " +
                    show(before) + " before it nor " + show(after_v_) + " after",
                "");
    return;
  }
  if (r.seen != after_v_) return;
  ++rep_.read_checks;
  if (!r.error.empty() || r.durable != after_v_) {
    add_finding("DIRTY_READ", "op" + std::to_string(op_),
                what + ": a concurrent lookup of its key saw " + show(r.seen) +
                    " before that was durable: the image holding only the durable state " +
                    (r.error.empty() ? "recovers " + show(r.durable) : "fails: " + r.error),
                "");
  }
  // Durable without the reader's help: stays durable. A reader that helped made it durable
  // only in its hypothetical run, so later read points of the operation are probed again.
  if (!helper.helped()) op_seen_durable_ = true;
}

//! The traced run itself, after the last operation: contents, verify, audit.
void Run::check_live() {
  if (!index_) return;
  Expect ex;
  ex.acked = &ref_;
  ex.touched = &touched_;
  if (concurrent()) {  // keys whose operations overlapped: either order's value
    hist_.allowed(&allowed_);
    ex.allowed = &allowed_;
  }
  std::vector<Problem> problems;
  check_contents(*index_, ex, nullptr, &problems);
  if (auto v = index_->verify(); !v) problems.push_back({"VERIFY", v.error().message});
  if (auto a = audit_blocks(*pool_, *index_)) problems.push_back({"AUDIT", *a});
  for (const Problem& p : problems)
    add_finding("LIVE", "end:" + p.kind, p.kind + " after the last operation: " + p.detail, "");
}

Expect Run::expect() const {
  Expect e;
  e.acked = &ref_;
  e.touched = &touched_;
  if (concurrent()) {
    hist_.allowed(&const_cast<Run*>(this)->allowed_);
    e.allowed = &allowed_;
    return e;
  }
  if (in_flight_) {
    e.inflight = &ops_[op_];
    auto it = ref_.find(ops_[op_].key);
    if (it != ref_.end()) e.before_v = it->second;
    e.after_v = after_v_;
  }
  return e;
}

std::string Run::where() const {
  if (creating_) return cur_at_ack_ ? "Index::create at its return" : "Index::create before a fence";
  std::string s = (concurrent() ? "writer " + std::to_string(cur_t_) + " " : std::string()) +
                  "op " + std::to_string(op_);
  if (op_ < ops_.size()) s += " (" + describe(ops_[op_]) + ")";
  s += cur_at_ack_ ? " at its acknowledgement" : " before a fence";
  return s;
}

std::string Run::replay_string(std::uint64_t point, const std::string& choice,
                               const std::string& nested) const {
  std::string s;
  if (concurrent()) {
    std::string ops;
    for (std::size_t i : op_idx_) {
      if (!ops.empty()) ops += '/';
      ops += std::to_string(i);
    }
    s = "seed=" + std::to_string(o_.seed) + ",stalls=" +
        (sched_ ? sched_->stall_string() : std::string("-")) + ",ops=" + ops +
        ",point=" + std::to_string(point) + ",choice=" + choice;
  } else {
    s = "seed=" + std::to_string(o_.seed) + ",op=" + std::to_string(op_) +
        ",point=" + std::to_string(point) + ",choice=" + choice;
  }
  if (!nested.empty()) s += "," + nested;
  return s;
}

void Run::add_finding(const std::string& kind, const std::string& site, std::string detail,
                      std::string replay) {
  if (!seen_.insert(kind + "|" + site).second || rep_.findings.size() >= kMaxFindings ||
      per_kind_[kind] >= kMaxPerKind) {
    ++rep_.suppressed;
    return;
  }
  ++per_kind_[kind];
  rep_.findings.push_back(Finding{kind, std::move(detail), std::move(replay)});
  stream_finding(stream_fd_, rep_.findings.back());
}

//! A commit-ordering lint (see Options::commit_lints).
bool is_commit_lint(Lint l, const std::string& detail) {
  return l == Lint::store_after_commit ||
         (l == Lint::missing_fence && detail.starts_with("commit store at offset"));
}

void Run::on_lint(Lint l, std::uintptr_t site, const std::string& detail) {
  if (!o_.commit_lints && is_commit_lint(l, detail)) return;
  // Concurrent histories: another writer's fence may have made this one's write-back or
  // fence look redundant; the performance lints belong to run_kv.
  if (concurrent() && (l == Lint::redundant_flush || l == Lint::redundant_fence)) return;
  char pc[32];
  std::snprintf(pc, sizeof pc, "pc=%#zx", static_cast<std::size_t>(site));
  const std::string site_key = site ? pc : op_tag();
  std::string at = (concurrent() ? "writer " + std::to_string(cur_t_) + " " : std::string()) +
                   "op " + std::to_string(op_);
  if (op_ < ops_.size()) at += " (" + describe(ops_[op_]) + ")";
  if (creating_) at = "pool and index creation";
  add_finding(std::string(lint_name(l)), creating_ ? "create:" + site_key : site_key,
              detail + " during " + at + (site ? std::string(", ") + pc : std::string()),
              replay_string(point_, "none"));
}

void Run::check_commits(const KvOp* op, Status want, std::size_t commits,
                        const std::string& where, const std::string& replay) {
  if (!o_.commits) return;
  const CommitRule r = op ? commit_rule(*o_.commits, *op, want) : o_.commits->create;
  if (commits >= r.min && commits <= r.max) return;
  const std::string what = op ? describe(*op) + " (returns " + std::string(to_string(want)) + ")"
                              : std::string("Index::create");
  add_finding("COMMIT_COUNT", where + ":" + (op ? std::to_string(int(op->kind)) + std::string(to_string(want)) : "create"),
              what + " made " + std::to_string(commits) + " commit store(s), the index declares " +
                  std::to_string(r.min) + (r.max != r.min ? ".." + std::to_string(r.max) : "") +
                  " [" + where + "]",
              replay);
}

void Run::on_lint_after_crash(Lint l, std::uintptr_t site, const std::string& detail) {
  if (!o_.commit_lints && is_commit_lint(l, detail)) return;
  char pc[32];
  std::snprintf(pc, sizeof pc, "pc=%#zx", static_cast<std::size_t>(site));
  const char* phase = continuing_ ? "continuation" : "recovery";
  const std::string site_key = std::string(phase) + (site ? pc : "");
  const std::string choice = format_choice(cur_choice_);
  add_finding(std::string(lint_name(l)), site_key,
              detail + " after a crash, during the " + phase + " of the image [" + where() +
                  ", crash point " + std::to_string(cur_point_) + ", choice " + choice + "]" +
                  (site ? std::string(", ") + pc : std::string()),
              replay_string(cur_point_, choice));
}

void Run::on_point(bool at_ack) {
  const std::uint64_t p = point_++;
  if (!o_.explore) return;
  cur_point_ = p;
  cur_at_ack_ = at_ack;
  const auto limits = sim_.model().choice_limits();
  if (rp_.active) {
    if (p != rp_.point) return;
    std::vector<std::uint32_t> choice;
    if (!resolve_choice(rp_.choice, limits, &choice)) {
      rep_.error = "replay choice '" + rp_.choice + "' does not fit crash point " +
                   std::to_string(p) + " (" + std::to_string(limits.size()) + " dirty lines)";
      return;
    }
    ++rep_.crash_points;
    check_image(choice);
    return;
  }
  if (o_.max_crash_points && rep_.crash_points >= o_.max_crash_points) return;
  ++rep_.crash_points;
  select_images(limits, o_.exhaustive_cap, o_.random_samples, mix_seed(o_.seed, p),
                [this](std::span<const std::uint32_t> c) { check_image(c); }, o_.pair_lines);
}

bool Run::recover(const ImageBuffer& img, std::unique_ptr<Pool>* pool,
                  std::unique_ptr<Index>* ix, std::vector<Problem>* problems) {
  auto p = Pool::attach(img.span(), f_.kind);
  if (!p) {
    problems->push_back({"RECOVERY_FAILED", "Pool::attach: " + p.error().message});
    return false;
  }
  *pool = std::move(p).value();
  auto opened = f_.open(**pool);
  if (!opened) {
    problems->push_back({"RECOVERY_FAILED", "open: " + opened.error().message});
    return false;
  }
  *ix = std::move(opened).value();
  return true;
}

void Run::oracles(Pool& pool, Index& ix, const Expect& ex, bool full, std::uint64_t seed,
                  std::vector<Problem>* problems, const AfterOp& after_op) {
  RefMap observed;
  const std::size_t before = problems->size();
  check_contents(ix, ex, &observed, problems);
  if (auto v = ix.verify(); !v) problems->push_back({"VERIFY", v.error().message});
  if (auto a = audit_blocks(pool, ix)) problems->push_back({"AUDIT", *a});
  if (!full || problems->size() != before) return;
  if (o_.continuation) {
    if (auto c = run_continuation(pool, ix, std::move(observed), touched_, seed,
                                  o_.continuation_ops, after_op))
      problems->push_back(*c);
  }
  const bool drain_this = o_.drain_every <= 1 || seed % o_.drain_every == 0;
  if (o_.drain && drain_this && problems->size() == before) {
    if (auto d = drain_and_compare(pool, ix, empty_stats_)) problems->push_back({"DRAIN", *d});
  }
}

void Run::check_image(std::span<const std::uint32_t> choice) {
  const Px86Model& model = sim_.model();
  const std::size_t n = std::max(model.extent(), img1_.dirty_end);
  if (!model.build_image(choice, img1_.data(), n)) {
    rep_.error = "could not build a crash image";
    return;
  }
  img1_.dirty_end = model.extent();
  ++rep_.images;
  cur_choice_.assign(choice.begin(), choice.end());
  const std::uint64_t seed = mix_seed(mix_seed(o_.seed, cur_point_), hash_choice(choice));
  image_failed_ = false;
  pending_second_.clear();

  // nested_ watches the image through recovery (second-crash points, lints after a crash)
  // and the continuation (lints, commit oracle); track1_ only records the written extent.
  track1_.watch(img1_.data(), img1_.size);
  nested_.watch(img1_.data(), img1_.size, model.extent(), gap_);
  nested_point_ = 0;
  TracerGuard restore(&nested_);
  std::vector<Problem> problems;
  recover_and_check(choice, seed, &problems);
  img1_.dirty_end = std::max({img1_.dirty_end, track1_.end(), nested_.model().extent()});
  img1_.clear_gap(gap_);
  report_image(format_choice(choice), problems);
}

//! The image in img1_ recovered and checked by the oracles, with the continuation after it;
//! what they find goes to `problems`. The pool and index are gone when this returns.
void Run::recover_and_check(std::span<const std::uint32_t> choice, std::uint64_t seed,
                            std::vector<Problem>* problems_out) {
  std::vector<Problem>& problems = *problems_out;
  std::unique_ptr<Pool> pool;
  std::unique_ptr<Index> ix;
  ImageWatch watch(replay_string(cur_point_, format_choice(choice)));
  try {
    recovering_ = true;
    const bool ok = recover(img1_, &pool, &ix, &problems);
    if (ok) nested_.acknowledge();  // lints, and a crash point at the end of recovery
    recovering_ = false;
    continuing_ = true;
    const AfterOp after_op = [&](const KvOp& op, Status want) {
      check_commits(&op, want, nested_.commits_in_op(),
                    "continuation after the crash [" + where() + ", crash point " +
                        std::to_string(cur_point_) + ", choice " + format_choice(choice) + "]",
                    replay_string(cur_point_, format_choice(choice)));
      nested_.acknowledge();
    };
    if (ok) oracles(*pool, *ix, expect(), true, seed, &problems, after_op);
    ix.reset();
    pool.reset();  // its clean-shutdown store is no crash point of this image either
  } catch (const std::bad_alloc&) {
    problems.push_back({"RECOVERY_HUNG", "memory budget of " +
                                             std::to_string(o_.memory_budget_mb) +
                                             " MiB exceeded (std::bad_alloc)"});
  }
  recovering_ = continuing_ = false;
}

//! check_image's findings: each problem of the image, or (none) the second crashes'
//! findings held back until the image itself checked clean.
void Run::report_image(const std::string& choice_str, std::vector<Problem>& problems) {
  // Before create returns, "no pool" or "no index" is a state the crash may leave.
  if (creating_ && !cur_at_ack_ && problems.size() == 1 && problems[0].kind == "RECOVERY_FAILED")
    problems.clear();
  for (const Problem& p : problems)
    add_finding(p.kind, op_tag(),
                p.detail + " [" + where() + ", crash point " + std::to_string(cur_point_) +
                    ", choice " + choice_str + "]",
                replay_string(cur_point_, choice_str));
  if (problems.empty()) {
    for (PendingSecond& p : pending_second_)
      add_finding(p.finding.kind, p.site, std::move(p.finding.detail), std::move(p.finding.replay));
  } else {
    rep_.suppressed += pending_second_.size();
  }
  if (!problems.empty() || image_failed_) ++rep_.failed_images;
}

void Run::on_nested_point(bool at_ack) {
  if (continuing_ || !(rp_.active ? rp_.nested : o_.second_crash)) return;
  const std::uint64_t q = nested_point_++;
  const auto limits = nested_.model().choice_limits();
  if (rp_.active) {
    if (!rp_.nested || q != rp_.rpoint) return;
    std::vector<std::uint32_t> choice;
    if (!resolve_choice(rp_.rchoice, limits, &choice)) {
      rep_.error = "replay recovery choice '" + rp_.rchoice + "' does not fit";
      return;
    }
    check_second(choice);
    return;
  }
  // A few of recovery's crash points: its first fences, then every power of two, and its end.
  if (!at_ack && q >= 4 && (q & (q - 1)) != 0) return;
  std::vector<std::uint32_t> choice(limits.size(), 0);
  check_second(choice);  // nothing extra
  if (std::any_of(limits.begin(), limits.end(), [](std::uint32_t l) { return l > 0; })) {
    std::mt19937_64 rng(mix_seed(mix_seed(o_.seed, cur_point_), q + 1));
    for (std::size_t i = 0; i < limits.size(); ++i)
      choice[i] = static_cast<std::uint32_t>(rng() % (limits[i] + 1u));
    check_second(choice);
  }
}

void Run::check_second(std::span<const std::uint32_t> choice) {
  const Px86Model& model = nested_.model();
  const std::size_t n = std::max(model.extent(), img2_.dirty_end);
  if (!model.build_image(choice, img2_.data(), n)) {
    rep_.error = "could not build a second crash image";
    return;
  }
  img2_.dirty_end = model.extent();
  ++rep_.images;
  const std::uint64_t q = nested_point_ - 1;
  track2_.watch(img2_.data(), img2_.size);
  TracerGuard restore(&track2_);
  std::vector<Problem> problems;
  {
    std::unique_ptr<Pool> pool;
    std::unique_ptr<Index> ix;
    ImageWatch watch(replay_string(cur_point_, format_choice(cur_choice_),
                                   "rpoint=" + std::to_string(nested_point_ - 1) +
                                       ",rchoice=" + format_choice(choice)));
    try {
      if (recover(img2_, &pool, &ix, &problems))
        oracles(*pool, *ix, expect(), false, 0, &problems);
    } catch (const std::bad_alloc&) {
      problems.push_back({"RECOVERY_HUNG", "memory budget exceeded (std::bad_alloc)"});
    }
    ix.reset();
    pool.reset();
  }
  img2_.dirty_end = std::max(img2_.dirty_end, track2_.end());
  img2_.clear_gap(gap_);
  if (creating_ && !cur_at_ack_ && problems.size() == 1 && problems[0].kind == "RECOVERY_FAILED")
    problems.clear();  // see check_image
  if (problems.empty()) return;
  image_failed_ = true;
  const std::string outer = format_choice(cur_choice_);
  const std::string inner = format_choice(choice);
  for (const Problem& p : problems)
    pending_second_.push_back(PendingSecond{
        op_tag() + ":" + p.kind,
        Finding{"SECOND_CRASH",
                p.kind + " after a crash at recovery point " + std::to_string(q) +
                    " (choice " + inner + ") of the image [" + where() + ", crash point " +
                    std::to_string(cur_point_) + ", choice " + outer + "]: " + p.detail,
                replay_string(cur_point_, outer,
                              "rpoint=" + std::to_string(q) + ",rchoice=" + inner)}});
}

}  // namespace

Report run_concurrent_kv(const Factory& f, std::span<const KvOp> setup,
                         std::span<const std::vector<KvOp>> threads, const Options& opts,
                         const ScheduleOptions& sched) {
  if (threads.empty() || threads.size() > kMaxThreads || opts.dirty_reads || opts.trace_create) {
    Report r;
    r.error = "run_concurrent_kv: 1.." + std::to_string(kMaxThreads) +
              " writer threads, without dirty_reads and trace_create";
    return r;
  }
  return run_isolated(opts, [&](int fd) {
    Run run(f, setup, threads, opts, sched, fd);
    return run.go();
  });
}

Report run_kv(const Factory& f, std::span<const KvOp> setup, std::span<const KvOp> ops,
              const Options& opts) {
  return run_isolated(opts, [&](int fd) {
    Run run(f, setup, ops, opts, fd);
    Report r = run.go();
    return r;
  });
}

}  // namespace wort::crashsim
