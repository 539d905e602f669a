// server/meta.cc — memcached's meta commands (mg, ms, md, ma, me, mn) as memcached 1.6
// answers them (proto_text.c, checked byte for byte against Debian's 1.6.18 by
// tests/server/replies_vs_memcached.py): the flag parser shared by all of them (duplicate
// and unknown flags, bad tokens), the return flags in request order, `q` hiding only the
// nominal reply (HD, or EN for mg), and errors always sent.
#include <charconv>
#include <climits>

#include "server/protocol.h"

namespace wort::server {
namespace {

constexpr std::string_view kBadFormat = "CLIENT_ERROR bad command line format";
constexpr std::size_t kMaxOptTokens = 20;   // memcached's MFLAG_MAX_OPT_LENGTH (tokens + 1)
constexpr std::size_t kMaxOpaque = 32;      // MFLAG_MAX_OPAQUE_LENGTH

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  if (c == '=') return 64;
  return -1;
}

//! Base64 as memcached's decoder reads it: characters outside the alphabet are skipped,
//! the rest must come in groups of four, '=' pads the last group. False = undecodable.
bool b64_decode(std::string_view in, std::string* out) {
  out->clear();
  int group[4];
  int n = 0, count = 0;
  for (char c : in)
    if (b64_value(c) >= 0) ++count;
  if (count == 0 || count % 4 != 0) return false;
  for (char c : in) {
    const int v = b64_value(c);
    if (v < 0) continue;
    group[n++] = v;
    if (n < 4) continue;
    n = 0;
    if (group[0] == 64 || group[1] == 64) return false;
    out->push_back(static_cast<char>((group[0] << 2) | (group[1] >> 4)));
    if (group[2] == 64) break;
    out->push_back(static_cast<char>(((group[1] & 15) << 4) | (group[2] >> 2)));
    if (group[3] == 64) break;
    out->push_back(static_cast<char>(((group[2] & 3) << 6) | group[3]));
  }
  return !out->empty();
}

void b64_encode(std::string_view in, std::string& out) {
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const auto a = static_cast<unsigned char>(in[i]), b = static_cast<unsigned char>(in[i + 1]),
               c = static_cast<unsigned char>(in[i + 2]);
    out.push_back(kB64[a >> 2]);
    out.push_back(kB64[((a & 3) << 4) | (b >> 4)]);
    out.push_back(kB64[((b & 15) << 2) | (c >> 6)]);
    out.push_back(kB64[c & 63]);
  }
  if (i < in.size()) {
    const auto a = static_cast<unsigned char>(in[i]);
    const auto b = i + 1 < in.size() ? static_cast<unsigned char>(in[i + 1]) : 0;
    out.push_back(kB64[a >> 2]);
    out.push_back(kB64[((a & 3) << 4) | (b >> 4)]);
    out.push_back(i + 1 < in.size() ? kB64[(b & 15) << 2] : '=');
    out.push_back('=');
  }
}

