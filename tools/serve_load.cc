// tools/serve_load.cc — a small closed-loop load generator for memcached-protocol servers
// (`wort serve`, Debian's memcached), built and driven by tools/serve-load.sh.
//
//   serve_load HOST PORT [--conns N] [--seconds S] [--max-ops N] [--get-ratio G] [--set-ratio S]
//              [--keys K] [--value-bytes B] [--key-bytes 20] [--preload] [--seed X]
//              [--expect-hits]
//
// Each connection is its own thread with one request outstanding (no pipelining): it picks
// get or set by the ratio, a key uniformly from K keys of --key-bytes bytes (the WORT
// paper's 20-byte keys), sends it and waits for the whole reply; the time from send to the
// end of the reply is one latency sample. --preload first sets every key once (untimed),
// so gets hit. Bounded: stops after --seconds or --max-ops, whichever comes first.
// Output: one line of key=value pairs (ops/s, p50/p99/p99.9 in microseconds, per op kind,
// gets that hit and missed). A get answered by a bare END is a miss; a miss fails the run
// (exit 3, with a message) when no miss was expected: with --preload, or --expect-hits
// (the keys were preloaded by an earlier run). Exit 1: a request failed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Opts {
  std::string host = "127.0.0.1";
  int port = 11211;
  int conns = 4;
  double seconds = 5;
  std::uint64_t max_ops = 10'000'000;
  int get_ratio = 10, set_ratio = 1;
  std::uint64_t keys = 50'000;
  std::size_t value_bytes = 32;
  std::size_t key_bytes = 20;
  bool preload = false;
  bool expect_hits = false;  // the keys were preloaded: a miss fails the run
  std::uint64_t seed = 1;
};

int connect_to(const Opts& o) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(o.port));
  inet_pton(AF_INET, o.host.c_str(), &sa.sin_addr);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    std::perror("connect");
    std::exit(2);
  }
  return fd;
}

std::string key_of(const Opts& o, std::uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "k%019llu", static_cast<unsigned long long>(i));
  std::string k(buf);
  k.resize(o.key_bytes, 'x');
  return k;
}

bool send_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

enum class Reply { hit, miss, error };

//! Reads one reply: a line, and for VALUE the data block and END. A set is a hit when
//! STORED; a get when a VALUE came, a miss on a bare END; anything else is an error.
Reply read_reply(int fd, std::string& buf, bool is_get) {
  buf.clear();
  char tmp[65536];
  for (;;) {
    if (!is_get) {
      if (buf.size() >= 2 && buf.compare(buf.size() - 2, 2, "\r\n") == 0)
        return buf == "STORED\r\n" ? Reply::hit : Reply::error;
    } else if (buf.size() >= 2 && buf.rfind("VALUE ", 0) != 0 &&
               buf.compare(buf.size() - 2, 2, "\r\n") == 0) {
      return buf == "END\r\n" ? Reply::miss : Reply::error;  // a line that is no VALUE
    } else if (buf.size() >= 5 && buf.compare(buf.size() - 5, 5, "END\r\n") == 0) {
      // a VALUE block whose declared length has fully arrived
      const std::size_t sp = buf.rfind(' ', buf.find("\r\n"));
      const std::size_t len = std::strtoull(buf.c_str() + sp + 1, nullptr, 10);
      if (buf.size() >= buf.find("\r\n") + 2 + len + 2 + 5) return Reply::hit;
    }
    const ssize_t n = recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) return Reply::error;
    buf.append(tmp, static_cast<std::size_t>(n));
  }
}

struct Samples {
  std::vector<std::uint32_t> get_ns, set_ns;  // in units of 10 ns (fits 42 s)
  std::uint64_t hits = 0, misses = 0, errors = 0;
};

double pct(std::vector<std::uint32_t>& v, double p) {
  if (v.empty()) return 0;
  const std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(p * v.size()));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i] / 100.0;  // microseconds
}

}  // namespace

