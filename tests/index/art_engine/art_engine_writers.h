// tests/index/art_engine/art_engine_writers.h — the ART engine's per-node writer locks (ROWEX;
// src/index/art_engine/README.md "Concurrency"), a typed test instantiated by
// woart_concurrency_test.cc and artcow_concurrency_test.cc beside art_concurrency.h:
//
// - HotNodes: four writers insert, remove and upsert short keys that collide in a handful of
//   nodes (one node fanning out to 160 children grows 4→16→48→256 and shrinks back, long
//   compressed paths split and merge, keys end inside other keys' paths), each writer owning
//   every fourth key of each family (disjoint keys in the SAME nodes) and all of them racing
//   on a shared set (exactly one insert and one remove may succeed per round), while a reader
//   looks up and scans. Each writer checks its own key right after each of its writes (a
//   lost write shows at once), and the end state is compared with the reference.
// - SkippedValidationIsCaught: deterministic. A writer is paused (g_writer_locking_hook)
//   between its lock-free decision and its locks while another write changes what it
//   decided on; with the broken variant (g_broken_writer_skips_validation) the paused write
//   stores anyway and a key is lost or the tree corrupt — the test asserts the broken variant
//   IS caught, and that the real writer restarts and loses nothing.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <optional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "index/art_engine/art_tree.h"
#include "support/art_concurrency.h"