template <class T>
void append_num(std::string& out, T v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

//! " k<key>", base64 with a trailing " b" for a binary key (memcached's META_KEY).
void append_key(std::string& out, std::string_view key, bool binary) {
  out.append(" k");
  if (!binary) {
    out.append(key);
    return;
  }
  b64_encode(key, out);
  out.append(" b");
}

//! What the flags of one meta request ask for (memcached's struct _meta_flags).
struct MetaFlags {
  bool has_error = false, no_update = false, vivify = false, value = false, stale = false,
       no_reply = false, has_cas = false, new_ttl = false, key_binary = false,
       recache = false, ttl_after_vivify = false;
  char mode = 0;
  std::int64_t exptime = 0, autoviv = 0, recache_at = 0;  // absolute
  std::uint32_t client_flags = 0;
  std::uint64_t cas = 0, delta = 1, initial = 0;
  std::string key;  // decoded when `b`
};

//! A flag with a number (F C J D) or a mode (M): parses it into `f`; false if `o` is none
//! of them.
bool number_flag(char o, std::string_view tok, MetaFlags& f, std::string_view& err) {
  const std::string_view arg = tok.substr(1);
  auto bad = [&](std::string_view e) {
    err = e;
    f.has_error = true;
  };
  switch (o) {
    case 'F':
      if (!safe_strtoul32(arg, &f.client_flags)) f.has_error = true;
      return true;
    case 'C':
      if (!safe_strtoull(arg, &f.cas)) bad("CLIENT_ERROR bad token in command line format");
      else f.has_cas = true;
      return true;
    case 'M':
      if (tok.size() != 2) bad("CLIENT_ERROR incorrect length for M token");
      else f.mode = tok[1];
      return true;
    case 'J':
      if (!safe_strtoull(arg, &f.initial)) bad("CLIENT_ERROR invalid numeric initial value");
      return true;
    case 'D':
      if (!safe_strtoull(arg, &f.delta)) bad("CLIENT_ERROR invalid numeric delta value");
      return true;
    default: return false;
  }
}

//! One flag token of a meta command (not F C J D M: number_flag). False: not a flag.
bool other_flag(char o, std::string_view tok, std::string_view key_tok, MetaFlags& f,
                std::string_view& err) {
  auto time_token = [&](std::int64_t* out) {
    std::int32_t v = 0;
    if (!parse_exptime(tok.substr(1), &v)) {
      err = "CLIENT_ERROR bad token in command line format";
      f.has_error = true;
      return false;
    }
    *out = Store::absolute_exptime(v);
    return true;
  };
  switch (o) {
    case 'b':
      if (!b64_decode(key_tok, &f.key)) {
        err = "CLIENT_ERROR error decoding key";
        f.has_error = true;
        f.key.clear();
      }
      f.key_binary = true;
      return true;
    case 'N':
      f.vivify = true;
      time_token(&f.autoviv);
      return true;
    case 'T':
      if (time_token(&f.exptime)) {
        f.new_ttl = true;
        f.ttl_after_vivify = f.vivify;
      }
      return true;
    case 'R':
      if (time_token(&f.recache_at)) f.recache = true;
      return true;
    case 'l': case 'O': case 'P': case 'L': case 'k': case 's': case 't': case 'c':
    case 'f': case 'h':
      return true;
    case 'v': f.value = true; return true;
    case 'u': f.no_update = true; return true;
    case 'q': f.no_reply = true; return true;
    case 'I': f.stale = true; return true;
    default: return false;
  }
}

//! memcached's _meta_flag_preparse: returns false with `err` set on a bad request. Flags
//! are the first character of each token from `start` on; the key may be base64 (b).
bool preparse(const std::vector<std::string_view>& t, std::size_t start, MetaFlags& f,
              std::string_view& err) {
  bool seen[127] = {};
  f.key.assign(t[1]);
  for (std::size_t i = start; i < t.size(); ++i) {
    const auto o = static_cast<unsigned char>(t[i][0]);
    if (o >= 127 || seen[o]) {
      err = "CLIENT_ERROR duplicate flag";
      return false;
    }
    seen[o] = true;
    const char c = static_cast<char>(o);
    if (!number_flag(c, t[i], f, err) && !other_flag(c, t[i], t[1], f, err)) {
      err = "CLIENT_ERROR invalid flag";
      return false;
    }
  }
  // The server's own meta block is reachable by no text key, nor by a decoded one.
  if (!f.has_error && f.key == kMetaKey) {
    err = "CLIENT_ERROR error decoding key";
    f.has_error = true;
  }
  return !f.has_error;
}

void error_line(std::string& out, std::string_view e) {
  out.append(e);
  out.append("\r\n");
}

//! The opaque and key return flags of a reply that has no item (EN, NF, EX, ...).
bool append_opaque_key(const std::vector<std::string_view>& t, const MetaFlags& f,
                       std::string& line) {
  for (std::size_t i = 2; i < t.size(); ++i) {
    if (t[i][0] == 'O') {
      if (t[i].size() > kMaxOpaque) return false;
      line.push_back(' ');
      line.append(t[i]);
    } else if (t[i][0] == 'k') {
      append_key(line, f.key, f.key_binary);
    }
  }
  return true;
}

}  // namespace

