// server/protocol.h — memcached's text protocol (and its meta commands) over a Store,
// independent of sockets: a Session takes the bytes a connection received, runs every
// complete request in them and appends the replies. A request may be split across reads
// at any byte; requests may be pipelined.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "server/store.h"

namespace wort::server {

//! Server-wide settings and counters that `stats` reports.
struct ServerInfo {
  // settings
  std::string addr = "127.0.0.1";
  int port = 11211;
  int threads = 4;
  int maxconns = 1024;
  std::int64_t started = 0;  // unix time
  std::atomic<int> verbosity{0};
  bool flush_enabled = true;  // -F clears it: flush_all answers CLIENT_ERROR
  //! `stats conns`: appends the listener's and every connection's STAT lines (the server
  //! sets it; empty in a Session without one).
  std::function<void(std::string&)> list_conns;
  // counters
  std::atomic<std::uint64_t> curr_connections{0}, total_connections{0},
      rejected_connections{0}, cmd_get{0}, cmd_set{0}, cmd_flush{0}, get_hits{0},
      get_misses{0}, get_expired{0}, delete_hits{0}, delete_misses{0}, incr_hits{0},
      incr_misses{0}, decr_hits{0}, decr_misses{0}, cas_hits{0}, cas_misses{0},
      cas_badval{0}, touch_hits{0}, touch_misses{0}, cmd_touch{0}, bytes_read{0},
      bytes_written{0}, meta_cmds{0}, store_too_large{0}, store_no_memory{0};
};

inline constexpr std::size_t kMaxLine = 2048;        // memcached's limit for non-get lines
//! A multi-get line may be this long before the connection closes (memcached: no bound).
inline constexpr std::size_t kMaxGetLine = 64u << 20;
inline constexpr const char* kVersion = "1.6.18-wort";

class Session {
 public:
  Session(Store& store, ServerInfo& info) : store_(store), info_(info) {}

  //! Runs every complete request in `in`; appends replies to `out`. Returns the bytes
  //! consumed (the caller keeps the rest and calls again with more appended). Stops early
  //! once `out` exceeds `out_limit` (a client that does not read) or the session closes.
  std::size_t feed(std::string_view in, std::string& out, std::size_t out_limit = 4u << 20);
  //! quit, or a protocol violation that memcached answers by closing.
  bool closing() const noexcept { return closing_; }

 private:
  using Tokens = std::vector<std::string_view>;
  //! One request starting at in[0]; 0 = incomplete.
  std::size_t step(std::string_view in, std::string& out);
  void command(const Tokens& t, std::string& out);
  std::size_t storage(const Tokens& t, std::string_view rest, std::string& out, std::size_t line);
  void get(const Tokens& t, std::size_t first_key, bool with_cas, const std::int64_t* touch,
           std::string& out);
  void del(const Tokens& t, std::string& out);
  //! A store's reply (and its counters) for the classic storage commands.
  void storage_reply(StoreResult r, bool is_cas, std::string& out);
  //! wort_audit: the allocator audit on the live server.
  void audit(std::string& out);
  //! verbosity N [noreply] (2 or 3 tokens checked by the caller).
  void verbosity(const Tokens& t, std::string& out);
  void arith(const Tokens& t, bool incr, std::string& out);
  void touch(const Tokens& t, std::string& out);
  void flush_all(const Tokens& t, std::string& out);
  void stats(const Tokens& t, std::string& out);
  //! stats' parts: the process and connections, the counters, `stats reset`, `stats
  //! settings`, and `stats items|slabs|sizes` (one walk of the items).
  void stats_process(std::string& out);
  void stats_counters(std::string& out);
  void stats_reset(std::string& out);
  void stats_settings(std::string& out);
  void stats_classes(std::string_view sub, std::string& out);
  // meta commands (meta.cc)
  std::size_t meta(const Tokens& t, std::string_view rest, std::string& out, std::size_t line);
  void meta_get(const Tokens& t, std::string& out);
  std::size_t meta_set(const Tokens& t, std::string_view rest, std::string& out, std::size_t line);
  void meta_delete(const Tokens& t, std::string& out);
  void meta_arith(const Tokens& t, std::string& out);
  void meta_debug(const Tokens& t, std::string& out);
  void reply(std::string& out, std::string_view s);

  Store& store_;
  ServerInfo& info_;
  bool noreply_ = false;
  bool closing_ = false;
  std::size_t swallow_ = 0;  // bytes of a refused value still to skip
  std::size_t scanned_ = 0;  // bytes of the pending request known to hold no newline
};

// Number parsing as memcached's safe_strto* do it (util.c).
bool safe_strtoull(std::string_view s, std::uint64_t* out);
bool safe_strtoul32(std::string_view s, std::uint32_t* out);
bool safe_strtol32(std::string_view s, std::int32_t* out);
bool safe_strtoll(std::string_view s, std::int64_t* out);
//! An exptime as memcached 1.6 reads one (safe_strtol into an int32_t): any number that
//! fits 64 bits, truncated to its low 32 bits (9999999999 -> 1410065407, an absolute time in
//! the past; 4294967295 -> -1). A value length is read with safe_strtol32 (refused outside
//! int32) instead.
bool parse_exptime(std::string_view s, std::int32_t* out);

}  // namespace wort::server
