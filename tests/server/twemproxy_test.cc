// tests/server/twemproxy_test.cc — scale-out with memcached's own tools: three `wort serve`
// on loopback behind twemproxy (Debian's `nutcracker`, ketama distribution). A writer
// stores keys through the proxy and records every STORED; in the middle one server is
// killed with SIGKILL (the proxy answers errors for its keys meanwhile: those sets are not
// acknowledged) and restarted on its pool and port; then every acknowledged key is read
// back through the proxy with its value. Skipped when nutcracker is not installed.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "server_harness.h"

namespace wort::test {
namespace {

//! A loopback port nobody listens on right now (bound, read, closed: a small race that
//! the caller covers by retrying).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  socklen_t len = sizeof sa;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  close(fd);
  return ntohs(sa.sin_port);
}

class Proxy {
 public:
  ~Proxy() { stop(); }
  bool start(const std::string& dir, const std::vector<int>& ports) {
    for (int attempt = 0; attempt < 5; ++attempt) {
      port_ = free_port();
      const std::string conf = dir + "/nutcracker.yml";
      {
        std::ofstream f(conf);
        f << "wort:\n  listen: 127.0.0.1:" << port_
          << "\n  hash: fnv1a_64\n  distribution: ketama\n  timeout: 2000\n"
             "  auto_eject_hosts: false\n  server_retry_timeout: 200\n"
             "  server_failure_limit: 1\n  servers:\n";
        for (std::size_t i = 0; i < ports.size(); ++i)
          f << "   - 127.0.0.1:" << ports[i] << ":1 s" << i << "\n";
      }
      const std::string stats = std::to_string(free_port());
      pid_ = fork();
      if (pid_ == 0) {
        execlp("nutcracker", "nutcracker", "-c", conf.c_str(), "-o", (dir + "/nc.log").c_str(),
               "-p", (dir + "/nc.pid").c_str(), "-s", stats.c_str(), "-a", "127.0.0.1",
               static_cast<char*>(nullptr));
        _exit(127);
      }
      for (int i = 0; i < 200; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (waitpid(pid_, nullptr, WNOHANG) == pid_) break;
        if (Client(port_).ok()) return true;
      }
      stop();
    }
    return false;
  }
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

std::string value_of(int i) { return "value-" + std::to_string(i * 7919) + std::string(i % 50, 'x'); }

TEST(Twemproxy, ThreeServersOneKilledAndRestartedEveryAcknowledgedKeyReadsBack) {
  if (run("command -v nutcracker >/dev/null") != 0)
    GTEST_SKIP() << "nutcracker (twemproxy) not installed (tools/install-deps.sh)";
  const std::string dir = temp_path("twem");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ServerProc srv[3];
  std::vector<int> ports;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(srv[i].start(dir + "/s" + std::to_string(i) + ".pool", {"-t", "1", "-m", "16"}));
    ports.push_back(srv[i].port());
  }
  Proxy proxy;
  ASSERT_TRUE(proxy.start(dir, ports)) << "nutcracker did not start (see " << dir << "/nc.log)";

  constexpr int kKeys = 3000, kKillAt = 1500;
  std::map<std::string, std::string> acked;
  int refused = 0;
  auto c = std::make_unique<Client>(proxy.port(), 3000);
  ASSERT_TRUE(c->ok());
  for (int i = 0; i < kKeys; ++i) {
    if (i == kKillAt) srv[1].kill9();  // its keys fail at the proxy until it is back
    if (i == kKillAt + 300) {
      ASSERT_TRUE(srv[1].start(dir + "/s1.pool", {"-t", "1", "-m", "16", "-p",
                                                  std::to_string(ports[1])}));
    }
    const std::string k = "twem:" + std::to_string(i), v = value_of(i);
    const std::string r = c->cmd("set " + k + " 0 0 " + std::to_string(v.size()) + "\r\n" + v +
                                     "\r\n",
                                 "\r\n");
    if (r == "STORED\r\n") {
      acked[k] = v;
    } else {
      ++refused;
      if (r.empty()) c = std::make_unique<Client>(proxy.port(), 3000);  // proxy closed us
    }
  }
  EXPECT_GT(refused, 0) << "the kill should have refused some sets";
  EXPECT_GT(acked.size(), static_cast<std::size_t>(kKeys * 2 / 3));
  // Every acknowledged key reads back (a request may fail while the proxy's retry timer
  // for the restarted server runs: retried, bounded).
  std::size_t missing = 0;
  for (const auto& [k, v] : acked) {
    const std::string want = "VALUE " + k + " 0 " + std::to_string(v.size()) + "\r\n" + v +
                             "\r\nEND\r\n";
    std::string got;
    for (int attempt = 0; attempt < 50 && got != want; ++attempt) {
      if (attempt) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      got = c->cmd("get " + k + "\r\n", "END\r\n");
      if (got.empty() || got.rfind("SERVER_ERROR", 0) == 0)
        c = std::make_unique<Client>(proxy.port(), 3000);
      else if (got == "END\r\n") break;  // a definite miss: lost
    }
    if (got != want && ++missing <= 5) ADD_FAILURE() << k << ": " << got;
  }
  EXPECT_EQ(missing, 0u) << "of " << acked.size() << " acknowledged keys";
  std::cout << "[twemproxy] " << acked.size() << " acknowledged, " << refused
            << " refused while s1 was down, " << missing << " missing after the restart\n";
  proxy.stop();
  for (auto& s : srv) EXPECT_EQ(s.stop(), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace wort::test
