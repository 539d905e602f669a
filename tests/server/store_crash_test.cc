// tests/server/store_crash_test.cc — the crash simulator (src/crashsim) on the server's Store
// itself: every operation that writes the pool — set/add/replace/cas (and `ms I`'s stale
// rewrite), append/prepend, incr/decr, delete (and `md I`), touch/gat, flush_all now and
// delayed (and a delayed one coming due), the open's cas high-water-mark update, a cas batch
// bump, the first start's meta block and the expiry sweep — runs traced on a pool image in
// DRAM, with a crash point before every fence and at each acknowledgement. Each crash image
// (crashsim::select_images: every image of a point up to a cap, then structured and seeded
// random ones) is opened by Store::open (the server's recovery) and checked against a model
// of memcached's semantics:
//   - the image opens, verify() and the allocator audit are clean;
//   - every key reads as the acknowledged state, or (at a point inside an operation) as the
//     state before or wholly after the operation in flight: value, flags, exptime, cas and
//     the stale flag; a deleted, flushed or expired key stays gone (no other item's bytes);
//   - no cas is handed out twice: the next cas is above every cas a client was given, and a
//     set after the crash gets one;
//   - a pending delayed flush_all is kept (the meta block's flush_at).
// The lints (MISSING_FLUSH, MISSING_FENCE, UNTRACKED_STORE, STORE_AFTER_COMMIT,
// ASSUMED_DURABLE) run on every traced step. Cas values start just below 2^32 and exptimes
// are above it, so an 8-byte word torn into two 4-byte halves reads as neither value.
//
// Eviction runs on a small pool filled by a session that answers out of memory: a set of the
// size it is full of (CLOCK victims, unlinked then freed, a victim's block reused) and a set
// of a new size (a whole apart chunk evacuated, its items evicted, its last free a durable
// free span, carved for the new class; or, when the set replaces an item of that chunk, a
// free span after the set's commit). At a crash point inside an eviction step every key
// reads, on its own, as before or after the step: whole (its own value, flags, exptime and
// cas) or gone, never with another item's bytes; the audit after recovery finds no leak.
// tools/mutations/server.txt is the catalogue `make mutate` runs against this file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <unistd.h>
#include <vector>

#include "crashsim/simulator.h"
#include "pm/persist.h"
#include "pm/pool_layout.h"
#include "pm/tracer.h"
#include "server/item_layout.h"
#include "server/store.h"
#include "support/crash_findings.h"
#include "wort/index.h"
#include "wort/persist.h"
#include "wort/pool.h"

namespace wort::test {
namespace {

using server::Store;
using server::StoreMode;
using server::StoreResult;

constexpr std::size_t kPoolBytes = 1u << 20;  // asked for at creation (4 KiB chunks)
// The pool file's size (the header and the chunk table come on top of kPoolBytes): every
// image buffer's size.
std::size_t g_size = 0;
constexpr std::size_t kLine = 64;
// The first cas of the tests' pools (their setup session's): the setup's open commits
// cas_hwm = kCasBase + 65536 = 2^32 - 3, so the traced session hands out uniques across 2^32
// and its open's new mark crosses it too. A torn cas_hwm or flush_cas (low half new, high
// half old) then reads as a small number, not as either value.
constexpr std::uint64_t kCasBase = (1ull << 32) - 3 - server::kCasBatch;
// Absolute exptimes in the far future, with different high halves.
constexpr std::int64_t kFar1 = (std::int64_t{1} << 32) + 1000;
constexpr std::int64_t kFar2 = (std::int64_t{2} << 32) + 7;
constexpr std::int64_t kExpired = 1;  // absolute: long past

bool small_scale() {
  const char* s = std::getenv("WORT_TEST_SCALE");
  return s != nullptr && std::string(s) == "small";
}

struct Item {
  std::string value;
  std::uint32_t flags = 0;
  std::int64_t exptime = 0;
  std::uint64_t cas = 0;
  std::uint16_t iflags = 0;
  bool operator==(const Item&) const = default;
};
using Model = std::map<std::string, Item>;

std::string show(const Item& i) {
  const std::string v =
      i.value.size() <= 40 ? i.value
                           : i.value.substr(0, 16) + "...(" + std::to_string(i.value.size()) + " bytes)";
  return "'" + v + "' flags=" + std::to_string(i.flags) + " exp=" +
         std::to_string(i.exptime) + " cas=" + std::to_string(i.cas) +
         " iflags=" + std::to_string(i.iflags);
}
std::string show(const Model& m) {
  std::string s = "{";
  for (const auto& [k, v] : m) s += " " + k + "=" + show(v);
  return s + " }";
}

bool dead(std::int64_t exptime) { return exptime != 0 && exptime <= Store::now(); }

//! What a client has been told: the live items, the highest cas it saw, a pending delayed
//! flush. Each step applies memcached's semantics to it and checks the Store's answer.
struct Ctx {
  Model m;
  std::uint64_t max_cas = 0;
  std::int64_t pending_flush = 0;  // absolute time of a delayed flush_all, 0 = none
  std::set<std::string> keys;      // every key ever named (a gone one must stay gone)
  std::vector<std::string> errors;

  void fail(const std::string& s) { errors.push_back(s); }
  void saw(std::uint64_t cas) { max_cas = std::max(max_cas, cas); }
  void put(const std::string& k, Item it) {
    keys.insert(k);
    saw(it.cas);
    if (dead(it.exptime)) m.erase(k);
    else m[k] = std::move(it);
  }