namespace wort::test {

//! Key family f, member i: short keys sharing few nodes.
//!   0: "A" + one byte (160 values): one node of up to 160 children (grow/shrink).
//!   1: "Bcdefgh" cut after 1..7 bytes + one byte (0..7): long compressed paths that split
//!      when a shorter one arrives and merge when it leaves; keys ending at inner nodes.
//!   2: "A" + byte + byte (0..3): NODE4s under family 0's node.
inline std::string hot_key(unsigned f, unsigned i) {
  std::string k;
  if (f == 0) {
    k = "A";
    k += static_cast<char>(i % 160);
  } else if (f == 1) {
    k = std::string("Bcdefgh").substr(0, 1 + (i / 8) % 7);
    k += static_cast<char>('0' + i % 8);
  } else {
    k = "A";
    k += static_cast<char>(i / 4 % 160);
    k += static_cast<char>(i % 4);
  }
  return k;
}
inline constexpr unsigned kHotFamilySize[3] = {160, 56, 640};

template <class Tree>
class PmartWriters : public ::testing::Test {};
TYPED_TEST_SUITE_P(PmartWriters);

TYPED_TEST_P(PmartWriters, HotNodes) {
  ConcFixture<TypeParam> f;
  constexpr unsigned kWriters = 4;
  const unsigned rounds = 6 * kConcScale;
  std::vector<std::pair<unsigned, unsigned>> keys;  // (family, member)
  for (unsigned fam = 0; fam < 3; ++fam)
    for (unsigned i = 0; i < kHotFamilySize[fam]; ++i) keys.emplace_back(fam, i);
  std::atomic<std::uint64_t> errors{0}, reads{0};
  std::atomic<bool> stop{false};
  // Shared keys: every 5th key; per round each is inserted by all writers (one ok) and then
  // removed by all (one ok).
  std::vector<std::atomic<unsigned>> ins_ok(keys.size()), rem_ok(keys.size());
  std::thread reader([&] {
    std::mt19937 rng(99);
    while (!stop.load()) {
      const auto& [fam, i] = keys[rng() % keys.size()];
      const std::string k = hot_key(fam, i);
      const auto got = f.tree->lookup(as_key(k));
      if (got && *got != conc_value_of(k) && *got != conc_value_of(k) + 2) errors.fetch_add(1);
      std::string prev;
      f.tree->scan(as_key(std::string("A")), 40, [&](Key x, Value) {
        std::string s(reinterpret_cast<const char*>(x.data()), x.size());
        if (!prev.empty() && !(prev < s)) errors.fetch_add(1);
        prev = s;
        return true;
      });
      reads.fetch_add(1);
    }
  });
  std::vector<std::thread> writers;
  std::atomic<unsigned> barrier{0};
  for (unsigned w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      std::mt19937 rng(w + 1);
      for (unsigned round = 0; round < rounds; ++round) {
        // Own keys (index % 5 != 0, owner index % 4): insert all, upsert some, remove half.
        for (int pass = 0; pass < 3; ++pass) {
          for (std::size_t j = 0; j < keys.size(); ++j) {
            if (j % 5 == 0 || j % kWriters != w) continue;
            const std::string k = hot_key(keys[j].first, keys[j].second);
            const Key key = as_key(k);
            Status s;
            std::optional<Value> want;
            if (pass == 0) {
              s = f.tree->insert(key, conc_value_of(k));
              want = conc_value_of(k);
            } else if (pass == 1) {
              if (rng() % 2 == 0) continue;
              s = f.tree->upsert(key, conc_value_of(k) + 2);
              want = conc_value_of(k) + 2;
            } else {
              if ((j / kWriters + round) % 2 == 0) continue;
              s = f.tree->remove(key);
            }
            const auto got = f.tree->lookup(key);
            if (s != Status::ok || got != want) {
              errors.fetch_add(1);
              ADD_FAILURE() << "writer " << w << " pass " << pass << " key " << j
                            << " status " << static_cast<int>(s) << " found " << got.has_value();
            }
          }
          // Shared keys: everyone inserts (pass 0) or removes (pass 2) them.
          if (pass == 1) continue;
          for (std::size_t j = 0; j < keys.size(); j += 5) {
            const std::string k = hot_key(keys[j].first, keys[j].second);
            const Status s = pass == 0 ? f.tree->insert(as_key(k), conc_value_of(k))
                                       : f.tree->remove(as_key(k));
            if (s == Status::ok) (pass == 0 ? ins_ok : rem_ok)[j].fetch_add(1);
            else if (s != (pass == 0 ? Status::exists : Status::not_found)) errors.fetch_add(1);
          }
          // Everyone finishes the shared pass before anyone starts the next one.
          barrier.fetch_add(1);
          while (barrier.load() < (round * 2 + (pass == 0 ? 1u : 2u)) * kWriters)
            std::this_thread::yield();
        }
        // Own keys not removed this round are removed now, so each round starts empty.
        for (std::size_t j = 0; j < keys.size(); ++j) {
          if (j % 5 == 0 || j % kWriters != w || (j / kWriters + round) % 2 != 0) continue;
          const std::string k = hot_key(keys[j].first, keys[j].second);
          if (round + 1 < rounds && f.tree->remove(as_key(k)) != Status::ok) errors.fetch_add(1);
        }
      }
    });
  for (auto& t : writers) t.join();
  stop = true;
  reader.join();
  EXPECT_EQ(errors.load(), 0u);
  for (std::size_t j = 0; j < keys.size(); j += 5) {
    EXPECT_EQ(ins_ok[j].load(), rounds) << "shared key " << j << ": inserts that succeeded";
    EXPECT_EQ(rem_ok[j].load(), rounds) << "shared key " << j << ": removes that succeeded";
  }
  // The last round's own keys that were kept (not removed in its pass 2).
  std::map<std::string, Value> ref;
  const unsigned last = rounds - 1;
  for (std::size_t j = 0; j < keys.size(); ++j) {
    if (j % 5 == 0 || (j / kWriters + last) % 2 != 0) continue;
    const std::string k = hot_key(keys[j].first, keys[j].second);
    const auto got = f.tree->lookup(as_key(k));
    ASSERT_TRUE(got.has_value()) << j;
    ref.emplace(k, *got);  // either value (the upsert was random): checked as found
  }
  f.check(ref);
  std::printf("[%s writers] %llu restarts, %llu reader rounds\n",
              std::string(TypeParam::kKind).c_str(),
              static_cast<unsigned long long>(f.tree->write_restarts()),
              static_cast<unsigned long long>(reads.load()));
}

#if WORT_FAULTS  // the writer hook (art_engine::g_writer_locking_hook) stages each race
//! Pauses the first write that reaches the hook on `pause_thread` until `go`, after running
//! `during` (another thread's write) — deterministic interleaving of a decision and a change.
struct HookCtl {
  std::function<void()> during;
  std::thread::id pause_thread;
  bool fired = false;
};
inline void hook_fn(void* ctx) {
  auto* c = static_cast<HookCtl*>(ctx);
  if (c->fired || std::this_thread::get_id() != c->pause_thread) return;
  c->fired = true;
  std::thread t(c->during);  // the change happens while this write is between decision
  t.join();                  // and locks
}

//! Runs write `paused` with `change` slipped in between its decision and its locks; returns
//! the tree's state check: true if every key of `expect` is there with its value and the
//! tree verifies.
template <class Tree>
bool interleave(ConcFixture<Tree>& f, std::function<void()> paused,
                std::function<void()> change, const std::map<std::string, Value>& expect) {
  HookCtl ctl;
  ctl.during = std::move(change);
  ctl.pause_thread = std::this_thread::get_id();
  art_engine::g_writer_locking_ctx = &ctl;
  art_engine::g_writer_locking_hook.store(&hook_fn);
  paused();
  art_engine::g_writer_locking_hook.store(nullptr);
  EXPECT_TRUE(ctl.fired);
  for (const auto& [k, v] : expect) {
    const auto got = f.tree->lookup(as_key(k));
    if (!got || *got != v) return false;
  }
  return f.tree->verify().ok();
}

