// server/protocol.cc — the classic text commands, byte-for-byte as memcached 1.6 answers
// them (proto_text.c): the error strings, which errors swallow the value that follows, and
// which replies `noreply` suppresses (all of them, as memcached's out_string does).
#include "server/protocol.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace wort::server {
namespace {

constexpr std::string_view kBadFormat = "CLIENT_ERROR bad command line format";

void tokenize(std::string_view line, std::vector<std::string_view>& t) {
  t.clear();
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const std::size_t b = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > b) t.push_back(line.substr(b, i - b));
  }
}

bool is_get_line(std::string_view in) {
  std::size_t i = 0;
  while (i < in.size() && in[i] == ' ' && i <= 100) ++i;
  if (i > 100) return false;
  in.remove_prefix(i);
  return in.starts_with("get ") || in.starts_with("gets ");
}

// memcached's rule for a request line it does not know (proto_text.c): if its last token
// starts with "HTTP/" the connection closes without a reply, so that a browser or an HTTP
// client tricked into talking to the cache cannot drive it. "Does not know" is memcached's
// dispatch: any command of 2 or more bytes that starts with g, s, a, c, i, d or t, a
// 2-byte command starting with m, and the names below are known (a wrong form of them is
// an ERROR). Its tokenizer keeps 23 tokens; the 23rd then counts as the last.
bool looks_like_http(const std::vector<std::string_view>& t) {
  const std::string_view c = t[0];
  if (c.size() < 2) return false;
  if (std::string_view("gsacidt").find(c[0]) != std::string_view::npos) return false;
  if (c[0] == 'm' && c.size() == 2) return false;
  for (std::string_view known : {"replace", "prepend", "bget", "flush_all", "version", "quit",
                                 "lru_crawler", "watch", "verbosity", "lru", "extstore"})
    if (c == known) return false;
  const std::string_view last = t.size() > 23 ? t[22] : t.back();
  return last.starts_with("HTTP/");
}

void append_u64(std::string& out, std::uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// strto* need a NUL-terminated string; tokens are short (a line is <= kMaxLine or a key).
template <class F>
bool with_cstr(std::string_view s, F f) {
  if (s.size() > 64) return false;
  char buf[65];
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  return f(buf);
}

}  // namespace

bool safe_strtoull(std::string_view s, std::uint64_t* out) {
  return with_cstr(s, [&](const char* str) {
    errno = 0;
    char* end = nullptr;
    const unsigned long long l = std::strtoull(str, &end, 10);
    if (errno == ERANGE) return false;
    if (std::isspace(static_cast<unsigned char>(*end)) || (*end == '\0' && end != str)) {
      if (static_cast<long long>(l) < 0 && std::strchr(str, '-') != nullptr) return false;
      *out = l;
      return true;
    }
    return false;
  });
}

bool safe_strtoul32(std::string_view s, std::uint32_t* out) {
  return with_cstr(s, [&](const char* str) {
    errno = 0;
    char* end = nullptr;
    const unsigned long l = std::strtoul(str, &end, 10);
    if (errno == ERANGE) return false;
    if (std::isspace(static_cast<unsigned char>(*end)) || (*end == '\0' && end != str)) {
      if (static_cast<long>(l) < 0 && std::strchr(str, '-') != nullptr) return false;
      *out = static_cast<std::uint32_t>(l);
      return true;
    }
    return false;
  });
}

bool safe_strtoll(std::string_view s, std::int64_t* out) {
  return with_cstr(s, [&](const char* str) {
    errno = 0;
    char* end = nullptr;
    const long long l = std::strtoll(str, &end, 10);
    if (errno == ERANGE) return false;
    if (std::isspace(static_cast<unsigned char>(*end)) || (*end == '\0' && end != str)) {
      *out = l;
      return true;
    }
    return false;
  });
}

bool safe_strtol32(std::string_view s, std::int32_t* out) {
  std::int64_t v = 0;
  if (!safe_strtoll(s, &v) || v > INT32_MAX || v < INT32_MIN) return false;
  *out = static_cast<std::int32_t>(v);
  return true;
}

bool parse_exptime(std::string_view s, std::int32_t* out) {
  std::int64_t v = 0;
  if (!safe_strtoll(s, &v)) return false;
  // memcached's safe_strtol: a long (64 bits) stored into an int32_t, i.e. the low 32 bits.
  *out = static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(v)));
  return true;
}

