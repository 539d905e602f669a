// Tests of the persistence primitives runtime: counters, modes, instruction selection,
// pm::store widths, and the tracer hook.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "pm/persist.h"

namespace wort::pm {
namespace {

// Restores the process-wide configuration after each test.
class PersistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = config();
    reset_counters();
  }
  void TearDown() override {
    ASSERT_TRUE(configure(saved_).ok());
    set_tracer(nullptr);
  }
  Config saved_;
};

alignas(64) std::byte g_buf[4096];

TEST_F(PersistTest, CountersCountFlushesLinesFencesAndNtStores) {
  flush(g_buf, 8);
  EXPECT_EQ(counters().flushes, 1u);
  EXPECT_EQ(counters().lines_flushed, 1u);
  // 3 full lines starting at a line boundary, then 2 bytes straddling a boundary.
  flush(g_buf, 3 * kCacheLine);
  flush(g_buf + 63, 2);
  EXPECT_EQ(counters().flushes, 3u);
  EXPECT_EQ(counters().lines_flushed, 1u + 3u + 2u);
  fence();
  fence();
  EXPECT_EQ(counters().fences, 2u);
  nt_store(reinterpret_cast<std::uint64_t*>(g_buf + 128), 0x1122334455667788ull);
  EXPECT_EQ(counters().nt_stores, 1u);
  fence();
  std::uint64_t v;
  std::memcpy(&v, g_buf + 128, 8);
  EXPECT_EQ(v, 0x1122334455667788ull);
  persist(g_buf + 10, 100);  // lines 0 and 1
  EXPECT_EQ(counters().flushes, 4u);
  EXPECT_EQ(counters().lines_flushed, 8u);
  EXPECT_EQ(counters().fences, 4u);

  reset_counters();
  EXPECT_EQ(counters().flushes, 0u);
  EXPECT_EQ(counters().lines_flushed, 0u);
  EXPECT_EQ(counters().fences, 0u);
  EXPECT_EQ(counters().nt_stores, 0u);
}

TEST_F(PersistTest, CountersCountInEveryMode) {
  for (Mode m : {Mode::real, Mode::emulated, Mode::none, Mode::trace}) {
    Config c;
    c.mode = m;
    c.flush_latency_ns = 50;
    c.fence_latency_ns = 50;
    ASSERT_TRUE(configure(c).ok()) << to_string(m);
    reset_counters();
    persist(g_buf, 200);
    EXPECT_EQ(counters().flushes, 1u) << to_string(m);
    EXPECT_EQ(counters().lines_flushed, 4u) << to_string(m);
    EXPECT_EQ(counters().fences, 1u) << to_string(m);
    EXPECT_EQ(config().mode, m);
  }
}

TEST_F(PersistTest, ModesAndInstructionsParseAndPrint) {
  for (Mode m : {Mode::real, Mode::emulated, Mode::none, Mode::trace}) {
    Mode back = m == Mode::real ? Mode::none : Mode::real;
    ASSERT_TRUE(parse(to_string(m), back));
    EXPECT_EQ(back, m);
  }
  for (FlushInsn i :
       {FlushInsn::automatic, FlushInsn::clwb, FlushInsn::clflushopt, FlushInsn::clflush}) {
    FlushInsn back = i == FlushInsn::clwb ? FlushInsn::clflush : FlushInsn::clwb;
    ASSERT_TRUE(parse(to_string(i), back));
    EXPECT_EQ(back, i);
  }
  EXPECT_EQ(to_string(Mode::emulated), "emulated");
  EXPECT_EQ(to_string(FlushInsn::automatic), "auto");
  Mode m = Mode::real;
  EXPECT_FALSE(parse("Real", m));
  EXPECT_FALSE(parse("", m));
  EXPECT_EQ(m, Mode::real);
  FlushInsn i = FlushInsn::clwb;
  EXPECT_FALSE(parse("clflush ", i));
  EXPECT_EQ(i, FlushInsn::clwb);
}