std::size_t Session::meta(const Tokens& t, std::string_view rest, std::string& out,
                          std::size_t line) {
  const std::string_view c = t[0];
  if (c == "mn") {
    ++info_.meta_cmds;
    out.append("MN\r\n");
  } else if (c == "mg") {
    meta_get(t, out);
  } else if (c == "ms") {
    return meta_set(t, rest, out, line);
  } else if (c == "md") {
    meta_delete(t, out);
  } else if (c == "ma") {
    meta_arith(t, out);
  } else if (c == "me") {
    meta_debug(t, out);
  } else {
    reply(out, "ERROR");
  }
  return line;
}

namespace {

//! mg's reply for a hit (or an item N created): the flags' return values in request order,
//! then Z, X, W, and the value if asked for. Returns whether this call wins the recache
//! token (W); `*error` set: an opaque token too long (nothing appended).
bool mg_hit_reply(const std::vector<std::string_view>& t, const MetaFlags& f, const ItemView& it, std::int64_t now,
                  std::string& out, std::string_view* error) {
  std::string line;
  if (f.value) {
    line = "VA ";
    append_num(line, it.value.size());
  } else {
    line = "HD";
  }
  std::int64_t exp = it.exptime;  // as memcached applies T and N in flag order
  bool won = false;
  for (std::size_t i = 2; i < t.size(); ++i) {
    switch (t[i][0]) {
      case 'T': exp = f.exptime; break;
      case 'N':
        if (it.created) {
          exp = f.autoviv;
          won = true;
        }
        break;
      case 'R':
        if (!it.token_sent && !it.created && exp != 0 && exp < f.recache_at) won = true;
        break;
      case 's': line.append(" s"); append_num(line, it.value.size()); break;
      case 't':
        line.append(" t");
        if (exp == 0) line.append("-1");
        else append_num(line, static_cast<std::uint32_t>(exp - now));
        break;
      case 'c': line.append(" c"); append_num(line, it.cas); break;
      case 'f': line.append(" f"); append_num(line, it.flags); break;
      case 'l': line.append(" l"); append_num(line, it.last_access); break;
      case 'h': line.append(it.was_hit_before ? " h1" : " h0"); break;
      case 'O':
        if (t[i].size() > kMaxOpaque) {
          *error = "CLIENT_ERROR opaque token too long";
          return false;
        }
        line.push_back(' ');
        line.append(t[i]);
        break;
      case 'k': append_key(line, it.key, it.iflags & kItemKeyBinary); break;
      default: break;
    }
  }
  if (it.token_sent) line.append(" Z");
  if (it.iflags & kItemStale) {
    line.append(" X");
    if (!it.token_sent) won = true;  // a stale item hands out a token
  }
  if (won) line.append(" W");
  line.append("\r\n");
  out.append(line);
  if (f.value) {
    out.append(it.value);
    out.append("\r\n");
  }
  return won;
}

}  // namespace

void Session::meta_get(const Tokens& t, std::string& out) {
  if (t.size() < 2) return error_line(out, "ERROR");
  if (t[1].size() > kMaxKeyLength) return error_line(out, kBadFormat);
  if (t.size() + 1 > kMaxOptTokens)
    return error_line(out, "CLIENT_ERROR options flags are too long");
  MetaFlags f;
  std::string_view err = kBadFormat;
  if (!preparse(t, 2, f, err)) return error_line(out, err);
  ++info_.meta_cmds;
  ++info_.cmd_get;
  MetaGetOptions o;
  o.no_update = f.no_update;
  o.may_win = f.recache;
  o.ttl = f.new_ttl ? &f.exptime : nullptr;
  o.vivify = f.vivify ? &f.autoviv : nullptr;
  o.ttl_after_vivify = f.ttl_after_vivify;
  o.key_iflags = f.key_binary ? kItemKeyBinary : 0;
  const std::int64_t now = Store::now();
  std::string_view error;
  const bool hit = store_.meta_get(f.key, o, [&](const ItemView& it) {
    return mg_hit_reply(t, f, it, now, out, &error);
  });
  if (!error.empty()) return error_line(out, error);
  if (hit) {
    ++info_.get_hits;
    return;
  }
  ++info_.get_misses;
  std::string line = "EN";
  if (!append_opaque_key(t, f, line)) return error_line(out, "CLIENT_ERROR opaque token too long");
  if (f.no_reply) return;
  out.append(line);
  out.append("\r\n");
}

