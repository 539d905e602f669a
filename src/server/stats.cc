// server/stats.cc — `stats`, `stats settings`, `stats items`, `stats slabs`, `stats reset`
// in memcached's "STAT name value" form (the names memcached uses, where they mean the
// same thing here).
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

#include "server/protocol.h"

namespace wort::server {
namespace {

void stat(std::string& out, std::string_view name, std::string_view v) {
  out.append("STAT ");
  out.append(name);
  out.push_back(' ');
  out.append(v);
  out.append("\r\n");
}
void stat(std::string& out, std::string_view name, std::uint64_t v) {
  stat(out, name, std::to_string(v));
}

}  // namespace

void Session::stats(const Tokens& t, std::string& out) {
  const StoreCounters& sc = store_.counters();
  const std::int64_t now = Store::now();
  if (t.size() == 1) {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    char buf[64];
    stat(out, "pid", static_cast<std::uint64_t>(getpid()));
    stat(out, "uptime", static_cast<std::uint64_t>(now - info_.started));
    stat(out, "time", static_cast<std::uint64_t>(now));
    stat(out, "version", kVersion);
    stat(out, "pointer_size", 64);
    std::snprintf(buf, sizeof buf, "%ld.%06ld", static_cast<long>(ru.ru_utime.tv_sec),
                  static_cast<long>(ru.ru_utime.tv_usec));
    stat(out, "rusage_user", buf);
    std::snprintf(buf, sizeof buf, "%ld.%06ld", static_cast<long>(ru.ru_stime.tv_sec),
                  static_cast<long>(ru.ru_stime.tv_usec));
    stat(out, "rusage_system", buf);
    stat(out, "max_connections", static_cast<std::uint64_t>(info_.maxconns));
    stat(out, "curr_connections", info_.curr_connections);
    stat(out, "total_connections", info_.total_connections);
    stat(out, "rejected_connections", info_.rejected_connections);
    stat(out, "cmd_get", info_.cmd_get);
    stat(out, "cmd_set", info_.cmd_set);
    stat(out, "cmd_flush", info_.cmd_flush);
    stat(out, "cmd_touch", info_.cmd_touch);
    stat(out, "cmd_meta", info_.meta_cmds);
    stat(out, "get_hits", info_.get_hits);
    stat(out, "get_misses", info_.get_misses);
    stat(out, "get_expired", info_.get_expired);
    stat(out, "delete_misses", info_.delete_misses);
    stat(out, "delete_hits", info_.delete_hits);
    stat(out, "incr_misses", info_.incr_misses);
    stat(out, "incr_hits", info_.incr_hits);
    stat(out, "decr_misses", info_.decr_misses);
    stat(out, "decr_hits", info_.decr_hits);
    stat(out, "cas_misses", info_.cas_misses);
    stat(out, "cas_hits", info_.cas_hits);
    stat(out, "cas_badval", info_.cas_badval);
    stat(out, "touch_hits", info_.touch_hits);
    stat(out, "touch_misses", info_.touch_misses);
    stat(out, "bytes_read", info_.bytes_read);
    stat(out, "bytes_written", info_.bytes_written);
    stat(out, "limit_maxbytes", store_.pool_bytes());
    stat(out, "threads", static_cast<std::uint64_t>(info_.threads));
    stat(out, "bytes", sc.bytes);
    stat(out, "curr_items", sc.curr_items);
    stat(out, "total_items", sc.total_items);
    stat(out, "expired_unfetched", sc.expired_unfetched);
    stat(out, "evictions", sc.evictions);
    stat(out, "reclaimed", sc.reclaimed);
    stat(out, "wort_index", store_.kind());
    stat(out, "wort_recovered", store_.recovered() ? 1 : 0);
    out.append("END\r\n");
    return;
  }
  const std::string_view sub = t[1];
  if (sub == "reset") {
    for (auto* c : {&info_.cmd_get, &info_.cmd_set, &info_.cmd_flush, &info_.get_hits,
                    &info_.get_misses, &info_.delete_hits, &info_.delete_misses,
                    &info_.incr_hits, &info_.incr_misses, &info_.decr_hits, &info_.decr_misses,
                    &info_.cas_hits, &info_.cas_misses, &info_.cas_badval, &info_.touch_hits,
                    &info_.touch_misses, &info_.cmd_touch, &info_.bytes_read,
                    &info_.bytes_written, &info_.total_connections, &info_.meta_cmds})
      c->store(0);
    out.append("RESET\r\n");
    return;
  }
  if (sub == "settings") {
    stat(out, "maxbytes", store_.pool_bytes());
    stat(out, "maxconns", static_cast<std::uint64_t>(info_.maxconns));
    stat(out, "tcpport", static_cast<std::uint64_t>(info_.port));
    stat(out, "interface", info_.addr);
    stat(out, "verbosity", static_cast<std::uint64_t>(info_.verbosity.load()));
    stat(out, "evictions", store_.options().no_evict ? "off" : "on");
    stat(out, "num_threads", static_cast<std::uint64_t>(info_.threads));
    stat(out, "cas_enabled", "yes");
    stat(out, "item_size_max", store_.options().max_item_size);
    stat(out, "binding_protocol", "ascii");
    stat(out, "flush_enabled", "yes");
    stat(out, "wort_pool", store_.options().pool_path);
    stat(out, "wort_index", store_.kind());
    out.append("END\r\n");
    return;
  }
  if (sub == "items") {  // one "slab class" here: the allocator sizes blocks itself
    if (sc.curr_items > 0) {
      stat(out, "items:1:number", sc.curr_items);
      stat(out, "items:1:evicted", sc.evictions);
      stat(out, "items:1:reclaimed", sc.reclaimed);
    }
    out.append("END\r\n");
    return;
  }
  if (sub == "slabs") {
    stat(out, "active_slabs", sc.curr_items > 0 ? 1 : 0);
    stat(out, "total_malloced", store_.pool_bytes());
    out.append("END\r\n");
    return;
  }
  reply(out, "ERROR");
}

}  // namespace wort::server