  void store(Store& s, StoreMode mode, const std::string& k, const std::string& v,
             std::uint32_t flags, std::int64_t exptime, std::uint64_t cas_in = 0,
             bool stale_ok = false) {
    keys.insert(k);
    const auto it = m.find(k);
    const bool hit = it != m.end();
    StoreResult want = StoreResult::stored;
    bool stale = false;
    switch (mode) {
      case StoreMode::set: break;
      case StoreMode::add: want = hit ? StoreResult::not_stored : StoreResult::stored; break;
      case StoreMode::replace:
      case StoreMode::append:
      case StoreMode::prepend: want = hit ? StoreResult::stored : StoreResult::not_stored; break;
      case StoreMode::cas:
        if (!hit) want = StoreResult::not_found;
        else if (it->second.cas == cas_in) want = StoreResult::stored;
        else if (stale_ok && cas_in < it->second.cas) stale = true;
        else want = StoreResult::exists;
        break;
    }
    std::uint64_t cas = 0;
    const StoreResult r = s.store(mode, k, flags, exptime, v, cas_in, &cas, stale_ok);
    if (r != want) {
      fail("store(" + std::to_string(static_cast<int>(mode)) + ", " + k + ") returned " +
           std::to_string(static_cast<int>(r)) + ", want " + std::to_string(static_cast<int>(want)));
      return;
    }
    if (want != StoreResult::stored) return;
    Item n{v, flags, exptime, cas, 0};
    if (mode == StoreMode::append || mode == StoreMode::prepend) {
      const Item& o = it->second;
      n = Item{mode == StoreMode::append ? o.value + v : v + o.value, o.flags, o.exptime, cas,
               static_cast<std::uint16_t>(o.iflags & server::kItemKeyBinary)};
    } else if (stale) {
      n.exptime = it->second.exptime;
      n.iflags = server::kItemStale;
    }
    put(k, n);
  }
  void set(Store& s, const std::string& k, const std::string& v, std::uint32_t flags = 0,
           std::int64_t exptime = 0) {
    store(s, StoreMode::set, k, v, flags, exptime);
  }
  void remove(Store& s, const std::string& k) {
    const bool hit = m.count(k) != 0;
    const StoreResult r = s.remove(k);
    if (r != (hit ? StoreResult::stored : StoreResult::not_found)) fail("delete " + k);
    m.erase(k);
  }
  void delta(Store& s, const std::string& k, bool incr, std::uint64_t d) {
    const auto it = m.find(k);
    server::DeltaOut out;
    const server::DeltaResult r = s.delta(k, incr, d, &out);
    if (it == m.end()) {
      if (r != server::DeltaResult::not_found) fail("incr/decr of a missing " + k);
      return;
    }
    const std::uint64_t x0 = std::stoull(it->second.value);
    const std::uint64_t x = incr ? x0 + d : (d > x0 ? 0 : x0 - d);
    std::string text = std::to_string(x);
    if (text.size() < it->second.value.size()) text.append(it->second.value.size() - text.size(), ' ');
    if (r != server::DeltaResult::ok || out.value != x) {
      fail("incr/decr " + k + " returned " + std::to_string(out.value) + ", want " + std::to_string(x));
      return;
    }
    Item n = it->second;
    n.value = text;
    n.cas = out.cas;
    put(k, n);
  }
  void touch(Store& s, const std::string& k, std::int64_t e) {
    const auto it = m.find(k);
    if (s.touch(k, e) != (it != m.end())) fail("touch " + k);
    if (it == m.end()) return;
    Item n = it->second;
    n.exptime = e;
    put(k, n);
  }
  void gat(Store& s, const std::string& k, std::int64_t e) {
    const auto it = m.find(k);
    Item got;
    const bool hit = s.get(
        k, [&](const server::ItemView& iv) {
          got = Item{std::string(iv.value), iv.flags, iv.exptime, iv.cas, iv.iflags};
        },
        &e);
    if (hit != (it != m.end())) fail("gat " + k);
    if (it == m.end()) return;
    Item n = it->second;
    n.exptime = e;
    if (got != n) fail("gat " + k + " read " + show(got) + ", want " + show(n));
    put(k, n);
  }
  //! md I: the item replaced by a stale copy with a new cas (and exptime ttl).
  void invalidate(Store& s, const std::string& k, std::int64_t ttl) {
    const auto it = m.find(k);
    const StoreResult r = s.meta_delete(k, false, 0, true, &ttl);
    if (r != (it != m.end() ? StoreResult::stored : StoreResult::not_found)) fail("md I " + k);
    if (it == m.end()) return;
    Item n = it->second;
    n.exptime = ttl;
    n.iflags |= server::kItemStale;
    // The new cas is not returned: read it back (a read, no pool write).
    s.get(k, [&](const server::ItemView& iv) { n.cas = iv.cas; });
    if (n.cas <= max_cas) fail("md I " + k + ": cas not new");
    put(k, n);
  }
  void flush_all(Store& s, std::int64_t at) {
    s.flush_all(at);
    if (at == 0 || at <= Store::now()) {
      m.clear();
      pending_flush = 0;
    } else {
      pending_flush = at;
    }
  }
  //! A set that evicts: afterwards every key the index no longer names is gone from
  //! the model (an index lookup: no pool write, no access bit). `chunk`: the set is of a new
  //! size class, so the items of a whole chunk are evicted (evict_chunk, an evacuation), not
  //! CLOCK victims of the set's own class; its item lands in the evacuated chunk's space.
  //! `must`: the set has to evict (else it may).
  void set_evicting(Store& s, const std::string& k, const std::string& v, bool chunk,
                    bool must = true) {
    const std::uint64_t ev0 = s.evictions();
    std::size_t other_class = 0;  // items of another class than the set's before it
    if (chunk)
      for (const auto& [key, it] : m)
        if (it.value.size() != v.size()) ++other_class;
    set(s, k, v, 9, kFar2);
    std::size_t gone = 0, gone_other = 0;
    for (auto it = m.begin(); it != m.end();) {
      if (!s.index().lookup(as_key(it->first))) {
        ++gone;
        gone_other += it->second.value.size() != v.size();
        it = m.erase(it);
      } else {
        ++it;
      }
    }
    if ((must && gone == 0) || s.evictions() - ev0 != gone)
      fail("set " + k + " evicted " + std::to_string(gone) + " item(s), the store counts " +
           std::to_string(s.evictions() - ev0));
    if (chunk && (gone_other == 0 || gone_other == other_class))
      fail("set " + k + " of a new size evicted " + std::to_string(gone_other) + " of " +
           std::to_string(other_class) + " items of the other class (want one chunk's)");
  }
  void sweep(Store& s, std::size_t want) {
    const std::size_t n = s.sweep(1000);
    if (n != want) fail("sweep reclaimed " + std::to_string(n) + ", want " + std::to_string(want));
  }
};

using StepFn = std::function<void(Store&, Ctx&)>;
struct Step {
  std::string name;
  StepFn fn;
};

struct AlignedFree {
  void operator()(std::byte* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<std::byte, AlignedFree>;
Buffer new_buffer() {
  Buffer b(static_cast<std::byte*>(std::aligned_alloc(kLine, (g_size + kLine - 1) & ~(kLine - 1))));
  std::memset(b.get(), 0, g_size);
  return b;
}

std::size_t used_extent(const std::byte* p) {
  std::size_t end = g_size;
  while (end > 0 && p[end - 1] == std::byte{0}) --end;
  return std::min(g_size, (end + kLine - 1) & ~(kLine - 1));
}

//! The process-wide persistence mode is `trace` for a run (no flush instructions on DRAM).
class TraceMode {
 public:
  TraceMode() : saved_(pm::config()) {
    pm::Config c = saved_;
    c.mode = pm::Mode::trace;
    (void)pm::configure(c);
  }
  ~TraceMode() { (void)pm::configure(saved_); }

 private:
  pm::Config saved_;
};

server::MetaBlock* meta_of(const Store& s) {
  const auto off = s.index().lookup(as_key(server::kMetaKey));
  return off ? s.pool().at<server::MetaBlock>(*off) : nullptr;
}

struct Config {
  std::string kind = "wort";
  std::uint64_t pool_bytes = kPoolBytes;
  //! The setup's session answers out of memory instead of evicting (`-M`): a fill stops
  //! at a full pool, and the traced part's first set must evict.
  bool setup_no_evict = false;
  //! A step evicts items it does not name: at a crash point inside it, each key reads as
  //! before or after the step on its own (an eviction is no atomic group), still whole.
  bool per_key = false;
  bool global_lock = false;
  std::uint64_t cas_base = kCasBase;
  //! How the pool looks before the traced part: `pool` is a freshly created server pool
  //! (cas_hwm set to kCasBase), `setup` runs on it in an untraced session.
  StepFn setup;
  //! Changes the closed pool image before the traced open (a state a crash or a stop can
  //! leave, written as the server writes it).
  std::function<void(std::byte* pool, Ctx&)> patch;
  //! False: the traced part starts after an untraced open and `warmup` (the open itself
  //! is then not crash-tested).
  bool trace_open = true;
  StepFn warmup;
  //! An index created but no meta block yet (a first start killed before init_meta).
  bool half_initialised = false;
  std::vector<Step> steps;
};

struct Outcome {
  std::size_t crash_points = 0, images = 0;
  std::vector<std::string> findings;  // correctness findings and lints
  std::vector<std::string> perf;      // REDUNDANT_FLUSH / REDUNDANT_FENCE
  std::vector<std::string> expected;  // lints that are no durability finding (see go())
  std::string summary() const {
    std::string s = std::to_string(crash_points) + " crash points, " + std::to_string(images) +
                    " images, " + std::to_string(findings.size()) + " findings";
    for (std::size_t i = 0; i < findings.size() && i < 6; ++i) s += "\n  " + findings[i];
    return s;
  }
};

std::string temp_pool_path() {
  static int n = 0;
  return (std::filesystem::temp_directory_path() /
          ("wort-store-crash-" + std::to_string(getpid()) + "-" + std::to_string(n++) + ".pool"))
      .string();
}

//! A fresh server pool of kPoolBytes in a buffer (created as a file, then read in).
Buffer fresh_pool(const Config& c) {
  const std::string path = temp_pool_path();
  if (c.half_initialised) {
    PoolOptions po;
    po.size = c.pool_bytes;
    po.kind = c.kind;
    po.values_are_blocks = true;
    auto p = Pool::create(path, po);
    if (!p) return nullptr;
    auto ix = Index::create(**p, c.kind);
    if (!ix) return nullptr;
  } else {
    server::StoreOptions so;
    so.pool_path = path;
    so.kind = c.kind;
    so.pool_bytes = c.pool_bytes;
    auto s = Store::open(so);
    if (!s) return nullptr;
  }
  g_size = static_cast<std::size_t>(std::filesystem::file_size(path));
  Buffer b = new_buffer();
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(b.get()), static_cast<std::streamsize>(g_size));
  const bool ok = in.gcount() == static_cast<std::streamsize>(g_size);
  std::filesystem::remove(path);
  return ok ? std::move(b) : nullptr;
}

//! The thread's tracer during the traced part: forwards every event to the simulator and
//! records the blocks freed during the current step (a lint about a line of a block the
//! step freed, never published, is no durability finding: see the lint handler).
class Forward final : public pm::Tracer {
 public:
  Forward(crashsim::Simulator& s, const std::byte* base) : s_(s), base_(base) {}
  std::vector<std::pair<std::size_t, std::size_t>> freed;  // (offset, bytes), this step

