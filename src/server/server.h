// server/server.h — `wort serve`: a listener thread that accepts on loopback (or the
// address given) and hands each connection to one of `threads` workers round-robin, as
// memcached does; each worker runs its own epoll loop over its connections. A sweeper
// thread reclaims expired items in bounded batches.
#pragma once

#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/protocol.h"
#include "server/store.h"

namespace wort::server {

struct ServerOptions {
  StoreOptions store;
  std::string addr = "127.0.0.1";
  int port = 11211;         //!< 0: pick a free port (see port_file)
  int threads = 4;
  int maxconns = 1024;
  std::string port_file;    //!< written with the bound port once the server answers
  int backlog = 1024;       //!< listen(2) backlog (-b)
  int verbosity = 0;        //!< -v: the initial `verbosity` (nothing logs)
  bool flush_enabled = true;  //!< -F clears it
  //! A port held by a socket that is not listening (an outgoing connection that took it
  //! from the ephemeral range, e.g. a proxy's self-connect after the server was killed) is
  //! retried this long; a port another listener holds fails at once.
  int bind_retry_ms = 5000;
};

class Server {
 public:
  //! Opens (recovers) the store and binds; the server answers once run() starts.
  static Result<std::unique_ptr<Server>> start(const ServerOptions& opts);
  ~Server();
  //! Serves until stop() (or SIGINT/SIGTERM via request_stop_from_signal()).
  int run();
  void stop() noexcept { stop_.store(true); }
  int port() const noexcept { return port_; }
  Store& store() noexcept { return *store_; }

  struct Worker;

 private:
  Server() = default;
  void accept_loop();
  void sweep_loop();
  //! start's first step: the listening socket, bound (retried while a non-listener holds
  //! the port, up to bind_retry_ms) but not yet listening.
  Result<void> bind_socket(sockaddr_in* sa);
  //! `stats conns`: the listener and every connection (each worker's registry locked).
  void list_conns(std::string& out);

  ServerOptions opts_;
  ServerInfo info_;
  std::unique_ptr<Store> store_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<std::unique_ptr<Worker>> workers_;
};

//! Set by the signal handler serve installs; run() polls it.
extern std::atomic<bool> g_stop_requested;

}  // namespace wort::server