void Session::reply(std::string& out, std::string_view s) {
  if (noreply_) return;
  out.append(s);
  out.append("\r\n");
}

std::size_t Session::feed(std::string_view in, std::string& out, std::size_t out_limit) {
  std::size_t used = 0;
  while (used < in.size() && !closing_ && out.size() <= out_limit) {
    const std::size_t n = step(in.substr(used), out);
    if (n == 0) break;
    used += n;
  }
  return used;
}

std::size_t Session::step(std::string_view in, std::string& out) {
  if (swallow_ > 0) {
    const std::size_t n = std::min(swallow_, in.size());
    swallow_ -= n;
    return n;
  }
  if (in[0] == '\x80') {
    // The binary protocol's request magic. Only the text protocol is spoken here: answer
    // as memcached answers a command it does not know, and close at once (a binary client
    // sees the reply is not binary and fails instead of waiting for a newline).
    out.append("ERROR\r\n");
    closing_ = true;
    return in.size();
  }
  const std::size_t nl = in.find('\n', scanned_);
  if (nl == std::string_view::npos) {
    // memcached: no newline in the first 2 KB is only allowed for a (large) multi-get;
    // anything else closes the connection. The scan resumes where it stopped: a long
    // multi-get line arriving in pieces is read once.
    scanned_ = in.size();
    if ((in.size() > kMaxLine && !is_get_line(in)) || in.size() > kMaxGetLine) closing_ = true;
    return 0;
  }
  scanned_ = 0;
  std::string_view line = in.substr(0, nl);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // memcached reads the request line as a C string: it ends at the first NUL (a key with a
  // NUL in it is cut there; `set a\0b 0 0 1` has too few tokens and is an ERROR).
  line = line.substr(0, line.find('\0'));
  Tokens t;
  tokenize(line, t);
  noreply_ = false;
  if (t.empty()) {
    reply(out, "ERROR");
    return nl + 1;
  }
  const std::string_view c = t[0];
  if (c == "set" || c == "add" || c == "replace" || c == "append" || c == "prepend" ||
      c == "cas")
    return storage(t, in.substr(nl + 1), out, nl + 1);
  if (c.size() == 2 && c[0] == 'm') return meta(t, in.substr(nl + 1), out, nl + 1);
  command(t, out);
  noreply_ = false;
  return nl + 1;
}

void Session::command(const Tokens& t, std::string& out) {
  const std::string_view c = t[0];
  const std::size_t n = t.size();
  if (c == "get" || c == "gets") {
    if (n < 2) return reply(out, "ERROR");
    return get(t, 1, c == "gets", nullptr, out);
  }
  if (c == "gat" || c == "gats") {
    if (n < 2) return reply(out, "ERROR");
    std::int32_t e = 0;
    if (!parse_exptime(t[1], &e)) return reply(out, "CLIENT_ERROR invalid exptime argument");
    const std::int64_t abs = Store::absolute_exptime(e);
    return get(t, 2, c == "gats", &abs, out);
  }
  if (c == "delete") {
    if (n < 2 || n > 4) return reply(out, "ERROR");
    return del(t, out);
  }
  if (c == "incr" || c == "decr") {
    if (n < 3 || n > 4) return reply(out, "ERROR");
    return arith(t, c == "incr", out);
  }
  if (c == "touch") {
    if (n < 3 || n > 4) return reply(out, "ERROR");
    return touch(t, out);
  }
  if (c == "stats") return stats(t, out);
  if (c == "flush_all") {
    if (n > 3) return reply(out, "ERROR");
    return flush_all(t, out);
  }
  if (c == "version") return reply(out, std::string("VERSION ") + kVersion);
  if (c == "wort_audit" && n == 1) return audit(out);
  if (c == "quit") {
    closing_ = true;
    return;
  }
  if (c == "bget") {  // memcached keeps this ancient alias of get
    if (n < 2) return reply(out, "ERROR");
    return get(t, 1, false, nullptr, out);
  }
  if (c == "verbosity") {
    if (n < 2 || n > 3) return reply(out, "ERROR");
    return verbosity(t, out);
  }
  if (looks_like_http(t)) {  // memcached's defence against cross-protocol requests
    closing_ = true;
    return;
  }
  reply(out, "ERROR");
}