  void on_store(void* d, const void* src, std::size_t n) override { s_.on_store(d, src, n); }
  void on_volatile_store(void* d, const void* src, std::size_t n) override {
    s_.on_volatile_store(d, src, n);
  }
  void on_before_cas(void* d) override { s_.on_before_cas(d); }
  void on_nt_store(void* d, std::uint64_t v) override { s_.on_nt_store(d, v); }
  void on_flush(const void* a, std::size_t n) override { s_.on_flush(a, n); }
  void on_fence() override { s_.on_fence(); }
  void on_commit(void* d, std::size_t n, bool shares) override { s_.on_commit(d, n, shares); }
  void on_alloc(void* p, std::size_t n) override { s_.on_alloc(p, n); }
  void on_assume_durable(void* p, std::size_t n) override { s_.on_assume_durable(p, n); }
  void on_free(void* p, std::size_t n) override {
    freed.emplace_back(static_cast<std::size_t>(static_cast<const std::byte*>(p) - base_), n);
    s_.on_free(p, n);
  }
  bool allows_solo_writes() const noexcept override { return s_.allows_solo_writes(); }
  //! The 64-byte line at `line` overlaps a block freed in this step.
  bool line_freed(std::size_t line) const {
    for (const auto& [o, n] : freed)
      if (line < o + n && o < line + kLine) return true;
    return false;
  }