TEST_F(PersistTest, StatusNames) {
  EXPECT_EQ(to_string(Status::ok), "ok");
  EXPECT_EQ(to_string(Status::out_of_space), "out_of_space");
  EXPECT_EQ(to_string(Status::wrong_kind), "wrong_kind");
  EXPECT_EQ(to_string(Status::not_a_pool), "not_a_pool");
}

TEST_F(PersistTest, AutomaticResolvesToBestAvailable) {
  Config c;
  c.insn = FlushInsn::automatic;
  ASSERT_TRUE(configure(c).ok());
  const FlushInsn expect = cpu_has(FlushInsn::clwb)         ? FlushInsn::clwb
                           : cpu_has(FlushInsn::clflushopt) ? FlushInsn::clflushopt
                                                            : FlushInsn::clflush;
  EXPECT_EQ(config().insn, expect);
  EXPECT_NE(config().insn, FlushInsn::automatic);
  EXPECT_TRUE(cpu_has(FlushInsn::clflush));  // every x86-64 CPU has it
}

TEST_F(PersistTest, ConfigureRejectsAnInstructionTheCpuLacks) {
  Config c;
#if WORT_FAULTS  // a CPU without clwb, made with the test fault hide_insn_for_testing
  detail::hide_insn_for_testing(FlushInsn::clwb, true);
  c.insn = FlushInsn::clwb;
  const Config before = config();
  auto r = configure(c);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status(), Status::invalid_argument);
  EXPECT_NE(r.error().message.find("clwb"), std::string::npos);
  EXPECT_EQ(config().insn, before.insn);  // unchanged on failure
  // automatic now skips clwb.
  c.insn = FlushInsn::automatic;
  ASSERT_TRUE(configure(c).ok());
  EXPECT_NE(config().insn, FlushInsn::clwb);
  detail::hide_insn_for_testing(FlushInsn::clwb, false);
#endif
  // Any instruction the real CPU lacks is rejected too.
  for (FlushInsn i : {FlushInsn::clwb, FlushInsn::clflushopt, FlushInsn::clflush}) {
    c.insn = i;
    EXPECT_EQ(configure(c).ok(), cpu_has(i)) << to_string(i);
  }
}

TEST_F(PersistTest, EmulatedLatencyConvertsToCycles) {
  Config c;
  c.mode = Mode::emulated;
  c.flush_latency_ns = 300;
  c.fence_latency_ns = 100;
  ASSERT_TRUE(configure(c).ok());
  EXPECT_GT(detail::hot.flush_delay_cycles, 0u);
  EXPECT_GT(detail::hot.flush_delay_cycles, detail::hot.fence_delay_cycles);
  EXPECT_EQ(config().flush_latency_ns, 300u);
  c.mode = Mode::real;
  ASSERT_TRUE(configure(c).ok());
  EXPECT_EQ(detail::hot.flush_delay_cycles, 0u);  // no delay outside emulated mode
}

template <class T>
void check_store(T v) {
  alignas(8) std::byte buf[16];
  std::memset(buf, 0xee, sizeof buf);
  auto* dst = reinterpret_cast<T*>(buf + 8);
  store(dst, v);
  T back;
  std::memcpy(&back, buf + 8, sizeof(T));
  EXPECT_EQ(std::memcmp(&back, &v, sizeof(T)), 0);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(buf[i], std::byte{0xee});  // no spill
  for (std::size_t i = 8 + sizeof(T); i < 16; ++i) EXPECT_EQ(buf[i], std::byte{0xee});
}

TEST_F(PersistTest, StoreOfEveryWidth) {
  check_store<std::uint8_t>(0x5a);
  check_store<std::uint16_t>(0xbeef);
  check_store<std::uint32_t>(0xdeadbeefu);
  check_store<std::uint64_t>(0x0123456789abcdefull);
  check_store<float>(1.5f);
  check_store<double>(-2.25);
  struct Pair {
    std::uint32_t a, b;
  };
  alignas(8) Pair p{};
  store(&p, Pair{7, 9});
  EXPECT_EQ(p.a, 7u);
  EXPECT_EQ(p.b, 9u);
}

