// server/server.cc — sockets, the per-worker epoll loops, the sweeper.
#include "server/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <unordered_map>

namespace wort::server {

std::atomic<bool> g_stop_requested{false};

namespace {

constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::size_t kOutLimit = 4u << 20;  // stop parsing while this much waits unsent
constexpr int kPollMs = 100;                 // loops wake this often to see stop()

struct Conn {
  int fd = -1;
  std::string in;
  std::size_t in_off = 0;
  std::string out;
  std::size_t out_off = 0;
  Session session;
  bool want_out = false;
  std::string peer;                        // "tcp:ADDR:PORT" (stats conns)
  std::atomic<std::int64_t> last_cmd{0};   // unix seconds of the last input (stats conns)
  Conn(int f, Store& s, ServerInfo& i) : fd(f), session(s, i) {}
};

std::string addr_string(const sockaddr_in& sa) {
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
  return std::string("tcp:") + ip + ":" + std::to_string(ntohs(sa.sin_port));
}

void set_nonblock(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

//! True if a socket listens on `sa` (0.0.0.0: on loopback): a connect succeeds. A port
//! held only by a connected or merely bound socket refuses the connect.
bool someone_listens(sockaddr_in sa) {
  if (sa.sin_addr.s_addr == htonl(INADDR_ANY)) sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;  // cannot tell: do not wait
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  close(fd);
  return ok;
}

}  // namespace

struct Server::Worker {
  Server& srv;
  int ep = -1;
  int efd = -1;
  std::mutex qlock;
  std::vector<int> queue;
  std::unordered_map<int, std::unique_ptr<Conn>> conns;  // changed by this worker only,
  std::mutex reg;  // under this lock (stats conns reads it from another worker)
  std::vector<char> rbuf = std::vector<char>(kReadChunk);
  std::thread th;

  explicit Worker(Server& s) : srv(s) {
    ep = epoll_create1(EPOLL_CLOEXEC);
    efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = efd;
    epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
  }
  ~Worker() {
    for (auto& [fd, c] : conns) close(fd);
    close(ep);
    close(efd);
  }
  void hand(int fd) {
    {
      std::lock_guard g(qlock);
      queue.push_back(fd);
    }
    const std::uint64_t one = 1;
    [[maybe_unused]] auto r = write(efd, &one, sizeof one);
  }
  void adopt() {
    std::uint64_t v;
    [[maybe_unused]] auto r = read(efd, &v, sizeof v);
    std::vector<int> fds;
    {
      std::lock_guard g(qlock);
      fds.swap(queue);
    }
    for (int fd : fds) {
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.fd = fd;
      if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        close(fd);
        --srv.info_.curr_connections;
        continue;
      }
      auto c = std::make_unique<Conn>(fd, *srv.store_, srv.info_);
      sockaddr_in sa{};
      socklen_t len = sizeof sa;
      if (getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0) c->peer = addr_string(sa);
      c->last_cmd.store(Store::now(), std::memory_order_relaxed);
      std::lock_guard g(reg);
      conns.emplace(fd, std::move(c));
    }
  }
  void drop(Conn& c) {
    epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    --srv.info_.curr_connections;
    std::lock_guard g(reg);
    conns.erase(c.fd);  // destroys c
  }
  //! Sends what is pending; false if the connection failed.
  bool flush_out(Conn& c) {
    while (c.out_off < c.out.size()) {
      const ssize_t n = send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off,
                             MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        if (errno == EINTR) continue;
        return false;
      }
      c.out_off += static_cast<std::size_t>(n);
      srv.info_.bytes_written += static_cast<std::uint64_t>(n);
    }
    if (c.out_off == c.out.size()) {
      c.out.clear();
      c.out_off = 0;
    }
    const bool pending = !c.out.empty();
    if (pending != c.want_out) {
      epoll_event ev{};
      ev.events = (pending ? EPOLLOUT : EPOLLIN) | EPOLLRDHUP;  // not reading while blocked
      ev.data.fd = c.fd;
      epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
      c.want_out = pending;
    }
    return true;
  }
  //! Parses what is buffered. The replies are sent before the next read.
  void process(Conn& c) {
    c.last_cmd.store(Store::now(), std::memory_order_relaxed);
    const std::string_view pending(c.in.data() + c.in_off, c.in.size() - c.in_off);
    c.in_off += c.session.feed(pending, c.out, kOutLimit);
    if (c.in_off == c.in.size()) {
      c.in.clear();
      c.in_off = 0;
    } else if (c.in_off > c.in.size() / 2) {
      c.in.erase(0, c.in_off);
      c.in_off = 0;
    }
  }
  void on_event(int fd, std::uint32_t events) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    Conn& c = *it->second;
    if (events & EPOLLOUT) {
      if (!flush_out(c)) return drop(c);
      if (!c.out.empty()) return;
      process(c);  // input held back while the client was not reading
      if (!flush_out(c)) return drop(c);
      if (c.session.closing() && c.out.empty()) return drop(c);
      return;
    }
    if (c.want_out) return;
    bool eof = false;
    for (int round = 0; round < 4; ++round) {  // bounded: other connections get their turn
      // Into the worker's buffer, then append what came: resizing c.in by a whole chunk
      // would zero 64 KiB per read (memset was 5% of a set-heavy profile).
      const ssize_t n = recv(fd, rbuf.data(), rbuf.size(), 0);
      if (n <= 0) {
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) eof = true;
        break;
      }
      c.in.append(rbuf.data(), static_cast<std::size_t>(n));
      srv.info_.bytes_read += static_cast<std::uint64_t>(n);
      process(c);
      if (!flush_out(c)) return drop(c);
      if (c.session.closing() || c.want_out) break;
      if (static_cast<std::size_t>(n) < kReadChunk) break;
    }
    if (c.session.closing()) {
      flush_out(c);
      return drop(c);
    }
    if (eof) return drop(c);
  }
  void loop() {
    epoll_event evs[128];
    while (!srv.stop_.load(std::memory_order_relaxed)) {
      const int n = epoll_wait(ep, evs, 128, kPollMs);
      for (int i = 0; i < n; ++i) {
        if (evs[i].data.fd == efd) adopt();
        else on_event(evs[i].data.fd, evs[i].events);
      }
    }
  }
};