namespace {

//! ms's request line before its flags: the key and the data length (memcached's order of
//! checks). Returns the error to answer, or nothing.
std::string_view ms_check_line(const std::vector<std::string_view>& t, std::int32_t* vlen) {
  if (t.size() < 2) return "ERROR";
  if (t[1].size() > kMaxKeyLength || t.size() == 2) return kBadFormat;
  if (t.size() + 1 > kMaxOptTokens) return "CLIENT_ERROR options flags too long";
  if (!safe_strtol32(t[2], vlen) || *vlen < 0 || *vlen > INT_MAX - 2) return kBadFormat;
  return {};
}

//! ms's M token (0: none given) as a store mode; false if it is no mode.
bool ms_mode(char m, StoreMode* mode) {
  switch (m) {
    case 0: case 'S': *mode = StoreMode::set; return true;
    case 'E': *mode = StoreMode::add; return true;
    case 'A': *mode = StoreMode::append; return true;
    case 'P': *mode = StoreMode::prepend; return true;
    case 'R': *mode = StoreMode::replace; return true;
    default: return false;
  }
}

//! ms's reply to a store that ran (stored, exists, not found, not stored) with the return
//! flags O, k, c in request order.
std::string ms_reply_line(const std::vector<std::string_view>& t, const MetaFlags& f,
                          StoreResult r, std::uint64_t cas) {
  std::string reply_line = r == StoreResult::stored   ? "HD"
                           : r == StoreResult::exists ? "EX"
                           : r == StoreResult::not_found ? "NF"
                                                         : "NS";
  for (std::size_t i = 2; i < t.size(); ++i) {
    switch (t[i][0]) {
      case 'O': reply_line.push_back(' '); reply_line.append(t[i]); break;
      case 'k': append_key(reply_line, f.key, f.key_binary); break;
      case 'c': reply_line.append(" c"); append_num(reply_line, cas); break;
      default: break;
    }
  }
  return reply_line;
}

}  // namespace