TYPED_TEST_P(PmartWriters, SkippedValidationIsCaught) {
  auto val = [](const std::string& k) { return conc_value_of(k); };
  using T = TypeParam;
  auto ins = [&](T& t, const std::string& k) { (void)t.insert(as_key(k), val(k)); };
  // Each scenario: preload, a paused write, the change slipped in after its decision, and
  // what the tree must hold afterwards.
  struct Scenario {
    const char* name;
    std::vector<std::string> preload;
    std::function<void(T&)> paused, change;
    std::map<std::string, Value> expect;
    // The broken variant adds a byte the node already has: with WORT_DCHECK on (Debug,
    // sanitizer builds) the node type's add aborts on it before the test can look.
    bool broken_trips_dcheck = false;
  };
  // A NODE48 (20 children under the path "w"): added to and removed from in place in both
  // flavors (an ART+CoW NODE4/NODE16 is copied instead: a write that decided on it finds it
  // obsolete and restarts whatever the re-check, so it cannot show the re-check's worth).
  std::vector<std::string> wide;
  std::map<std::string, Value> wide_vals;
  for (char c = 'a'; c < 'a' + 20; ++c) {
    wide.push_back(std::string("w") + c);
    wide_vals.emplace(wide.back(), val(wide.back()));
  }
  auto with = [&](std::map<std::string, Value> m, std::initializer_list<std::string> ks) {
    for (const auto& k : ks) m[k] = val(k);
    return m;
  };
  auto upserted = wide_vals;
  upserted["wa"] = 7;
  const std::vector<Scenario> scenarios = {
      // The paused insert decided "byte 'Z' is free under n"; the change filled it first.
      {"same free byte", wide, [&](T& t) { ins(t, "wZa"); }, [&](T& t) { ins(t, "wZb"); },
       with(wide_vals, {"wZa", "wZb"}), true},
      // The paused insert decided "split leaf wa"; the change split it first.
      {"same leaf split", wide, [&](T& t) { ins(t, "wax"); }, [&](T& t) { ins(t, "way"); },
       with(wide_vals, {"wax", "way"})},
      // The same in a NODE4 (a slot store into it, in place in both flavors).
      {"same leaf split in a NODE4", {"k1", "k2"}, [&](T& t) { ins(t, "k1x"); },
       [&](T& t) { ins(t, "k1y"); },
       {{"k1", val("k1")}, {"k2", val("k2")}, {"k1x", val("k1x")}, {"k1y", val("k1y")}}},
      // The paused upsert decided "key wa is there: store its value"; the change removed it.
      {"upsert of a removed key", wide,
       [&](T& t) { (void)t.upsert(as_key(std::string("wa")), 7); },
       [&](T& t) { (void)t.remove(as_key(std::string("wa"))); }, upserted},
  };
  for (bool broken : {false, true}) {
    unsigned caught = 0;
    unsigned run = 0;
    for (const auto& sc : scenarios) {
#if defined(WORT_DEBUG_CHECKS)
      if (broken && sc.broken_trips_dcheck) continue;
#endif
      ++run;
      ConcFixture<T> f;
      for (const auto& k : sc.preload) ASSERT_EQ(f.tree->insert(as_key(k), val(k)), Status::ok);
      art_engine::g_broken_writer_skips_validation.store(broken);
      const bool ok = interleave<T>(
          f, [&] { sc.paused(*f.tree); }, [&] { sc.change(*f.tree); }, sc.expect);
      art_engine::g_broken_writer_skips_validation.store(false);
      if (broken) {
        EXPECT_FALSE(ok) << sc.name << ": the broken variant was not caught";
      } else {
        EXPECT_TRUE(ok) << sc.name << ": the real writer lost a write";
      }
      caught += !ok;
    }
    std::printf("[%s writers] broken=%d: %u of %u scenarios lost a write or corrupted\n",
                std::string(T::kKind).c_str(), broken, caught, run);
  }
}
#endif  // WORT_FAULTS

#if WORT_FAULTS
REGISTER_TYPED_TEST_SUITE_P(PmartWriters, HotNodes, SkippedValidationIsCaught);
#else
REGISTER_TYPED_TEST_SUITE_P(PmartWriters, HotNodes);
#endif

}  // namespace wort::test
