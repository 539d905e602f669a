// tests/server/server_harness.h — starts `wort serve` as a child process on a loopback port
// it picks itself (-p 0 --port-file), and talks to it over plain sockets. Every wait is
// bounded in time.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace wort::test {

inline std::string wort_binary() { return std::string(WORT_BINARY_DIR) + "/wort"; }
inline std::string source_dir() { return WORT_SOURCE_DIR; }

inline std::string temp_path(const std::string& tag) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/wort-serve-" + tag + "-" +
         std::to_string(getpid());
}

//! Runs a command; its exit status (-1 if it could not run).
inline int run(const std::string& cmd) {
  const int r = std::system(cmd.c_str());
  return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

class ServerProc {
 public:
  ServerProc() = default;
  ServerProc(const ServerProc&) = delete;
  ~ServerProc() { stop(); }

  //! Starts `wort serve --pool pool -p 0 extra...`; false if it did not answer in 20 s.
  bool start(const std::string& pool, std::vector<std::string> extra = {}) {
    port_file_ = pool + ".port";
    std::remove(port_file_.c_str());
    std::vector<std::string> args = {wort_binary(), "serve", "--pool", pool, "-p", "0",
                                     "--port-file", port_file_};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      if (!std::getenv("WORT_SERVE_VERBOSE")) {
        FILE* f = std::freopen("/dev/null", "w", stderr);
        (void)f;
      }
      execv(argv[0], argv.data());
      _exit(127);
    }
    for (int i = 0; i < 2000; ++i) {
      std::ifstream in(port_file_);
      if (in >> port_ && port_ > 0) return true;
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  void kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  //! SIGTERM (clean shutdown), SIGKILL after 10 s. Returns the exit status.
  int stop() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    int st = 0;
    for (int i = 0; i < 1000; ++i) {
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill9();
    return -1;
  }
  bool alive() {
    if (pid_ <= 0) return false;
    return waitpid(pid_, nullptr, WNOHANG) == 0;
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string port_file_;
};

//! A blocking loopback client with timeouts.
class Client {
 public:
  explicit Client(int port, int timeout_ms = 5000) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<std::uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~Client() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  bool send(const std::string& s) {
    std::size_t off = 0;
    while (off < s.size()) {
      const ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<std::size_t>(n);
    }
    return true;
  }
  //! Reads until the received bytes end with `suffix` (or timeout / close).
  std::string read_until(const std::string& suffix) {
    std::string out;
    char buf[65536];
    while (!(out.size() >= suffix.size() &&
             out.compare(out.size() - suffix.size(), suffix.size(), suffix) == 0)) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }
  //! Reads until `lines` CRLF-terminated lines have arrived (values count as lines).
  std::string read_lines(std::size_t lines) {
    std::string out;
    char buf[65536];
    auto count = [&] {
      std::size_t c = 0;
      for (std::size_t p = 0; (p = out.find("\r\n", p)) != std::string::npos; p += 2) ++c;
      return c;
    };
    while (count() < lines) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }
  //! Reads whatever arrives within `ms` of quiet.
  std::string drain(int ms = 200) {
    std::string out;
    char buf[65536];
    for (int i = 0; i < 1000; ++i) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, ms) <= 0) break;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        out += "<closed>";
        break;
      }
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }
  std::string cmd(const std::string& req, const std::string& suffix) {
    send(req);
    return read_until(suffix);
  }

 private:
  int fd_ = -1;
};

}  // namespace wort::test