std::size_t Session::meta_set(const Tokens& t, std::string_view rest, std::string& out,
                              std::size_t line) {
  std::int32_t vlen = 0;
  if (const std::string_view e = ms_check_line(t, &vlen); !e.empty()) {
    error_line(out, e);  // the data line is not swallowed: memcached reads it as a command
    return line;
  }
  const std::size_t total = static_cast<std::size_t>(vlen) + 2;
  MetaFlags f;
  std::string_view err = kBadFormat;
  auto refuse = [&](std::string_view e) {
    error_line(out, e);
    swallow_ = total;
    return line;
  };
  if (!preparse(t, 3, f, err)) return refuse(err);
  bool opaque_too_long = false;
  for (std::size_t i = 2; i < t.size(); ++i)
    if (t[i][0] == 'O' && t[i].size() > kMaxOpaque) opaque_too_long = true;
  StoreMode mode = StoreMode::set;
  if (!ms_mode(f.mode, &mode)) return refuse("CLIENT_ERROR invalid mode for ms M token");
  if (opaque_too_long) return refuse("CLIENT_ERROR opaque token too long");
  if (f.has_cas && (mode == StoreMode::set || mode == StoreMode::replace)) mode = StoreMode::cas;
  if (!store_.fits(f.key.size(), static_cast<std::size_t>(vlen))) {
    store_.remove(f.key);  // memcached drops the old value of a failed meta set
    return refuse("SERVER_ERROR object too large for cache");
  }
  if (rest.size() < total) return 0;  // wait for the whole value; the line is parsed again
  ++info_.meta_cmds;
  ++info_.cmd_set;
  if (rest.substr(static_cast<std::size_t>(vlen), 2) != "\r\n") {
    error_line(out, "CLIENT_ERROR bad data chunk");
    return line + total;
  }
  std::uint64_t cas = 0;
  const StoreResult r = store_.store(
      mode, f.key, f.client_flags, f.new_ttl ? f.exptime : 0,
      rest.substr(0, static_cast<std::size_t>(vlen)), mode == StoreMode::add ? 0 : f.cas, &cas,
      f.stale && mode == StoreMode::cas, f.key_binary ? kItemKeyBinary : 0);
  if (r == StoreResult::too_large || r == StoreResult::no_memory) {
    store_.remove(f.key);
    error_line(out, r == StoreResult::too_large ? "SERVER_ERROR object too large for cache"
                                                 : "SERVER_ERROR out of memory storing object");
    return line + total;
  }
  if (r == StoreResult::stored && f.no_reply) return line + total;
  error_line(out, ms_reply_line(t, f, r, cas));
  return line + total;
}

void Session::meta_delete(const Tokens& t, std::string& out) {
  if (t.size() < 2) return error_line(out, "ERROR");
  if (t[1].size() > kMaxKeyLength) return error_line(out, kBadFormat);
  if (t.size() + 1 > kMaxOptTokens) return error_line(out, "CLIENT_ERROR options flags too long");
  MetaFlags f;
  std::string_view err = kBadFormat;
  if (!preparse(t, 2, f, err)) return error_line(out, "CLIENT_ERROR invalid or duplicate flag");
  std::string flags;
  if (!append_opaque_key(t, f, flags)) return error_line(out, "CLIENT_ERROR opaque token too long");
  ++info_.meta_cmds;
  const StoreResult r = store_.meta_delete(f.key, f.has_cas, f.cas, f.stale,
                                           f.new_ttl ? &f.exptime : nullptr);
  std::string line;
  switch (r) {
    case StoreResult::stored:
      ++info_.delete_hits;
      if (f.no_reply) return;
      line = "HD";
      break;
    case StoreResult::exists: ++info_.delete_misses; line = "EX"; break;
    case StoreResult::not_found: ++info_.delete_misses; line = "NF"; break;
    default:  // md I could not build the stale copy (pool full and -M)
      return error_line(out, "SERVER_ERROR out of memory");
  }
  line.append(flags);
  error_line(out, line);
}

namespace {

//! ma's reply line for a delta that ran (VA with the number's length, or HD) with the return
//! flags in request order (T and N as memcached applies them, in flag order). False: an
//! opaque token too long.
bool ma_ok_line(const std::vector<std::string_view>& t, const MetaFlags& f, const DeltaOut& d,
                const std::string& number, std::string* line) {
  if (f.value) {
    *line = "VA ";
    append_num(*line, number.size());
  } else {
    *line = "HD";
  }
  const std::int64_t now = Store::now();
  std::int64_t exp = d.old_exptime;
  for (std::size_t i = 2; i < t.size(); ++i) {
    switch (t[i][0]) {
      case 'c': line->append(" c"); append_num(*line, d.cas); break;
      case 't':
        line->append(" t");
        if (exp == 0) line->append("-1");
        else append_num(*line, static_cast<std::uint32_t>(exp - now));
        break;
      case 'T': exp = f.exptime; break;
      case 'N':
        if (d.created) exp = f.autoviv;
        break;
      case 'O':
        if (t[i].size() > kMaxOpaque) return false;
        line->push_back(' ');
        line->append(t[i]);
        break;
      case 'k': append_key(*line, f.key, f.key_binary); break;
      default: break;
    }
  }
  return true;
}

}  // namespace