void Session::audit(std::string& out) {
  const pm::AuditReport a = store_.audit();
  if (a.ok()) return reply(out, "OK");
  std::string d = a.describe();
  for (char& ch : d)
    if (ch == '\r' || ch == '\n') ch = ' ';
  reply(out, "SERVER_ERROR audit: " + d);
}

void Session::verbosity(const Tokens& t, std::string& out) {
  noreply_ = t.back() == "noreply";
  // memcached: a number (not negative) or CLIENT_ERROR; the level is capped at 2
  // (MAX_VERBOSITY_LEVEL). The cap applies to the whole 64-bit number: memcached caps it
  // after truncating it to 32 bits (4294967297 -> 1); wort says 2.
  std::uint64_t level = 0;
  if (!safe_strtoull(t[1], &level)) return reply(out, kBadFormat);
  info_.verbosity = static_cast<int>(std::min<std::uint64_t>(level, 2));
  reply(out, "OK");
}

void Session::get(const Tokens& t, std::size_t first, bool with_cas, const std::int64_t* touch,
                  std::string& out) {
  const std::size_t mark = out.size();
  for (std::size_t i = first; i < t.size(); ++i) {
    const std::string_view key = t[i];
    if (key.size() > kMaxKeyLength) {  // memcached drops the values already found
      out.resize(mark);
      return reply(out, kBadFormat);
    }
    ++info_.cmd_get;
    if (touch) ++info_.cmd_touch;
    const bool hit = store_.get(
        key,
        [&](const ItemView& it) {
          out.append("VALUE ");
          out.append(it.key);
          out.push_back(' ');
          append_u64(out, it.flags);
          out.push_back(' ');
          append_u64(out, it.value.size());
          if (with_cas) {
            out.push_back(' ');
            append_u64(out, it.cas);
          }
          out.append("\r\n");
          out.append(it.value);
          out.append("\r\n");
        },
        touch);
    if (hit) {
      ++info_.get_hits;
      if (touch) ++info_.touch_hits;
    } else {
      ++info_.get_misses;
      if (touch) ++info_.touch_misses;
    }
  }
  out.append("END\r\n");
}

std::size_t Session::storage(const Tokens& t, std::string_view rest, std::string& out,
                             std::size_t line) {
  const bool is_cas = t[0] == "cas";
  const std::size_t want = is_cas ? 6 : 5;
  if (t.size() != want && t.size() != want + 1) {
    reply(out, "ERROR");
    return line;
  }
  noreply_ = t.back() == "noreply";
  const std::string_view key = t[1];
  std::uint32_t flags = 0;
  std::int32_t exptime = 0, vlen = 0;
  std::uint64_t cas_in = 0;
  if (key.size() > kMaxKeyLength || !safe_strtoul32(t[2], &flags) ||
      !parse_exptime(t[3], &exptime) || !safe_strtol32(t[4], &vlen) ||
      (is_cas && !safe_strtoull(t[5], &cas_in)) || vlen < 0 || vlen > INT32_MAX - 2) {
    reply(out, kBadFormat);
    noreply_ = false;
    return line;
  }
  const std::size_t total = static_cast<std::size_t>(vlen) + 2;
  if (!store_.fits(key.size(), static_cast<std::size_t>(vlen))) {
    reply(out, "SERVER_ERROR object too large for cache");
    ++info_.store_too_large;
    if (t[0] == "set") store_.remove(key);  // memcached drops the stale value of a failed set
    noreply_ = false;
    swallow_ = total;
    return line;
  }
  if (rest.size() < total) return 0;  // wait for the whole value; the line is parsed again
  ++info_.cmd_set;
  if (rest.substr(static_cast<std::size_t>(vlen), 2) != "\r\n") {
    reply(out, "CLIENT_ERROR bad data chunk");
    noreply_ = false;
    return line + total;
  }
  StoreMode mode = StoreMode::set;
  if (t[0] == "add") mode = StoreMode::add;
  else if (t[0] == "replace") mode = StoreMode::replace;
  else if (t[0] == "append") mode = StoreMode::append;
  else if (t[0] == "prepend") mode = StoreMode::prepend;
  else if (is_cas) mode = StoreMode::cas;
  const StoreResult r = store_.store(mode, key, flags, Store::absolute_exptime(exptime),
                                     rest.substr(0, static_cast<std::size_t>(vlen)), cas_in);
  storage_reply(r, is_cas, out);
  noreply_ = false;
  return line + total;
}