Result<void> Server::bind_socket(sockaddr_in* sa) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error{Status::io_error, std::string("socket: ") + std::strerror(errno)};
  listen_fd_ = fd;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  *sa = sockaddr_in{};
  sa->sin_family = AF_INET;
  sa->sin_port = htons(static_cast<std::uint16_t>(opts_.port));
  if (inet_pton(AF_INET, opts_.addr.c_str(), &sa->sin_addr) != 1)
    return Error{Status::invalid_argument, "-l: not an IPv4 address: " + opts_.addr};
  // A port in the kernel's ephemeral range (32768-60999 by default) can be taken by an
  // outgoing connection while the server is down, even by one that connected to itself
  // (a client retrying the dead server's port from that very port). Such a holder is not a
  // listener and goes away when its owner gives up: retry for a bounded time.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(opts_.bind_retry_ms);
  bool warned = false;
  while (bind(fd, reinterpret_cast<sockaddr*>(sa), sizeof *sa) != 0) {
    const int err = errno;
    if (err != EADDRINUSE || opts_.port == 0 || std::chrono::steady_clock::now() >= deadline ||
        someone_listens(*sa))
      return Error{Status::io_error, "cannot listen on " + opts_.addr + ":" +
                                         std::to_string(opts_.port) + ": " + std::strerror(err)};
    if (!warned) {
      std::fprintf(stderr,
                   "wort serve: %s:%d is held by a socket that is not listening (an outgoing "
                   "connection?); retrying for up to %d ms\n",
                   opts_.addr.c_str(), opts_.port, opts_.bind_retry_ms);
      warned = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return {};
}

void Server::list_conns(std::string& out) {
  const std::int64_t now = Store::now();
  auto line = [&](int fd, const char* name, const std::string& v) {
    out += "STAT " + std::to_string(fd) + ":" + name + " " + v + "\r\n";
  };
  sockaddr_in la{};
  socklen_t len = sizeof la;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&la), &len);
  const std::string listen_addr = addr_string(la);
  line(listen_fd_, "addr", listen_addr);
  line(listen_fd_, "state", "conn_listening");
  for (auto& w : workers_) {
    std::lock_guard g(w->reg);
    for (auto& [fd, c] : w->conns) {
      line(fd, "addr", c->peer);
      line(fd, "listen_addr", listen_addr);
      line(fd, "secs_since_last_cmd",
           std::to_string(now - c->last_cmd.load(std::memory_order_relaxed)));
    }
  }
}