void Session::meta_arith(const Tokens& t, std::string& out) {
  if (t.size() < 2) return error_line(out, "ERROR");
  if (t[1].size() > kMaxKeyLength) return error_line(out, kBadFormat);
  if (t.size() + 1 > kMaxOptTokens) return error_line(out, "CLIENT_ERROR options flags too long");
  MetaFlags f;
  std::string_view err = kBadFormat;
  if (!preparse(t, 2, f, err)) return error_line(out, "CLIENT_ERROR invalid or duplicate flag");
  bool incr = true;
  switch (f.mode) {
    case 0: case 'I': case '+': break;
    case 'D': case '-': incr = false; break;
    default: return error_line(out, "CLIENT_ERROR invalid mode for ma M token");
  }
  ++info_.meta_cmds;
  DeltaOptions o;
  o.cas_in = f.has_cas ? f.cas : 0;
  o.create = f.vivify;
  o.initial = f.initial;
  o.create_exptime = f.autoviv;
  o.ttl = f.new_ttl ? &f.exptime : nullptr;
  o.ttl_after_create = f.ttl_after_vivify;
  o.key_iflags = f.key_binary ? kItemKeyBinary : 0;
  DeltaOut d;
  std::string line;
  switch (store_.delta(f.key, incr, f.delta, &d, o)) {
    case DeltaResult::non_numeric:
      return error_line(out, "CLIENT_ERROR cannot increment or decrement non-numeric value");
    case DeltaResult::no_memory:
      return error_line(out, d.created ? "SERVER_ERROR Out of memory allocating new item"
                                       : "SERVER_ERROR out of memory");
    case DeltaResult::not_found:
    case DeltaResult::exists: {
      const bool nf = d.created;  // not_found leaves created = true (no item)
      if (nf) ++(incr ? info_.incr_misses : info_.decr_misses);
      line = nf ? "NF" : "EX";
      if (!append_opaque_key(t, f, line))
        return error_line(out, "CLIENT_ERROR opaque token too long");
      return error_line(out, line);
    }
    case DeltaResult::ok: break;
  }
  ++(incr ? info_.incr_hits : info_.decr_hits);
  const std::string number = std::to_string(d.value);
  if (!ma_ok_line(t, f, d, number, &line))
    return error_line(out, "CLIENT_ERROR opaque token too long");
  if (f.no_reply && !d.created) return;  // memcached hides only an existing item's HD
  if (f.value) {
    line.append("\r\n");
    line.append(number);
  }
  error_line(out, line);
}

void Session::meta_debug(const Tokens& t, std::string& out) {
  if (t.size() < 2 || t[1].size() > kMaxKeyLength) return error_line(out, kBadFormat);
  std::string key(t[1]);
  if (t.size() >= 3 && t[2] == "b") {
    std::string k;
    if (!b64_decode(t[1], &k)) return error_line(out, kBadFormat);
    key = std::move(k);
  }
  ++info_.meta_cmds;
  MetaGetOptions o;
  o.no_update = true;
  o.block_info = true;
  const std::int64_t now = Store::now();
  const bool hit = store_.meta_get(key, o, [&](const ItemView& it) {
    std::string line = "ME ";
    if (it.iflags & kItemKeyBinary) b64_encode(it.key, line);
    else line.append(it.key);
    line.append(" exp=");
    // memcached prints current_time - exptime here (a negative number for a live item).
    append_num(line, it.exptime == 0 ? -1 : static_cast<std::int32_t>(now - it.exptime));
    line.append(" la=");
    append_num(line, it.last_access);
    line.append(" cas=");
    append_num(line, it.cas);
    line.append(it.was_hit_before ? " fetch=yes" : " fetch=no");
    line.append(" cls=");
    append_num(line, it.size_class);
    line.append(" size=");
    append_num(line, it.block_bytes);
    error_line(out, line);
    return false;
  });
  if (!hit) error_line(out, "EN");
}

}  // namespace wort::server
