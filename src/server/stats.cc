// server/stats.cc — `stats`, `stats settings`, `stats items`, `stats slabs`, `stats sizes`,
// `stats conns`, `stats reset` in memcached's "STAT name value" form (the names memcached
// uses, where they mean the same thing here; a counter wort does not keep is left out
// rather than reported as 0).
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <vector>

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
  if (t.size() == 1) {
    stats_process(out);
    stats_counters(out);
    out.append("END\r\n");
    return;
  }
  const std::string_view sub = t[1];
  if (sub == "reset") return stats_reset(out);
  if (sub == "settings") return stats_settings(out);
  if (sub == "items" || sub == "slabs" || sub == "sizes") return stats_classes(sub, out);
  if (sub == "conns") {
    if (info_.list_conns) info_.list_conns(out);
    out.append("END\r\n");
    return;
  }
  reply(out, "ERROR");
}

void Session::stats_process(std::string& out) {
  const std::int64_t now = Store::now();
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
  stat(out, "connection_structures", info_.curr_connections);
}

void Session::stats_counters(std::string& out) {
  const StoreCounters& sc = store_.counters();
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
  stat(out, "store_too_large", info_.store_too_large);
  stat(out, "store_no_memory", info_.store_no_memory);
  stat(out, "bytes_read", info_.bytes_read);
  stat(out, "bytes_written", info_.bytes_written);
  stat(out, "limit_maxbytes", store_.item_limit());
  stat(out, "accepting_conns", 1);      // never paused: a connection over -c is refused
  stat(out, "listen_disabled_num", 0);  // (rejected_connections counts those)
  stat(out, "threads", static_cast<std::uint64_t>(info_.threads));
  stat(out, "bytes", sc.bytes);
  stat(out, "curr_items", sc.curr_items);
  stat(out, "total_items", sc.total_items);
  stat(out, "expired_unfetched", sc.expired_unfetched);
  stat(out, "evictions", sc.evictions);
  stat(out, "reclaimed", sc.reclaimed);
  stat(out, "wort_items_corrupt", sc.items_corrupt);
  stat(out, "wort_index", store_.kind());
  stat(out, "wort_recovered", store_.recovered() ? 1 : 0);
}

void Session::stats_reset(std::string& out) {
  for (auto* c : {&info_.cmd_get, &info_.cmd_set, &info_.cmd_flush, &info_.get_hits,
                  &info_.get_misses, &info_.delete_hits, &info_.delete_misses,
                  &info_.incr_hits, &info_.incr_misses, &info_.decr_hits, &info_.decr_misses,
                  &info_.cas_hits, &info_.cas_misses, &info_.cas_badval, &info_.touch_hits,
                  &info_.touch_misses, &info_.cmd_touch, &info_.bytes_read,
                  &info_.bytes_written, &info_.total_connections, &info_.meta_cmds,
                  &info_.store_too_large, &info_.store_no_memory})
    c->store(0);
  out.append("RESET\r\n");
}

void Session::stats_settings(std::string& out) {
  stat(out, "maxbytes", store_.item_limit());
  stat(out, "maxconns", static_cast<std::uint64_t>(info_.maxconns));
  stat(out, "tcpport", static_cast<std::uint64_t>(info_.port));
  stat(out, "interface", info_.addr);
  stat(out, "verbosity", static_cast<std::uint64_t>(info_.verbosity.load()));
  stat(out, "evictions", store_.options().no_evict ? "off" : "on");
  stat(out, "num_threads", static_cast<std::uint64_t>(info_.threads));
  stat(out, "cas_enabled", "yes");
  stat(out, "item_size_max", store_.options().max_item_size);
  stat(out, "binding_protocol", "ascii");
  stat(out, "flush_enabled", info_.flush_enabled ? "yes" : "no");
  stat(out, "wort_pool", store_.options().pool_path);
  stat(out, "wort_index", store_.kind());
  out.append("END\r\n");
}

void Session::stats_classes(std::string_view sub, std::string& out) {
  // One walk of the index (O(items)): per item size class (memcached's slab class: the
  // allocator's apart classes, numbered from 1; large spans of whole chunks after the
  // last), or per 32-byte item size (memcached's `stats sizes` buckets).
  const pm::SizeClasses& cl = store_.size_classes();
  const std::size_t first = cl.apart_first();
  const std::size_t large = cl.count() - first + 1;
  struct Class {
    std::uint64_t items = 0, requested = 0, block = 0;
  };
  std::map<std::size_t, Class> classes;
  std::map<std::uint32_t, std::uint64_t> sizes;
  store_.for_each_item_size([&](std::uint32_t item, std::uint32_t block) {
    if (sub == "sizes") {
      ++sizes[(item + 31) / 32 * 32];
      return;
    }
    Class& c = classes[block <= cl.max_small() ? cl.apart_class_of(block) - first + 1 : large];
    ++c.items;
    c.requested += item;
    c.block += block;
  });
  if (sub == "sizes") {
    for (const auto& [size, n] : sizes) stat(out, std::to_string(size), n);
  } else if (sub == "items") {
    for (const auto& [id, c] : classes) {
      const std::string p = "items:" + std::to_string(id) + ":";
      stat(out, p + "number", c.items);
      stat(out, p + "mem_requested", c.requested);
    }
  } else {
    for (const auto& [id, c] : classes) {
      const std::string p = std::to_string(id) + ":";
      if (id == large) {  // spans of whole chunks, each its own size
        stat(out, p + "chunk_size", c.block / c.items);
        stat(out, p + "chunks_per_page", 1);
      } else {
        stat(out, p + "chunk_size", cl.size(first + id - 1));
        stat(out, p + "chunks_per_page", cl.blocks_per_chunk(first + id - 1));
      }
      stat(out, p + "used_chunks", c.items);
      stat(out, p + "mem_requested", c.requested);
    }
    const pm::AllocatorStats a = store_.allocator_stats();
    stat(out, "active_slabs", classes.size());
    stat(out, "total_malloced", a.bytes_allocated);
  }
  out.append("END\r\n");
}

}  // namespace wort::server
