// WORT's and the ART engine's insert commits are cached stores (src/index/wort/README.md and
// src/index/art_engine/README.md, "No dirty reads"): between an insert's commit store and its
// fence another writer can reach the new node the store publishes. Every new node an insert
// publishes (WORT: a leaf split's node, a SplitCmp's parent; the ART engine: a leaf split's
// NODE4, a prefix split's parent and ART+CoW's copy of the split node, a grown or copied
// node) is therefore born locked — taken before the publishing store, released after the
// fence — so no other writer commits below it before it is durable. Concurrent crash
// histories (crashsim::run_concurrent_kv), two writers whose inserts meet in the nodes the
// other one's inserts create: clean as built, on WORT, WOART and ART+CoW; with the new nodes
// born unlocked (the test faults wort_index::g_broken_new_node_unlocked and
// art_engine::g_broken_new_node_unlocked) the second writer's insert is acknowledged while
// the first one's commit is not yet durable, and a crash image without that commit loses it
// (LOST_ACK).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "index/artcow/artcow.h"
#include "index/woart/woart.h"
#include "index/wort/wort_tree.h"
#include "support/crash_ops.h"
#include "support/faults.h"
#include "support/keygen.h"

namespace wort::test {
namespace {

using crashsim::KvOp;

//! A setup and two writers' inserts.
struct Case {
  std::vector<KvOp> setup;
  std::vector<std::vector<KvOp>> writers;
};

//! The setup both cases start from (8-byte big-endian keys).
std::vector<KvOp> meeting_setup() {
  std::vector<KvOp> s;
  for (std::uint64_t k : {0xff00000000000000ull, 0x1100ull, 0x3110ull, 0x3120ull})
    s.push_back(ins(u64_str(k), k));
  return s;
}

//! WORT: a root node branching at partial key 0 (0xff.. against the rest), below it a node
//! branching at 12 holding leaf 0x1100 and a node for 0x3110 / 0x3120 (prefix "1" at 13).
//! Writer 0 inserts 0x1200 (a leaf split: a new node at 13 holding 0x1100 and 0x1200) and
//! 0x3200 (a SplitCmp: a new parent at 13 above the 0x31.. node); writer 1 inserts 0x1300
//! and 0x3300, which land in empty slots of those new nodes when they run second, and make
//! the new nodes themselves when they run first.
Case wort_inserts() {
  return {meeting_setup(),
          {{ins(u64_str(0x1200), 1), ins(u64_str(0x3200), 2)},
           {ins(u64_str(0x1300), 3), ins(u64_str(0x3300), 4)}}};
}

//! The ART engine: a root NODE4 branching at byte 0 (0xff.. against 0x00..), below 0x00 a
//! node X with a 5-byte compressed path (bytes 1-5, all 0) branching at byte 6: leaf 0x1100
//! and a node for 0x3110 / 0x3120. Writer 0 inserts 0x1101 (a leaf split: a new NODE4 at
//! byte 7 holding 0x1100 and 0x1101) and 0x0000010000000000 (a prefix split: a new parent at
//! byte 2 above X; ART+CoW copies X too). Writer 1 inserts 0x1102 and (last)
//! 0x0000020000000000, which land in those new nodes when they run second (WOART adds in
//! place there; ART+CoW copies them, which needs the lock of their owner, held by writer 0
//! anyway), and 0x1500, which lands in X — in ART+CoW in X's copy, copied again and
//! published into the new parent, whose own publishing store may not be durable yet.
Case art_inserts() {
  return {meeting_setup(),
          {{ins(u64_str(0x1101), 1), ins(u64_str(0x0000010000000000ull), 2)},
           {ins(u64_str(0x1102), 3), ins(u64_str(0x1500), 5),
            ins(u64_str(0x0000020000000000ull), 4)}}};
}

struct Totals {
  std::size_t schedules = 0, findings = 0, lost = 0, stalls = 0;
};

//! `n` schedules (seeds 1..n) of case `c` on index `f`, summed.
Totals run_schedules(const char* name, const crashsim::Factory& f, const Case& c,
                     std::uint64_t n) {
  Totals t;
  for (std::uint64_t seed = 1; seed <= n; ++seed) {
    crashsim::Options o;
    o.seed = seed;
    o.pool_size = 1u << 20;
    o.exhaustive_cap = 16;
    o.random_samples = 2;
    const crashsim::Report r = run_concurrent_and_print(f, c.setup, c.writers, o);
    EXPECT_TRUE(r.error.empty()) << r.summary();
    ++t.schedules;
    t.findings += r.findings.size();
    t.lost += r.count("LOST_ACK");
    t.stalls += r.stalls;
  }
  std::printf("[born locked] %s schedules %zu findings %zu LOST_ACK %zu stalls %zu\n", name,
              t.schedules, t.findings, t.lost, t.stalls);
  return t;
}

//! Clean, and the writers did meet: some schedule had the second writer wait for a lock the
//! first one held (a new node's, or the slot owner's).
void expect_clean_and_met(const Totals& t) {
  EXPECT_EQ(t.findings, 0u);
  EXPECT_GT(t.stalls, 0u);
}

struct Tree {
  const char* name;
  crashsim::Factory factory;
};
std::vector<Tree> art_trees() {
  return {{"woart", crashsim::factory_of<woart::Woart>()},
          {"artcow", crashsim::factory_of<artcow::ArtCow>()}};
}

TEST(WortBornLocked, InsertsMeetingInANewNodeAreClean) {
  expect_clean_and_met(run_schedules("wort", crashsim::factory_of<WortTree>(), wort_inserts(), 24));
}

TEST(ArtBornLocked, InsertsMeetingInANewNodeAreClean) {
  for (const Tree& tr : art_trees()) {
    SCOPED_TRACE(tr.name);
    expect_clean_and_met(run_schedules(tr.name, tr.factory, art_inserts(), 24));
  }
}

#if WORT_FAULTS
TEST(WortBornLocked, NewNodeBornUnlockedLosesAnAcknowledgedInsert) {
  FaultSwitch broken(wort_index::g_broken_new_node_unlocked);
  const Totals t = run_schedules("wort", crashsim::factory_of<WortTree>(), wort_inserts(), 24);
  EXPECT_GT(t.lost, 0u);
}

TEST(ArtBornLocked, NewNodeBornUnlockedLosesAnAcknowledgedInsert) {
  FaultSwitch broken(art_engine::g_broken_new_node_unlocked);
  for (const Tree& tr : art_trees()) {
    SCOPED_TRACE(tr.name);
    const Totals t = run_schedules(tr.name, tr.factory, art_inserts(), 24);
    EXPECT_GT(t.lost, 0u);
  }
}
#endif  // WORT_FAULTS

}  // namespace
}  // namespace wort::test
