// Ten thousand idle connections: memcached holds them at a few hundred bytes
// each and keeps serving; so must `wort serve`. The test opens them all, checks the server
// counts every one and still answers an active client and a sample of the idle ones, and
// prints the server's resident memory per idle connection (VmRSS before and after).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>
#include <thread>

#include "server/server_harness.h"

namespace wort::test {
namespace {

constexpr int kIdle = 10000;

long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

std::uint64_t stat_value(Client& c, const std::string& name) {
  const std::string s = c.cmd("stats\r\n", "END\r\n");
  const std::string key = "STAT " + name + " ";
  const auto p = s.find(key);
  if (p == std::string::npos) return 0;
  return std::stoull(s.substr(p + key.size()));
}

TEST(ServeConnections, TenThousandIdleConnectionsAreHeldAndServed) {
  // This process and the server (which inherits the limit and raises its own to -c) each
  // need one descriptor per connection.
  rlimit rl{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < static_cast<rlim_t>(kIdle) + 200)
    GTEST_SKIP() << "the hard limit on open files (" << rl.rlim_max << ") is below "
                 << kIdle + 200 << ": cannot open " << kIdle << " connections here";
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? kIdle + 200 : rl.rlim_max;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);

  const std::string pool = temp_path("conns") + ".pool";
  std::filesystem::remove(pool);
  ServerProc s;
  ASSERT_TRUE(s.start(pool, {"-c", std::to_string(kIdle + 100), "-t", "2", "-m", "64"}));
  Client active(s.port());
  ASSERT_EQ(active.cmd("set keep 9 0 4\r\nsafe\r\n", "\r\n"), "STORED\r\n");
  const long rss0 = rss_kib(s.pid());

  std::vector<std::unique_ptr<Client>> idle;
  idle.reserve(kIdle);
  for (int i = 0; i < kIdle; ++i) idle.push_back(std::make_unique<Client>(s.port()));
  int connected = 0;
  for (auto& c : idle) connected += c->ok();
  ASSERT_EQ(connected, kIdle);
  // The accept loop hands connections over asynchronously: wait until all are counted.
  std::uint64_t curr = 0;
  for (int i = 0; i < 200 && curr < kIdle + 1u; ++i) {
    curr = stat_value(active, "curr_connections");
    if (curr < kIdle + 1u) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GE(curr, kIdle + 1u) << "the server does not hold every connection";
  const long rss1 = rss_kib(s.pid());
  std::cout << "[serve] " << kIdle << " idle connections: server RSS " << rss0 << " KiB -> "
            << rss1 << " KiB, " << (rss1 - rss0) * 1024 / kIdle << " bytes per connection\n";

  EXPECT_EQ(active.cmd("get keep\r\n", "END\r\n"), "VALUE keep 9 4\r\nsafe\r\nEND\r\n");
  std::mt19937 rng(3);
  int served = 0;
  for (int i = 0; i < 100; ++i) {
    Client& c = *idle[rng() % kIdle];
    served += c.cmd("get keep\r\n", "END\r\n") == "VALUE keep 9 4\r\nsafe\r\nEND\r\n";
  }
  EXPECT_EQ(served, 100) << "idle connections chosen at random must still be served";
  // One more than -c allows is refused with memcached's message, and nothing else breaks.
  {
    std::vector<std::unique_ptr<Client>> extra;
    for (int i = 0; i < 100; ++i) extra.push_back(std::make_unique<Client>(s.port()));
    Client over(s.port());
    EXPECT_EQ(over.drain(500), "ERROR Too many open connections\r\n<closed>");
  }
  idle.clear();
  EXPECT_EQ(active.cmd("get keep\r\n", "END\r\n"), "VALUE keep 9 4\r\nsafe\r\nEND\r\n");
  EXPECT_TRUE(s.alive());
  EXPECT_EQ(s.stop(), 0);
  std::filesystem::remove(pool);
}

// A port in the ephemeral range can be held, while the server is down, by an outgoing
// connection that connected to itself (a client retrying the dead server's port from that
// very port). It is no listener: the restart retries the bind meanwhile instead of failing
// with "Address already in use", and starts once the holder aborts (closed with a reset;
// an orderly close leaves the port in TIME_WAIT for 60 s, which the bounded retry does not
// outlast: src/server/README.md, twemproxy).
TEST(ServeConnections, BindRetriesWhileAPortIsHeldBySelfConnect) {
  const int probe = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(probe, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  socklen_t len = sizeof sa;
  ASSERT_EQ(getsockname(probe, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  close(probe);
  // CLOEXEC: the server, forked from this process, must not inherit the holder.
  const int self = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(bind(self, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(connect(self, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << "no self-connect";
  const int port = ntohs(sa.sin_port);
  std::thread release([self] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    const linger abort{1, 0};
    setsockopt(self, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    close(self);
  });
  const std::string pool = temp_path("bindretry") + ".pool";
  std::filesystem::remove(pool);
  ServerProc s;
  const bool started = s.start(pool, {"-t", "1", "-m", "8", "-p", std::to_string(port)});
  release.join();
  ASSERT_TRUE(started) << "the start gave up while the port was held by a self-connect";
  EXPECT_EQ(s.port(), port);
  Client c(port);
  EXPECT_EQ(c.cmd("version\r\n", "\r\n").rfind("VERSION ", 0), 0u);
  EXPECT_EQ(s.stop(), 0);
  std::filesystem::remove(pool);
  std::filesystem::remove(pool + ".port");
}

}  // namespace
}  // namespace wort::test