struct Event {
  char kind;  // 's' store, 'n' nt_store, 'f' flush, 'F' fence
  const void* addr;
  std::size_t len;
  std::vector<std::byte> bytes;
};

class RecordingTracer : public Tracer {
 public:
  void on_store(void* dst, const void* src, std::size_t len) override {
    const auto* s = static_cast<const std::byte*>(src);
    // The tracer runs before the store: the destination still holds the old value.
    events.push_back({'s', dst, len, std::vector<std::byte>(s, s + len)});
  }
  void on_nt_store(void* dst, std::uint64_t value) override {
    std::vector<std::byte> b(8);
    std::memcpy(b.data(), &value, 8);
    events.push_back({'n', dst, 8, b});
  }
  void on_flush(const void* addr, std::size_t len) override {
    events.push_back({'f', addr, len, {}});
  }
  void on_fence() override { events.push_back({'F', nullptr, 0, {}}); }
  std::vector<Event> events;
};

TEST_F(PersistTest, TracerSeesEventsInOrder) {
  Config c;
  c.mode = Mode::trace;
  ASSERT_TRUE(configure(c).ok());
  RecordingTracer t;
  ASSERT_EQ(set_tracer(&t), nullptr);
  EXPECT_EQ(tracer(), &t);
  auto* w = reinterpret_cast<std::uint64_t*>(g_buf + 256);
  *w = 1;
  store(w, std::uint64_t{42});
  flush(w, 8);
  fence();
  const char msg[] = "hello";
  copy(g_buf + 512, msg, sizeof msg);
  fill(g_buf + 1024, 0xab, 1000);  // more than the fill reporting buffer
  nt_store(reinterpret_cast<std::uint64_t*>(g_buf + 2048), 77);
  persist(g_buf + 512, 6);
  EXPECT_EQ(set_tracer(nullptr), &t);
  store(w, std::uint64_t{43});  // not seen: tracer removed

  std::string kinds;
  for (auto& e : t.events) kinds += e.kind;
  EXPECT_EQ(kinds, "sfFsssnfF");
  ASSERT_GE(t.events.size(), 9u);
  EXPECT_EQ(t.events[0].addr, w);
  EXPECT_EQ(t.events[0].len, 8u);
  std::uint64_t v;
  std::memcpy(&v, t.events[0].bytes.data(), 8);
  EXPECT_EQ(v, 42u);
  EXPECT_EQ(t.events[1].addr, w);
  EXPECT_EQ(t.events[3].addr, g_buf + 512);
  EXPECT_EQ(std::memcmp(t.events[3].bytes.data(), msg, sizeof msg), 0);
  // fill reported as pieces covering exactly [1024, 2024) with the fill byte
  EXPECT_EQ(t.events[4].addr, g_buf + 1024);
  EXPECT_EQ(t.events[4].len + t.events[5].len, 1000u);
  EXPECT_EQ(t.events[5].addr, g_buf + 1024 + t.events[4].len);
  for (int k : {4, 5})
    for (std::byte b : t.events[k].bytes) ASSERT_EQ(b, std::byte{0xab});
  for (int i = 1024; i < 2024; ++i) ASSERT_EQ(g_buf[i], std::byte{0xab});
  EXPECT_EQ(t.events[6].addr, g_buf + 2048);
  EXPECT_EQ(t.events[7].addr, g_buf + 512);
  EXPECT_EQ(t.events[7].len, 6u);
  EXPECT_EQ(*w, 43u);
}

TEST_F(PersistTest, SpinCyclesWaits) {
  const std::uint64_t t0 = __builtin_ia32_rdtsc();
  detail::spin_cycles(100000);
  EXPECT_GE(__builtin_ia32_rdtsc() - t0, 100000u);
}

}  // namespace
}  // namespace wort::pm