void Session::storage_reply(StoreResult r, bool is_cas, std::string& out) {
  switch (r) {
    case StoreResult::stored: reply(out, "STORED"); if (is_cas) ++info_.cas_hits; break;
    case StoreResult::not_stored: reply(out, "NOT_STORED"); break;
    case StoreResult::exists: reply(out, "EXISTS"); ++info_.cas_badval; break;
    case StoreResult::not_found: reply(out, "NOT_FOUND"); ++info_.cas_misses; break;
    case StoreResult::too_large:
      reply(out, "SERVER_ERROR object too large for cache");
      ++info_.store_too_large;
      break;
    case StoreResult::no_memory:
      reply(out, "SERVER_ERROR out of memory storing object");
      ++info_.store_no_memory;
      break;
  }
}

void Session::del(const Tokens& t, std::string& out) {
  const std::size_t n = t.size();
  if (n > 2) {
    const bool hold_is_zero = t[2] == "0";
    noreply_ = t.back() == "noreply";
    const bool valid = (n == 3 && (hold_is_zero || noreply_)) ||
                       (n == 4 && hold_is_zero && noreply_);
    if (!valid)
      return reply(out, "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]");
  }
  if (t[1].size() > kMaxKeyLength) return reply(out, kBadFormat);
  const StoreResult r = store_.remove(t[1]);
  if (r == StoreResult::stored) {
    ++info_.delete_hits;
    reply(out, "DELETED");
  } else if (r == StoreResult::no_memory) {  // the index could not remove (pool full)
    reply(out, "SERVER_ERROR out of memory");
  } else {
    ++info_.delete_misses;
    reply(out, "NOT_FOUND");
  }
}

void Session::arith(const Tokens& t, bool incr, std::string& out) {
  noreply_ = t.back() == "noreply";
  if (t[1].size() > kMaxKeyLength) return reply(out, kBadFormat);
  std::uint64_t d = 0;
  if (!safe_strtoull(t[2], &d)) return reply(out, "CLIENT_ERROR invalid numeric delta argument");
  DeltaOut x;
  switch (store_.delta(t[1], incr, d, &x)) {
    case DeltaResult::ok:
      ++(incr ? info_.incr_hits : info_.decr_hits);
      return reply(out, std::to_string(x.value));
    case DeltaResult::not_found:
      ++(incr ? info_.incr_misses : info_.decr_misses);
      return reply(out, "NOT_FOUND");
    case DeltaResult::non_numeric:
      return reply(out, "CLIENT_ERROR cannot increment or decrement non-numeric value");
    case DeltaResult::exists: return reply(out, "EXISTS");
    case DeltaResult::no_memory: return reply(out, "SERVER_ERROR out of memory");
  }
}

void Session::touch(const Tokens& t, std::string& out) {
  noreply_ = t.back() == "noreply";
  if (t[1].size() > kMaxKeyLength) return reply(out, kBadFormat);
  std::int32_t e = 0;
  if (!parse_exptime(t[2], &e)) return reply(out, "CLIENT_ERROR invalid exptime argument");
  ++info_.cmd_touch;
  if (store_.touch(t[1], Store::absolute_exptime(e))) {
    ++info_.touch_hits;
    reply(out, "TOUCHED");
  } else {
    ++info_.touch_misses;
    reply(out, "NOT_FOUND");
  }
}

void Session::flush_all(const Tokens& t, std::string& out) {
  noreply_ = t.back() == "noreply";
  ++info_.cmd_flush;  // memcached counts a refused flush_all too
  if (!info_.flush_enabled) return reply(out, "CLIENT_ERROR flush_all not allowed");
  std::int32_t delay = 0;
  if (t.size() != (noreply_ ? 2u : 1u) && !parse_exptime(t[1], &delay))
    return reply(out, "CLIENT_ERROR invalid exptime argument");
  store_.flush_all(delay > 0 ? Store::absolute_exptime(delay) : 0);
  reply(out, "OK");
}

}  // namespace wort::server