 private:
  crashsim::Simulator& s_;
  const std::byte* base_;
};

server::StoreOptions image_options(const Config& c, std::byte* image, bool no_evict = false) {
  server::StoreOptions so;
  so.no_evict = no_evict;
  so.pool_path = "pool image";
  so.kind = c.kind;
  so.image = std::span<std::byte>(image, g_size);
  so.global_lock = c.global_lock;
  return so;
}

class Run {
 public:
  explicit Run(const Config& c) : c_(c) {
    cap_ = small_scale() ? 32 : 64;
    random_ = small_scale() ? 4 : 8;
    pairs_ = small_scale() ? 16 : 32;
  }

  Outcome go() {
    TraceMode mode;
    Buffer live = fresh_pool(c_);
    if (!live) {
      out_.findings.push_back("SETUP: cannot create the pool");
      return out_;
    }
    if (!c_.half_initialised) {
      // The pool's cas uniques start just below 2^32 (a session hands them out from here).
      {
        auto s = Store::open(image_options(c_, live.get()));
        if (!s) return setup_failed(s.error().message);
        pm::store(&meta_of(**s)->cas_hwm, c_.cas_base);
      }
      if (c_.setup) {
        auto s = Store::open(image_options(c_, live.get(), c_.setup_no_evict));
        if (!s) return setup_failed(s.error().message);
        c_.setup(**s, ctx_);
        if (!ctx_.errors.empty()) return setup_failed(ctx_.errors.front());
      }
    }
    if (c_.patch) c_.patch(live.get(), ctx_);
    img_ = new_buffer();
    // The expected state after each step: a dry run on a copy (the Store is deterministic
    // given its pool: the same cas uniques, the same answers), so that a crash point inside
    // a step knows the state the step will leave.
    if (!dry_run(live.get())) return out_;

    std::unique_ptr<Store> store;
    if (!c_.trace_open) {
      auto s = Store::open(image_options(c_, live.get()));
      if (!s) return setup_failed(s.error().message);
      store = std::move(s).value();
      if (c_.warmup) c_.warmup(*store, ctx_);
      if (!ctx_.errors.empty()) return setup_failed(ctx_.errors.front());
    }
    before_ = ctx_;

    crashsim::Simulator sim;
    sim_ = &sim;
    sim.watch(live.get(), g_size, used_extent(live.get()));
    sim.set_point_handler([this](bool at_ack) { on_point(at_ack); });
    Forward fwd(sim, live.get());
    fwd_ = &fwd;
    const std::uint64_t chunks_at =
        reinterpret_cast<const pm::PoolHeader*>(live.get())->first_chunk_offset;
    sim.set_lint_handler([this, chunks_at](crashsim::Lint l, std::size_t off, std::uintptr_t,
                                           const std::string& d) {
      std::string f = std::string(crashsim::lint_name(l)) + " at pool offset " +
                      std::to_string(off) + " in " + step_name() + ": " + d;
      if (l == crashsim::Lint::redundant_flush || l == crashsim::Lint::redundant_fence) {
        out_.perf.push_back(std::move(f));
      } else if (l == crashsim::Lint::missing_fence && step_ >= 0 && after_.m == before_.m &&
                 d.rfind("1 line(s)", 0) == 0 && fwd_->line_freed(off)) {
        // A store that fails its check (add of a present key, cas mismatch, ...) built and
        // wrote back its item first, then freed the block unpublished: the write-back of a
        // block nobody names orders nothing (a neighbour's bytes in its first line are
        // durable since their own commit). Only in a step that changed no item.
        out_.expected.push_back(std::move(f));
      } else if (l == crashsim::Lint::store_after_commit && off < chunks_at) {
        // Chunk-table entries after the operation's last commit, persisted by the
        // allocator's own protocol (tests/pm/allocator_crash_test.cc) for blocks no one
        // names: the open's ballast, carved after its cas high-water mark; an evacuated
        // chunk's free span, written by the free of its last item after the commit that
        // unlinked or replaced it (a missing write-back or fence of it is MISSING_FLUSH /
        // MISSING_FENCE, still findings).
        out_.expected.push_back(std::move(f));
      } else {
        out_.findings.push_back(std::move(f));
      }
    });
    pm::Tracer* prev = pm::set_tracer(&fwd);
    step_ = -1;
    if (c_.trace_open) {
      after_ = afters_.at(0);
      auto s = Store::open(image_options(c_, live.get()));
      if (!s) {
        pm::set_tracer(prev);
        return setup_failed("traced open: " + s.error().message);
      }
      store = std::move(s).value();
      sim.acknowledge();
      before_ = after_;
    }
    Ctx live_ctx = before_;
    for (std::size_t i = 0; i < c_.steps.size(); ++i) {
      step_ = static_cast<int>(i);
      after_ = afters_.at(i + 1);
      fwd.freed.clear();
      c_.steps[i].fn(*store, live_ctx);
      if (live_ctx.m != after_.m || live_ctx.max_cas != after_.max_cas)
        out_.findings.push_back("LIVE: " + c_.steps[i].name + " left " + show(live_ctx.m) +
                                ", the dry run " + show(after_.m));
      sim.acknowledge();
      before_ = after_;
    }
    pm::set_tracer(prev);
    for (const auto& e : live_ctx.errors) out_.findings.push_back("LIVE: " + e);
    store.reset();
    return out_;
  }

 private:
  Outcome setup_failed(const std::string& why) {
    out_.findings.push_back("SETUP: " + why);
    return out_;
  }
  std::string step_name() const {
    return step_ < 0 ? std::string("the open") : c_.steps[static_cast<std::size_t>(step_)].name;
  }

