// Parsing callgrind's output and attaching it to phases; perf availability is reported,
// never assumed.
#include "bench/llc.h"

#include <gtest/gtest.h>

#include "bench/bench.h"
#include "bench/json.h"

namespace wort::bench {
namespace {

constexpr const char* kDump = R"(# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 1234
cmd:  ./wort bench
part: 2

desc: I1 cache: 32768 B, 64 B, 8-way associative
desc: D1 cache: 32768 B, 64 B, 8-way associative
desc: LL cache: 33554432 B, 64 B, 16-way associative
desc: Timerange: Basic block 100 - 200
desc: Trigger: Client Request: art/dense/0/insert

positions: line
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw

summary: 1000 400 200 5 60 40 3 20 10


totals: 1000 400 200 5 60 40 3 20 10
fl=(1) foo.cc
fn=(1) main
5 1000 400 200 5 60 40 3 20 10
)";

TEST(CallgrindTest, ParsesTagAndTotals) {
  auto r = parse_callgrind_file(kDump);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().first, "art/dense/0/insert");
  const CallgrindTotals& t = r.value().second;
  EXPECT_EQ(t.get("Ir"), 1000u);
  EXPECT_EQ(t.get("DLmw"), 10u);
  EXPECT_EQ(t.ll_misses(), 3u + 20u + 10u);
  EXPECT_EQ(t.d1_misses(), 60u + 40u);
  EXPECT_EQ(t.get("nonexistent"), 0u);
  EXPECT_FALSE(parse_callgrind_file("nothing here").ok());
}

TEST(CallgrindTest, AttachDividesByTheChildsOpCount) {
  BenchReport r;
  CaseResult c;
  c.index = "art";
  c.dist = KeyDist::dense;
  PhaseResult p;
  p.name = "insert";
  p.ops = 1'000'000;  // the native run; the child ran fewer
  c.phases.push_back(p);
  r.cases.push_back(c);
  std::map<std::string, CallgrindTotals> dumps;
  dumps["art/dense/0/insert"] = parse_callgrind_file(kDump).value().second;
  const std::string child = R"({"options": {"keys": 10},
    "cases": [{"index": "art", "dist": "dense", "flush_latency_ns": 0,
               "phases": [{"name": "insert", "ops": 10}]}]})";
  auto n = attach_callgrind(r, dumps, child);
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(n.value(), 1u);
  const CacheStats& cs = r.cases[0].phases[0].cache;
  EXPECT_EQ(cs.source, "callgrind");
  EXPECT_EQ(cs.ops, 10u);
  EXPECT_EQ(cs.at_keys, 10u);
  EXPECT_DOUBLE_EQ(per_op(cs.llc_misses, cs.ops), 3.3);
  EXPECT_DOUBLE_EQ(per_op(cs.instructions, cs.ops), 100);
  EXPECT_FALSE(attach_callgrind(r, dumps, "{not json").ok());
}

TEST(PerfTest, AvailabilityIsReportedWithAReason) {
  std::string why;
  const bool ok = hw_counters_available(&why);
  if (!ok) EXPECT_NE(why.find("perf_event_open"), std::string::npos) << why;
  else EXPECT_TRUE(why.empty());
  HwCounter hc;
  if (ok) {
    ASSERT_TRUE(hc.open().ok());
    hc.start();
    volatile std::uint64_t x = 0;
    for (int i = 0; i < 100000; ++i) x = x + i;
    (void)hc.stop();
    EXPECT_GT(hc.instructions(), 0u);
  }
}

TEST(JsonTest, RoundTripAndEscapes) {
  JsonWriter w;
  w.begin_object();
  w.field("s", std::string("a\"b\\c\n\x01"));
  w.field("n", 1.5);
  w.field("nan", std::nan(""));
  w.field("u", std::uint64_t{1} << 40);
  w.field("b", true);
  w.key("a");
  w.begin_array();
  w.value(1);
  w.begin_object();
  w.end_object();
  w.end_array();
  w.end_object();
  auto j = parse_json(w.str());
  ASSERT_TRUE(j.ok()) << w.str();
  EXPECT_EQ(j.value().get("s")->str(), "a\"b\\c\n\x01");
  EXPECT_EQ(j.value().get("n")->num(), 1.5);
  EXPECT_TRUE(j.value().get("nan")->is_null());
  EXPECT_EQ(j.value().get("u")->num(), double(std::uint64_t{1} << 40));
  EXPECT_EQ(j.value().get("a")->arr().size(), 2u);
  EXPECT_FALSE(parse_json("{\"a\": }").ok());
  EXPECT_FALSE(parse_json("[1, 2").ok());
  EXPECT_FALSE(parse_json("{} extra").ok());
}

// The LL size valgrind picked itself (its log's warning), for the tree-fits-the-cache check.
TEST(CallgrindTest, SimulatedLlBytesFromTheLog) {
  EXPECT_EQ(simulated_ll_bytes("==1== Callgrind\n--123-- warning: simulated LL cache: line_size 64  "
                               "assoc 1  total_size 268,435,456\n--123-- more\n"),
            268435456u);
  EXPECT_EQ(simulated_ll_bytes("--9-- warning: simulated LL cache: line_size 64  assoc 16  total_size 1048576\n"),
            1048576u);
  EXPECT_EQ(simulated_ll_bytes("==1== nothing about caches\n"), 0u);
  EXPECT_EQ(simulated_ll_bytes("--1-- warning: simulated LL cache: line_size 64\ntotal_size 5\n"), 0u)
      << "a total_size on another line is not this one's";
}

}  // namespace
}  // namespace wort::bench
