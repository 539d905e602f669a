// tests/server/restart_test.cc — what must hold across a restart (clean or SIGKILL):
// absolute expiry, a pending and a done flush_all, cas uniques; eviction when full and
// SERVER_ERROR out of memory under -M; and bad input (random bytes, huge and negative
// lengths, unterminated and overlong lines, many idle connections, a client that stops
// reading) never crashes the server or loses an acknowledged item.
#include <gtest/gtest.h>

#include <filesystem>
#include <cstring>
#include <random>

#include "server_harness.h"

namespace wort::test {
namespace {

std::string pool_for(const char* tag) {
  const std::string p = temp_path(tag);
  std::filesystem::remove(p);
  return p;
}

TEST(ServeRestart, ExpiryFlushAndCasHoldAcrossSigkill) {
  const std::string pool = pool_for("restart");
  std::string cas_before;
  {
    ServerProc s;
    ASSERT_TRUE(s.start(pool));
    Client c(s.port());
    EXPECT_EQ(c.cmd("set short 0 2 1\r\nx\r\n", "\r\n"), "STORED\r\n");
    EXPECT_EQ(c.cmd("set long 0 1000 1\r\ny\r\n", "\r\n"), "STORED\r\n");
    EXPECT_EQ(c.cmd("set gone 0 0 1\r\nz\r\n", "\r\n"), "STORED\r\n");
    const std::string g = c.cmd("gets long\r\n", "END\r\n");
    cas_before = g.substr(g.rfind(' ') + 1, g.find("\r\n") - g.rfind(' ') - 1);
    EXPECT_EQ(c.cmd("flush_all 2\r\n", "\r\n"), "OK\r\n");  // pending when killed
    s.kill9();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  ServerProc s;
  ASSERT_TRUE(s.start(pool));
  Client c(s.port());
  // The delayed flush came due while the server was down: everything older is gone.
  EXPECT_EQ(c.cmd("get short long gone\r\n", "END\r\n"), "END\r\n");
  EXPECT_EQ(c.cmd("set fresh 0 1000 1\r\nf\r\n", "\r\n"), "STORED\r\n");
  const std::string g = c.cmd("gets fresh\r\n", "END\r\n");
  const std::string cas_after = g.substr(g.rfind(' ') + 1, g.find("\r\n") - g.rfind(' ') - 1);
  EXPECT_GT(std::stoull(cas_after), std::stoull(cas_before));
  EXPECT_EQ(c.cmd("set e 0 2 1\r\ne\r\n", "\r\n"), "STORED\r\n");
  s.kill9();
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  ServerProc s2;
  ASSERT_TRUE(s2.start(pool));
  Client c2(s2.port());
  EXPECT_EQ(c2.cmd("get e fresh\r\n", "END\r\n"), "VALUE fresh 0 1\r\nf\r\nEND\r\n");
  EXPECT_EQ(s2.stop(), 0);
  std::filesystem::remove(pool);
}

TEST(ServeRestart, EvictsWhenFullAndRefusesUnderM) {
  for (const bool no_evict : {false, true}) {
    const std::string pool = pool_for(no_evict ? "full-M" : "full");
    ServerProc s;
    std::vector<std::string> args = {"-m", "8"};
    if (no_evict) args.push_back("-M");
    ASSERT_TRUE(s.start(pool, args));
    Client c(s.port());
    const std::string v(1000, 'v');
    int stored = 0, oom = 0;
    for (int i = 0; i < 12000; ++i) {
      const std::string r = c.cmd("set k" + std::to_string(i) + " 0 0 1000\r\n" + v + "\r\n", "\r\n");
      if (r == "STORED\r\n") ++stored;
      else if (r == "SERVER_ERROR out of memory storing object\r\n") ++oom;
      else FAIL() << r;
    }
    const std::string st = c.cmd("stats\r\n", "END\r\n");
    if (no_evict) {
      EXPECT_GT(oom, 0);
      EXPECT_NE(st.find("STAT evictions 0\r\n"), std::string::npos);
    } else {
      EXPECT_EQ(oom, 0);
      EXPECT_EQ(stored, 12000);
      EXPECT_EQ(st.find("STAT evictions 0\r\n"), std::string::npos);
      // The newest item is there.
      EXPECT_EQ(c.cmd("get k11999\r\n", "END\r\n"), "VALUE k11999 0 1000\r\n" + v + "\r\nEND\r\n");
    }
    EXPECT_EQ(c.cmd("wort_audit\r\n", "\r\n"), "OK\r\n");
    EXPECT_EQ(s.stop(), 0);
    std::filesystem::remove(pool);
  }
}

TEST(ServeFuzz, BadInputNeverCrashesNorLosesAcknowledgedItems) {
  const std::string pool = pool_for("fuzz");
  ServerProc s;
  ASSERT_TRUE(s.start(pool, {"-c", "3000"}));
  Client keeper(s.port());
  EXPECT_EQ(keeper.cmd("set keep 9 0 4\r\nsafe\r\n", "\r\n"), "STORED\r\n");
  std::mt19937_64 rng(7);
  const char* pieces[] = {"set ", "get ", "gets ", "cas ", "incr ", "delete ", "touch ", "gat ",
                          "mg ", "ms ", " ", "\r\n", "\n", "\r", "noreply", "-1", "0",
                          "4294967296", "99999999999999999999", "2147483647", "k", "keep",
                          "\x80", "\0", "flush_all 100000"};
  for (int conn = 0; conn < 300; ++conn) {
    Client c(s.port(), 500);
    ASSERT_TRUE(c.ok()) << "connection " << conn;
    std::string junk;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      if (rng() % 3 == 0) {
        for (int j = static_cast<int>(rng() % 64); j > 0; --j) junk.push_back(static_cast<char>(rng()));
      } else {
        const char* p = pieces[rng() % (sizeof pieces / sizeof *pieces)];
        junk.append(p, std::strlen(p) ? std::strlen(p) : 1);
      }
    }
    if (junk.find("flush_all") != std::string::npos) continue;  // would drop "keep" legitimately
    c.send(junk);
    c.drain(5);
  }
  // Unterminated and overlong lines close that connection only.
  {
    Client c(s.port());
    c.send(std::string(5000, 'x'));
    EXPECT_EQ(c.drain(300), "<closed>");
  }
  // A value length far beyond -I is refused and its bytes swallowed.
  {
    Client c(s.port());
    EXPECT_EQ(c.cmd("set huge 0 0 2147483000\r\n", "\r\n"), "SERVER_ERROR object too large for cache\r\n");
  }
  // Many idle connections.
  {
    std::vector<std::unique_ptr<Client>> idle;
    for (int i = 0; i < 2000; ++i) idle.push_back(std::make_unique<Client>(s.port()));
    int ok = 0;
    for (auto& c : idle) ok += c->ok();
    EXPECT_EQ(ok, 2000);
    Client c(s.port());
    EXPECT_EQ(c.cmd("get keep\r\n", "END\r\n"), "VALUE keep 9 4\r\nsafe\r\nEND\r\n");
  }
  // A client that sends 20 MB of gets and never reads: the server stops parsing its input
  // once 4 MB of replies wait, and serves everyone else.
  {
    Client slow(s.port());
    std::string big(100000, 'B');
    EXPECT_EQ(slow.cmd("set big 0 0 100000\r\n" + big + "\r\n", "\r\n"), "STORED\r\n");
    std::string gets;
    for (int i = 0; i < 1000; ++i) gets += "get big\r\n";
    timeval tv{0, 200000};
    setsockopt(slow.fd(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    for (int i = 0; i < 20; ++i) slow.send(gets);
    Client c(s.port());
    EXPECT_EQ(c.cmd("get keep\r\n", "END\r\n"), "VALUE keep 9 4\r\nsafe\r\nEND\r\n");
  }
  EXPECT_TRUE(s.alive());
  Client c(s.port());
  EXPECT_EQ(c.cmd("get keep\r\n", "END\r\n"), "VALUE keep 9 4\r\nsafe\r\nEND\r\n");
  EXPECT_EQ(c.cmd("wort_audit\r\n", "\r\n"), "OK\r\n");
  EXPECT_EQ(s.stop(), 0);
  std::filesystem::remove(pool);
}

}  // namespace
}  // namespace wort::test