  bool dry_run(const std::byte* live) {
    Buffer copy = new_buffer();
    std::memcpy(copy.get(), live, g_size);
    Ctx ctx = ctx_;
    auto o = Store::open(image_options(c_, copy.get()));
    if (!o) {
      out_.findings.push_back("SETUP: dry open: " + o.error().message);
      return false;
    }
    Store& s = **o;
    if (!c_.trace_open && c_.warmup) c_.warmup(s, ctx);
    afters_.assign(1, ctx);  // after the open (and the warm-up)
    for (const Step& st : c_.steps) {
      st.fn(s, ctx);
      afters_.push_back(ctx);
    }
    for (const auto& e : ctx.errors) out_.findings.push_back("LIVE (dry run): " + e);
    return true;
  }

  void on_point(bool at_ack) {
    ++out_.crash_points;
    const auto limits = sim_->model().choice_limits();
    crashsim::select_images(limits, cap_, random_, crashsim::mix_seed(7, out_.crash_points),
                            [&](std::span<const std::uint32_t> ch) { check_image(ch, at_ack); },
                            pairs_);
  }

  void check_image(std::span<const std::uint32_t> choice, bool at_ack) {
    if (!sim_->model().build_image(choice, img_.get(), g_size)) {
      out_.findings.push_back("could not build a crash image");
      return;
    }
    ++out_.images;
    pm::Tracer* prev = pm::set_tracer(nullptr);  // recovery writes the image, not the pool
    const std::string problem = check_recovered(at_ack);
    pm::set_tracer(prev);
    test::add_image_finding(out_.findings, problem, out_.crash_points, at_ack, step_name(),
                            choice);
  }

  std::string check_recovered(bool at_ack) {
    auto opened = Store::open(image_options(c_, img_.get()));
    if (!opened) return "RECOVERY_FAILED: " + opened.error().message;
    Store& s = **opened;
    // No cas handed out twice: the next one is above every cas a client has seen.
    const std::uint64_t seen = at_ack ? after_.max_cas : before_.max_cas;
    if (s.next_cas_peek() <= seen)
      return "CAS_REUSED: the next cas is " + std::to_string(s.next_cas_peek()) +
             ", a client has seen " + std::to_string(seen);
    // A pending delayed flush is kept (a due one may have been applied at the open).
    const server::MetaBlock* meta = meta_of(s);
    if (meta == nullptr) return "NO_META: the meta block is gone";
    const std::int64_t fa = meta->flush_at;
    // (A flush_at already due where none is pending is the same state: the next access
    // applies it.)
    const bool fa_ok = fa == after_.pending_flush || (!at_ack && fa == before_.pending_flush) ||
                       (after_.pending_flush == 0 && fa != 0 && fa <= Store::now());
    if (!fa_ok)
      return "FLUSH_AT: flush_at is " + std::to_string(fa) + ", want " +
             std::to_string(after_.pending_flush) +
             (at_ack ? "" : " or " + std::to_string(before_.pending_flush));
    if (auto v = s.verify(); !v) return "VERIFY: " + v.error().message;
    Model got;
    std::set<std::string> keys = after_.keys;
    keys.insert(before_.keys.begin(), before_.keys.end());
    for (const std::string& k : keys)
      s.get(k, [&](const server::ItemView& iv) {
        got[k] = Item{std::string(iv.value), iv.flags, iv.exptime, iv.cas, iv.iflags};
      });
    if (c_.per_key && !at_ack) {
      for (const std::string& k : keys) {
        auto find = [&](const Model& m) -> const Item* {
          const auto it = m.find(k);
          return it == m.end() ? nullptr : &it->second;
        };
        const Item *g = find(got), *a = find(after_.m), *b = find(before_.m);
        auto same = [](const Item* x, const Item* y) { return x ? y && *x == *y : !y; };
        if (!same(g, a) && !same(g, b))
          return "CONTENTS: " + k + " reads as " + (g ? show(*g) : "gone") + ", want " +
                 (a ? show(*a) : "gone") + " or " + (b ? show(*b) : "gone");
      }
    } else if (got != after_.m && (at_ack || got != before_.m))
      return "CONTENTS: the image holds " + show(got) + ", want " + show(after_.m) +
             (at_ack ? "" : " or " + show(before_.m));
    if (auto a = s.audit(); !a.ok()) return "AUDIT: " + a.describe();
    // Continuation: a set after the crash gets a new cas and reads back.
    std::uint64_t cas = 0;
    if (s.store(StoreMode::set, "after-crash", 3, kFar1, "continued", 0, &cas) !=
        StoreResult::stored)
      return "CONTINUATION: a set after the crash failed";
    if (cas <= seen) return "CAS_REUSED: a set after the crash got cas " + std::to_string(cas);
    bool back = false;
    s.get("after-crash", [&](const server::ItemView& iv) { back = iv.value == "continued"; });
    if (!back) return "CONTINUATION: the set after the crash does not read back";
    if (auto a = s.audit(); !a.ok()) return "AUDIT after the continuation: " + a.describe();
    return {};
  }