int main(int argc, char** argv) {
  Opts o;
  if (argc < 3) {
    std::fprintf(stderr, "usage: serve_load HOST PORT [options] (see the source's header)\n");
    return 2;
  }
  o.host = argv[1];
  o.port = std::atoi(argv[2]);
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--conns") o.conns = std::stoi(next());
    else if (a == "--seconds") o.seconds = std::stod(next());
    else if (a == "--max-ops") o.max_ops = std::stoull(next());
    else if (a == "--get-ratio") o.get_ratio = std::stoi(next());
    else if (a == "--set-ratio") o.set_ratio = std::stoi(next());
    else if (a == "--keys") o.keys = std::stoull(next());
    else if (a == "--value-bytes") o.value_bytes = std::stoull(next());
    else if (a == "--key-bytes") o.key_bytes = std::stoull(next());
    else if (a == "--preload") o.preload = true;
    else if (a == "--expect-hits") o.expect_hits = true;
    else if (a == "--seed") o.seed = std::stoull(next());
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  const std::string value(o.value_bytes, 'v');
  auto set_req = [&](const std::string& k) {
    return "set " + k + " 0 0 " + std::to_string(value.size()) + "\r\n" + value + "\r\n";
  };
  if (o.preload) {  // untimed, one connection per thread, pipelined in batches
    std::vector<std::thread> th;
    for (int c = 0; c < o.conns; ++c)
      th.emplace_back([&, c] {
        const int fd = connect_to(o);
        std::string buf;
        for (std::uint64_t i = c; i < o.keys; i += o.conns) {
          if (!send_all(fd, set_req(key_of(o, i))) || read_reply(fd, buf, false) != Reply::hit) {
            std::fprintf(stderr, "preload failed at key %llu: %s\n",
                         static_cast<unsigned long long>(i), buf.c_str());
            std::exit(1);
          }
        }
        close(fd);
      });
    for (auto& t : th) t.join();
  }
  std::atomic<std::uint64_t> ops{0};
  std::atomic<bool> stop{false};
  std::atomic<int> finished{0};
  std::vector<Samples> samples(static_cast<std::size_t>(o.conns));
  std::vector<std::thread> th;
  const auto t0 = std::chrono::steady_clock::now();
  for (int c = 0; c < o.conns; ++c)
    th.emplace_back([&, c] {
      const int fd = connect_to(o);
      std::mt19937_64 rng(o.seed * 1000 + static_cast<std::uint64_t>(c));
      Samples& s = samples[static_cast<std::size_t>(c)];
      s.get_ns.reserve(1 << 20);
      s.set_ns.reserve(1 << 18);
      std::string buf, req;
      while (!stop.load(std::memory_order_relaxed)) {
        if (ops.fetch_add(1, std::memory_order_relaxed) >= o.max_ops) break;
        const std::string k = key_of(o, rng() % o.keys);
        const bool is_get = static_cast<int>(rng() % (o.get_ratio + o.set_ratio)) < o.get_ratio;
        req = is_get ? "get " + k + "\r\n" : set_req(k);
        const auto a = std::chrono::steady_clock::now();
        if (!send_all(fd, req)) { ++s.errors; break; }
        const Reply r = read_reply(fd, buf, is_get);
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now() - a).count();
        if (r == Reply::error) {
          ++s.errors;
          if (buf.empty()) break;
        } else if (is_get) {
          ++(r == Reply::hit ? s.hits : s.misses);
        }
        (is_get ? s.get_ns : s.set_ns).push_back(static_cast<std::uint32_t>(ns / 10));
      }
      close(fd);
      finished.fetch_add(1, std::memory_order_relaxed);
    });
  // Until --seconds pass or every connection stopped at --max-ops (then the time is the
  // work's, not the bound's).
  const auto bound = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(o.seconds));
  while (std::chrono::steady_clock::now() < bound &&
         finished.load(std::memory_order_relaxed) < o.conns)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  stop = true;
  for (auto& t : th) t.join();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Samples all;
  for (auto& s : samples) {
    all.get_ns.insert(all.get_ns.end(), s.get_ns.begin(), s.get_ns.end());
    all.set_ns.insert(all.set_ns.end(), s.set_ns.begin(), s.set_ns.end());
    all.hits += s.hits;
    all.misses += s.misses;
    all.errors += s.errors;
  }
  std::vector<std::uint32_t> both = all.get_ns;
  both.insert(both.end(), all.set_ns.begin(), all.set_ns.end());
  const std::size_t n = both.size();
  std::printf("ops=%zu seconds=%.2f kops_s=%.1f p50_us=%.1f p99_us=%.1f p999_us=%.1f "
              "get_p50_us=%.1f get_p99_us=%.1f get_p999_us=%.1f "
              "set_p50_us=%.1f set_p99_us=%.1f set_p999_us=%.1f gets=%zu sets=%zu hits=%llu "
              "misses=%llu errors=%llu\n",
              n, secs, n / secs / 1000.0, pct(both, 0.5), pct(both, 0.99), pct(both, 0.999),
              pct(all.get_ns, 0.5), pct(all.get_ns, 0.99), pct(all.get_ns, 0.999),
              pct(all.set_ns, 0.5), pct(all.set_ns, 0.99), pct(all.set_ns, 0.999),
              all.get_ns.size(), all.set_ns.size(), static_cast<unsigned long long>(all.hits),
              static_cast<unsigned long long>(all.misses),
              static_cast<unsigned long long>(all.errors));
  if (all.errors != 0) return 1;
  if (all.misses != 0 && (o.preload || o.expect_hits)) {
    std::fprintf(stderr,
                 "serve_load: %llu of %zu gets missed, but every key was stored before (%s): "
                 "the server lost or evicted keys\n",
                 static_cast<unsigned long long>(all.misses), all.get_ns.size(),
                 o.preload ? "--preload" : "--expect-hits");
    return 3;
  }
  return 0;
}