Result<std::unique_ptr<Server>> Server::start(const ServerOptions& opts) {
  std::unique_ptr<Server> s(new Server());
  s->opts_ = opts;
  // Bind first (a port in use or an address not ours fails before a pool is created);
  // listen only once the store is open and recovered: no connection is accepted before.
  sockaddr_in sa{};
  if (auto r = s->bind_socket(&sa); !r) return r.error();
  auto st = Store::open(opts.store);
  if (!st) return st.error();
  s->store_ = std::move(st).value();
  if (listen(s->listen_fd_, opts.backlog) != 0)
    return Error{Status::io_error, "cannot listen on " + opts.addr + ":" +
                                       std::to_string(opts.port) + ": " + std::strerror(errno)};
  socklen_t len = sizeof sa;
  getsockname(s->listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
  s->port_ = ntohs(sa.sin_port);
  s->info_.addr = opts.addr;
  s->info_.port = s->port_;
  s->info_.threads = opts.threads;
  s->info_.maxconns = opts.maxconns;
  s->info_.verbosity = opts.verbosity;
  s->info_.flush_enabled = opts.flush_enabled;
  s->info_.started = Store::now();
  Server* self = s.get();
  s->info_.list_conns = [self](std::string& out) { self->list_conns(out); };
  return s;
}

Server::~Server() {
  stop();
  for (auto& w : workers_)
    if (w->th.joinable()) w->th.join();
  workers_.clear();
  if (listen_fd_ >= 0) close(listen_fd_);
}

void Server::accept_loop() {
  std::size_t next = 0;
  set_nonblock(listen_fd_);
  epoll_event ev{};
  ev.events = EPOLLIN;
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd_, &ev);
  while (!stop_.load() && !g_stop_requested.load()) {
    epoll_event out[1];
    if (epoll_wait(ep, out, 1, kPollMs) <= 0) continue;
    for (int i = 0; i < 256; ++i) {  // drain the backlog, bounded
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;
      if (info_.curr_connections.load() >= static_cast<std::uint64_t>(opts_.maxconns)) {
        static constexpr char kMsg[] = "ERROR Too many open connections\r\n";
        [[maybe_unused]] auto r = send(fd, kMsg, sizeof kMsg - 1, MSG_NOSIGNAL);
        close(fd);
        ++info_.rejected_connections;
        continue;
      }
      const int nd = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nd, sizeof nd);
      ++info_.curr_connections;
      ++info_.total_connections;
      workers_[next++ % workers_.size()]->hand(fd);
    }
  }
  close(ep);
}

void Server::sweep_loop() {
  using namespace std::chrono;
  auto last = steady_clock::now();
  while (!stop_.load()) {
    std::this_thread::sleep_for(milliseconds(kPollMs));
    if (steady_clock::now() - last < seconds(1)) continue;
    last = steady_clock::now();
    store_->sweep(10000);  // bounded batch per second
  }
}

int Server::run() {
  const int n = std::max(1, opts_.threads);
  for (int i = 0; i < n; ++i) workers_.push_back(std::make_unique<Worker>(*this));
  for (auto& w : workers_) w->th = std::thread([&w] { w->loop(); });
  std::thread sweeper([this] { sweep_loop(); });
  if (!opts_.port_file.empty()) {
    const std::string tmp = opts_.port_file + ".tmp";
    { std::ofstream(tmp) << port_ << "\n"; }
    std::rename(tmp.c_str(), opts_.port_file.c_str());
  }
  accept_loop();
  stop();
  sweeper.join();
  for (auto& w : workers_) w->th.join();
  workers_.clear();
  return 0;
}

}  // namespace wort::server