  Config c_;
  Ctx ctx_;
  Ctx before_, after_;
  std::vector<Ctx> afters_;
  Buffer img_;
  crashsim::Simulator* sim_ = nullptr;
  Forward* fwd_ = nullptr;
  int step_ = -1;
  std::size_t cap_ = 12, random_ = 2, pairs_ = 6;
  Outcome out_;
};


Outcome run(const Config& c) {
  Run r(c);
  Outcome o = r.go();
  std::printf("[serve store crash %s%s] %s\n", c.kind.c_str(), c.global_lock ? " global-lock" : "",
              o.summary().c_str());
  for (std::size_t i = 0; i < o.perf.size() && i < 3; ++i) std::printf("  (perf) %s\n", o.perf[i].c_str());
  for (std::size_t i = 0; i < o.expected.size() && i < 3; ++i)
    std::printf("  (expected) %s\n", o.expected[i].c_str());
  return o;
}

#define EXPECT_STORE_CLEAN(outcome)                                   \
  do {                                                                \
    const Outcome& o_ = (outcome);                                    \
    EXPECT_TRUE(o_.findings.empty()) << o_.summary();                 \
    EXPECT_GT(o_.images, 0u) << "no crash state was explored";        \
  } while (0)

// The index kinds: a trie with its own concurrency (wort) and a B+-tree (fastfair).
const char* const kKinds[] = {"wort", "fastfair"};

Step step(std::string name, StepFn fn) { return Step{std::move(name), std::move(fn)}; }

void three_items(Store& s, Ctx& c) {
  c.set(s, "alpha", "one", 11, kFar1);
  c.set(s, "beta", "22", 12, 0);
  c.set(s, "gamma", std::string(90, 'g'), 13, kFar2);
}

// The open's meta update: a restart commits cas_hwm + 65536 before handing out a cas. Then
// sets, an overwrite and a delete: none of them may get a cas a client saw before the crash.
TEST(ServeStoreCrash, OpenCommitsTheCasHighWaterMark) {
  for (const char* kind : kKinds) {
    Config c;
    c.kind = kind;
    c.setup = three_items;
    c.steps = {step("set delta", [](Store& s, Ctx& x) { x.set(s, "delta", "four", 4, kFar1); }),
               step("set alpha", [](Store& s, Ctx& x) { x.set(s, "alpha", "uno", 5, 0); }),
               step("delete beta", [](Store& s, Ctx& x) { x.remove(s, "beta"); })};
    EXPECT_STORE_CLEAN(run(c));
  }
}

// A cas batch runs out inside a session: take_cas commits the next high-water mark before
// the first cas of the new batch is used (the warm-up spends the open's batch, untraced).
// One batch lower than the others: the warm-up session's open commits 2^32 - 3, and the
// bump crosses 2^32.
TEST(ServeStoreCrash, CasBatchBump) {
  Config c;
  c.cas_base = kCasBase - server::kCasBatch;
  c.setup = three_items;
  c.trace_open = false;
  c.warmup = [](Store& s, Ctx& x) {
    std::uint64_t cas = 0;
    const std::uint64_t last = s.next_cas_peek() + server::kCasBatch - 1;  // of the batch
    while (s.next_cas_peek() < last)
      s.store(StoreMode::set, "warm", 0, 0, "w", 0, &cas);
    x.put("warm", Item{"w", 0, 0, cas, 0});
  };
  c.steps = {step("set a (last cas of the batch)", [](Store& s, Ctx& x) { x.set(s, "a", "1"); }),
             step("set b (first of the next)", [](Store& s, Ctx& x) { x.set(s, "b", "2"); }),
             step("delete b", [](Store& s, Ctx& x) { x.remove(s, "b"); })};
  EXPECT_STORE_CLEAN(run(c));
}

// set / add / replace / cas, hits and misses, and ms I's stale rewrite (a cas lower than the
// item's stores the value marked stale with the old exptime, rewritten before the commit).
TEST(ServeStoreCrash, SetAddReplaceCas) {
  for (const char* kind : kKinds) {
    Config c;
    c.kind = kind;
    c.setup = three_items;
    c.steps = {
        step("add epsilon", [](Store& s, Ctx& x) { x.store(s, StoreMode::add, "epsilon", "5", 1, kFar2); }),
        step("add alpha (present)", [](Store& s, Ctx& x) { x.store(s, StoreMode::add, "alpha", "no", 1, 0); }),
        step("replace gamma", [](Store& s, Ctx& x) { x.store(s, StoreMode::replace, "gamma", "G", 2, kFar1); }),
        step("replace zeta (missing)", [](Store& s, Ctx& x) { x.store(s, StoreMode::replace, "zeta", "z", 2, 0); }),
        step("cas alpha (match)", [](Store& s, Ctx& x) {
          x.store(s, StoreMode::cas, "alpha", "cas-won", 3, kFar2, x.m.at("alpha").cas);
        }),
        step("cas beta (mismatch)", [](Store& s, Ctx& x) {
          x.store(s, StoreMode::cas, "beta", "cas-lost", 3, 0, x.m.at("beta").cas + 1);
        }),
        step("ms I beta (lower cas: stale)", [](Store& s, Ctx& x) {
          x.store(s, StoreMode::cas, "beta", "stale-value", 9, kFar1, x.m.at("beta").cas - 1, true);
        })};
    EXPECT_STORE_CLEAN(run(c));
  }
}

TEST(ServeStoreCrash, AppendPrepend) {
  for (const char* kind : kKinds) {
    Config c;
    c.kind = kind;
    c.setup = three_items;
    c.steps = {step("append alpha", [](Store& s, Ctx& x) { x.store(s, StoreMode::append, "alpha", "+tail", 0, 0); }),
               step("prepend gamma", [](Store& s, Ctx& x) { x.store(s, StoreMode::prepend, "gamma", "head+", 0, 0); }),
               step("append eta (missing)", [](Store& s, Ctx& x) { x.store(s, StoreMode::append, "eta", "x", 0, 0); })};
    EXPECT_STORE_CLEAN(run(c));
  }
}

TEST(ServeStoreCrash, IncrDecr) {
  for (const char* kind : kKinds) {
    Config c;
    c.kind = kind;
    c.setup = three_items;  // beta = "22"
    c.steps = {step("incr beta 5", [](Store& s, Ctx& x) { x.delta(s, "beta", true, 5); }),
               step("decr beta 20 (shorter: padded)", [](Store& s, Ctx& x) { x.delta(s, "beta", false, 20); }),
               step("incr theta (missing)", [](Store& s, Ctx& x) { x.delta(s, "theta", true, 1); })};
    EXPECT_STORE_CLEAN(run(c));
  }
}

// delete and md I (a stale copy with a new cas and exptime).
TEST(ServeStoreCrash, DeleteAndInvalidate) {
  for (const char* kind : kKinds) {
    Config c;
    c.kind = kind;
    c.setup = three_items;
    c.steps = {step("delete alpha", [](Store& s, Ctx& x) { x.remove(s, "alpha"); }),
               step("md I gamma", [](Store& s, Ctx& x) { x.invalidate(s, "gamma", kFar2); }),
               step("set alpha again", [](Store& s, Ctx& x) { x.set(s, "alpha", "again", 1, 0); }),
               step("delete iota (missing)", [](Store& s, Ctx& x) { x.remove(s, "iota"); })};
    EXPECT_STORE_CLEAN(run(c));
  }
}

// touch and gat rewrite an item's exptime in place: a non-temporal commit with a concurrent
// index, pm::commit under the global lock. Exptimes differ in both halves.
TEST(ServeStoreCrash, TouchAndGat) {
  for (bool global : {false, true}) {
    Config c;
    c.global_lock = global;
    c.setup = three_items;
    c.steps = {step("touch alpha", [](Store& s, Ctx& x) { x.touch(s, "alpha", kFar2); }),
               step("gat gamma", [](Store& s, Ctx& x) { x.gat(s, "gamma", kFar1); }),
               step("touch beta (never -> far)", [](Store& s, Ctx& x) { x.touch(s, "beta", kFar1); }),
               step("touch kappa (missing)", [](Store& s, Ctx& x) { x.touch(s, "kappa", kFar1); })};
    EXPECT_STORE_CLEAN(run(c));
  }
  Config c;
  c.kind = "fastfair";
  c.setup = three_items;
  c.steps = {step("touch alpha", [](Store& s, Ctx& x) { x.touch(s, "alpha", kFar2); })};
  EXPECT_STORE_CLEAN(run(c));
}

// flush_all now: every item stored before it is gone for good; a new set after it stays.
// Then a delayed flush (kept across a crash), cancelled by another flush_all now (which
// clears flush_at too). The first flush's cas is 2^32 - 3, the second's 2^32: a torn second
// flush_cas (0) would bring back what the first one flushed.
TEST(ServeStoreCrash, FlushAllNowAndDelayed) {
  for (const char* kind : kKinds) {
    Config c;
    c.kind = kind;
    c.setup = three_items;
    c.steps = {step("flush_all", [](Store& s, Ctx& x) { x.flush_all(s, 0); }),
               step("set lambda", [](Store& s, Ctx& x) { x.set(s, "lambda", "after", 1, 0); }),
               step("flush_all far", [](Store& s, Ctx& x) { x.flush_all(s, kFar2); }),
               step("set mu", [](Store& s, Ctx& x) { x.set(s, "mu", "m", 1, 0); }),
               step("flush_all (a delayed one pending)", [](Store& s, Ctx& x) { x.flush_all(s, 0); }),
               step("set nu", [](Store& s, Ctx& x) { x.set(s, "nu", "n", 1, 0); })};
    EXPECT_STORE_CLEAN(run(c));
  }
}

// A delayed flush_all that came due while the server was down (its flush_at in the past):
// the first access applies it (flush_cas, then flush_at = 0). The flushed items never
// come back, whatever the crash.
TEST(ServeStoreCrash, DueDelayedFlushApplied) {
  for (const char* kind : kKinds) {
    Config c;
    c.kind = kind;
    c.setup = [](Store& s, Ctx& x) {
      three_items(s, x);
      x.flush_all(s, kFar1);  // pending
    };
    c.patch = [](std::byte* pool, Ctx& x) {
      // What the pool holds once kFar1 has passed: the flush is due (written as the
      // server writes meta words; the image is closed and untraced). Its items are dead.
      auto o = Store::open(image_options(Config{}, pool));
      ASSERT_TRUE(o) << o.error().message;
      pm::store(&meta_of(**o)->flush_at, Store::now() - 5);
      x.m.clear();
      x.pending_flush = 0;
    };
    c.steps = {step("get alpha (applies the due flush)", [](Store& s, Ctx& x) {
                 if (s.get("alpha", [](const server::ItemView&) {})) x.fail("alpha survived");
               }),
               step("set xi", [](Store& s, Ctx& x) { x.set(s, "xi", "x", 1, 0); })};
    EXPECT_STORE_CLEAN(run(c));
  }
}

// The expiry sweep unlinks expired items and frees their blocks; sets after it reuse them.
// An expired key never comes back, with its bytes or another item's.
TEST(ServeStoreCrash, ExpirySweep) {
  for (const char* kind : kKinds) {
    Config c;
    c.kind = kind;
    c.setup = [](Store& s, Ctx& x) {
      three_items(s, x);
      x.set(s, "omicron", std::string(40, 'o'), 1, kExpired);  // stored already expired
      x.set(s, "pi", std::string(40, 'p'), 1, kExpired);
      x.touch(s, "alpha", kExpired);                          // expires by touch
    };
    c.steps = {step("sweep", [](Store& s, Ctx& x) { x.sweep(s, 3); }),
               step("set rho", [](Store& s, Ctx& x) { x.set(s, "rho", std::string(40, 'r'), 1, 0); }),
               step("set sigma", [](Store& s, Ctx& x) { x.set(s, "sigma", std::string(40, 's'), 1, 0); })};
    EXPECT_STORE_CLEAN(run(c));
  }
}

// Eviction: a small pool filled with items of one size by a session that answers out of
// memory instead of evicting (-M), then sets in a session that evicts. Every key reads whole
// (its own value, flags, exptime and cas) or gone; a key the set did not evict keeps its
// value; the audit after recovery finds no leaked block.
constexpr std::uint64_t kEvictPoolBytes = 96u << 10;
void fill(Store& s, Ctx& x, std::size_t vbytes) {
  std::size_t n = 0;
  for (int i = 0; i < 4096; ++i) {
    char k[16];
    std::snprintf(k, sizeof k, "fill%04d", i);
    std::string v = k;
    v.resize(vbytes, static_cast<char>('a' + i % 26));
    const std::int64_t e = i % 2 ? kFar1 : 0;
    std::uint64_t cas = 0;
    const StoreResult r = s.store(StoreMode::set, k, static_cast<std::uint32_t>(i), e, v, 0, &cas);
    if (r == StoreResult::no_memory) break;
    if (r != StoreResult::stored) return x.fail(std::string("fill: set ") + k + " failed");
    x.put(k, Item{v, static_cast<std::uint32_t>(i), e, cas, 0});
    ++n;
  }
  if (n < 16 || n == 4096) x.fail("fill stored " + std::to_string(n) + " items");
}

// A set of the size the pool is full of: CLOCK victims of its class (evict_some, a batch
// ahead), each unlinked (the index's remove durable) before its block is freed. The next
// set of that size takes a victim's block: the evicted key must not come back with its
// bytes.
TEST(ServeStoreCrash, EvictionSameSize) {
  for (const char* kind : kKinds) {
    for (bool global : {false, true}) {
      if (global && std::string(kind) != "wort") continue;  // (fastfair: the lock path only)
      Config c;
      c.kind = kind;
      c.global_lock = global;
      c.pool_bytes = kEvictPoolBytes;
      c.setup_no_evict = true;
      c.per_key = true;
      c.setup = [](Store& s, Ctx& x) { fill(s, x, 200); };
      c.steps = {step("set (evicts)", [](Store& s, Ctx& x) {
                   x.set_evicting(s, "evict-a", std::string(200, 'E'), false);
                 }),
                 step("set (a victim's block)", [](Store& s, Ctx& x) {
                   x.set_evicting(s, "evict-b", std::string(200, 'F'), false, false);
                 })};
      EXPECT_STORE_CLEAN(run(c));
    }
  }
}

// A set of a new size in a pool full of another: no block of its class to evict, so the
// items of one whole apart chunk are (evict_chunk): the chunk is evacuated, its items
// unlinked and freed, and its last free makes it a free span durably (the chunk-table
// entry written back and fenced); the set's item is carved from it. The audit after
// recovery: every block of the chunk free or live, none leaked.
TEST(ServeStoreCrash, EvictionNewSizeEvacuatesAChunk) {
  for (const char* kind : kKinds) {
    for (bool global : {false, true}) {
      if (global && std::string(kind) != "wort") continue;
      Config c;
      c.kind = kind;
      c.global_lock = global;
      c.pool_bytes = kEvictPoolBytes;
      c.setup_no_evict = true;
      c.per_key = true;
      c.setup = [](Store& s, Ctx& x) { fill(s, x, 200); };
      c.steps = {step("set of a new size (evacuates a chunk)", [](Store& s, Ctx& x) {
                   x.set_evicting(s, "evict-big", std::string(1500, 'B'), true);
                 }),
                 step("set of the new size again", [](Store& s, Ctx& x) {
                   x.set_evicting(s, "evict-big2", std::string(1500, 'C'), false, false);
                 })};
      EXPECT_STORE_CLEAN(run(c));
    }
  }
}

// The fill key whose item lies in the apart chunk evict_chunk picks for a new size: the one
// with the fewest live blocks, the lowest of those.
std::string key_in_cheapest_chunk(Store& s, const Ctx& x) {
  const pm::PoolHeader& ph = s.pool().header();
  const pm::Allocator& a = s.pool().allocator();
  std::uint64_t best = UINT64_MAX;
  std::uint32_t best_live = UINT32_MAX;
  for (std::uint64_t c = 0; c < ph.chunk_count;) {
    std::uint64_t n = 1;
    std::uint32_t live = 0;
    if (a.chunk_use(c, &n, &live) == pm::Allocator::ChunkUse::apart && live < best_live) {
      best = c;
      best_live = live;
    }
    c += std::max<std::uint64_t>(1, n);
  }
  for (const auto& [k, it] : x.m) {
    const auto off = s.index().lookup(as_key(k));
    if (off && *off >= ph.first_chunk_offset &&
        (*off - ph.first_chunk_offset) / ph.chunk_size == best)
      return k;
  }
  return {};
}

// The same, with the set replacing a key whose item lies in the chunk that is evacuated,
// on the concurrent path: the evictor skips the item on the set's own stripe, so that chunk
// does not come free and a second one is evacuated for the set; the first comes free when
// the set's commit frees the replaced item. Its free span (the chunk-table entry written
// back and fenced by the last free) is then durable at the acknowledgement, with no carve
// after it.
TEST(ServeStoreCrash, EvictionEvacuatedChunkFreedByAReplace) {
  for (const char* kind : kKinds) {
    if (std::string(kind) != "wort") continue;  // (the stripes: the concurrent path)
    Config c;
    c.kind = kind;
    c.pool_bytes = kEvictPoolBytes;
    c.setup_no_evict = true;
    c.per_key = true;
    c.setup = [](Store& s, Ctx& x) { fill(s, x, 200); };
    c.steps = {step("set of a new size replacing an item of the chunk it evacuates",
                    [](Store& s, Ctx& x) {
                      const std::string k = key_in_cheapest_chunk(s, x);
                      if (k.empty()) return x.fail("no apart chunk holds a fill key");
                      const pm::PoolHeader& ph = s.pool().header();
                      const std::uint64_t chunk =
                          (*s.index().lookup(as_key(k)) - ph.first_chunk_offset) / ph.chunk_size;
                      x.set_evicting(s, k, std::string(1500, 'R'), true);
                      std::uint64_t n = 1;
                      std::uint32_t live = 0;
                      if (s.pool().allocator().chunk_use(chunk, &n, &live) !=
                          pm::Allocator::ChunkUse::free)
                        x.fail("the chunk of the replaced item is not a free span");
                    }),
               step("delete evict-big (none)", [](Store& s, Ctx& x) { x.remove(s, "evict-big"); })};
    EXPECT_STORE_CLEAN(run(c));
  }
}

// A first start killed after it created the index and before it stored the meta block:
// the next start initialises it (the meta block written back, then inserted).
TEST(ServeStoreCrash, FirstStartMetaBlock) {
  for (const char* kind : kKinds) {
    Config c;
    c.kind = kind;
    c.half_initialised = true;
    c.steps = {step("set tau", [](Store& s, Ctx& x) { x.set(s, "tau", "t", 1, 0); })};
    EXPECT_STORE_CLEAN(run(c));
  }
}

}  // namespace
}  // namespace wort::test
