// cli/serve_cmd.cc — `wort serve`: the memcached-compatible cache (src/server/).
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "cli/args.h"
#include "cli/commands.h"
#include "server/server.h"

namespace wort::cli {
namespace {

constexpr const char* kServeHelp = R"(usage: wort serve --pool PATH [options]

A memcached-compatible cache (text and meta protocol) whose every acknowledged write
survives kill -9: items live in a persistent pool, indexed by a persistent tree. A new pool
is created for -m megabytes of items; an existing one is opened and recovered before the
server answers.

  --pool PATH        pool file (required)
  --index KIND       index for a new pool: wort (default), woart, artcow, fastfair, fptree,
                     wbtree, nvtree, roart (ignored, with a warning, for an existing pool)
  -p, --port N       TCP port (default 11211; 0 picks a free one, see --port-file)
  -l, --listen ADDR  IPv4 address to listen on (default 127.0.0.1)
  -t, --threads N    worker threads, each with its own epoll loop (default 4, at most 120)
  -m, --memory-limit MB  item memory in megabytes for a new pool (default 64; ignored,
                     with a warning, for an existing pool): as memcached's -m, the bytes of
                     item blocks held before a set evicts. The pool file is LARGER than -m:
                     the index lives in it too (memcached keeps its hash table outside -m),
                     so the file is -m x 1.53 for wort, woart, artcow and roart, x 1.66 for
                     fastfair and fptree, x 1.78 for wbtree and nvtree (plus 16 chunks, at
                     most 16 MiB). The whole file is allocated when the pool is created
                     (-m 4096 with wort takes 6.1 GiB of the filesystem, e.g. /dev/shm, at
                     once), as a persistent pool must be
  -c, --conn-limit N max simultaneous connections (default 1024)
  -I, --max-item-size SIZE  largest item, key + value + 32 bytes (default 1m)
  -M, --disable-evictions   answer SERVER_ERROR out of memory instead of evicting
  -F, --disable-flush-all   answer flush_all with CLIENT_ERROR flush_all not allowed
  -b, --listen-backlog N    listen(2) backlog (default 1024)
  -v, -vv, -vvv, --verbose  accepted for memcached unit files: sets the initial
                     `verbosity` (stats settings shows it); nothing is logged
  -U, --udp-port 0   accepted (UDP is off); any other port is refused
  -B, --protocol ascii      accepted; binary and auto are refused (text protocol only;
                     a binary request is answered ERROR and its connection closed)
  -d, --daemon       detach once the pool is recovered and the port bound (exit 0 then;
                     a failed start exits 1 with its message on stderr)
  -P, --pidfile PATH write the server's pid here once it answers (removed at exit)
  -u, --user USER    when started as root: run as USER (set before the pool is opened
                     or created, so the pool file belongs to USER); ignored otherwise
  -V, --version      print the version and exit
  --global-lock      guard the index with one reader/writer lock even if it is concurrent
                     (wort, woart, artcow, fastfair, fptree, roart run without it: readers
                     pin an epoch, writers lock their key's stripe); for A/B measurements
  --port-file PATH   write the bound port here once the server answers (tests)
  --check            open (recover) an existing pool, verify every item and the index, run
                     the allocator audit, print a summary and exit (0 = clean); no server,
                     and no pool is created (a missing one is an error, exit 1)
  -h, --help         this text

The pool file takes the whole -m at creation (tmpfs or DAX pages are allocated as items
arrive, but the file's size is -m). memcached's other options (-s, -a, -A, -r, -k, -L, -D,
-R, -C, -S, -X, -W, -Y, -e, -Z, -o, -N, -f, -n) are refused by name.
)";

//! memcached 1.6's options that serve does not take, with what they do there.
struct Refused {
  const char* short_name;
  const char* long_name;
  const char* what;
};
constexpr Refused kRefused[] = {
    {"-s", "--unix-socket", "a UNIX socket"},
    {"-a", "--unix-mask", "the UNIX socket's access mask"},
    {"-A", "--enable-shutdown", "the shutdown command"},
    {"-r", "--enable-coredumps", "core dump limits"},
    {"-k", "--lock-memory", "locking memory"},
    {"-L", "--enable-largepages", "large pages"},
    {"-D", "", "the stats prefix delimiter"},
    {"-R", "--max-reqs-per-event", "requests per event"},
    {"-C", "--disable-cas", "disabling cas"},
    {"-S", "--enable-sasl", "SASL"},
    {"-X", "--disable-dumping", "disabling cachedump (there is none)"},
    {"-W", "--disable-watch", "disabling watch (there is none)"},
    {"-Y", "--auth-file", "ASCII authentication"},
    {"-e", "--memory-file", "a memory file (use --pool)"},
    {"-Z", "--enable-ssl", "TLS"},
    {"-o", "--extended", "extended options"},
    {"-N", "--napi_ids", "NAPI ids"},
    {"-f", "--slab-growth-factor", "the slab growth factor (the allocator's classes are fixed)"},
    {"-n", "--slab-min-size", "the smallest slab chunk"},
};

//! -u: as memcached, only when started as root.
void become_user(const std::string& user) {
  if (getuid() != 0) {
    std::fprintf(stderr, "wort serve: warning: -u ignored: not started as root\n");
    return;
  }
  const passwd* pw = getpwnam(user.c_str());
  if (pw == nullptr) throw UsageError("-u: no user '" + user + "'");
  if (initgroups(pw->pw_name, pw->pw_gid) != 0 || setgid(pw->pw_gid) != 0 ||
      setuid(pw->pw_uid) != 0)
    throw UsageError("-u: cannot become '" + user + "'");
}

//! -d: forks before anything else runs (no thread exists yet). The parent waits for the
//! child to report that it answers (one byte on a pipe) and exits 0, or exits with the
//! child's status if the start failed (the child printed why). Returns the pipe's write
//! end in the child.
int daemonize() {
  int p[2];
  if (pipe(p) != 0) throw UsageError("-d: pipe failed");
  const pid_t pid = fork();
  if (pid < 0) throw UsageError("-d: fork failed");
  if (pid > 0) {
    close(p[1]);
    char b = 0;
    const ssize_t n = read(p[0], &b, 1);
    if (n == 1) _exit(0);
    int st = 0;
    waitpid(pid, &st, 0);
    _exit(WIFEXITED(st) && WEXITSTATUS(st) != 0 ? WEXITSTATUS(st) : 1);
  }
  close(p[0]);
  setsid();
  return p[1];
}

//! The child of -d answers: tell the parent, and let go of its terminal.
void detached(int report_fd) {
  const char ok = 'k';
  [[maybe_unused]] auto w = write(report_fd, &ok, 1);
  close(report_fd);
  const int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    if (null > 2) close(null);
  }
}


extern "C" void on_stop_signal(int) { server::g_stop_requested.store(true); }

//! -m and --index apply to a new pool only: say so when they were given for an existing one.
void warn_ignored(const server::Store& st, bool size_given, bool kind_given) {
  if (!st.recovered()) return;
  if (size_given)
    std::fprintf(stderr, "wort serve: warning: -m ignored: the pool exists (-m %llu MiB)\n",
                 static_cast<unsigned long long>(st.item_limit() >> 20));
  if (kind_given)
    std::fprintf(stderr, "wort serve: warning: --index ignored: the pool exists (%s index)\n",
                 std::string(st.kind()).c_str());
}

int check_pool(server::StoreOptions so, bool size_given, bool kind_given) {
  so.open_only = true;
  auto st = server::Store::open(so);
  if (!st) {
    std::fprintf(stderr, "wort serve --check: %s (%s)\n", st.error().message.c_str(),
                 std::string(to_string(st.error().code)).c_str());
    return 1;
  }
  server::Store& s = **st;
  warn_ignored(s, size_given, kind_given);
  if (auto v = s.verify(); !v) {
    std::fprintf(stderr, "wort serve --check: verify: %s\n", v.error().message.c_str());
    return 1;
  }
  const pm::AuditReport a = s.audit();
  std::printf("items %llu bytes %llu next_cas %llu audit %s\n",
              static_cast<unsigned long long>(s.counters().curr_items.load()),
              static_cast<unsigned long long>(s.counters().bytes.load()),
              static_cast<unsigned long long>(s.next_cas_peek()),
              a.ok() ? "clean" : a.describe().c_str());
  return a.ok() ? 0 : 1;
}

struct ServeArgs {
  server::ServerOptions o;
  bool check = false, kind_given = false, size_given = false, daemon = false;
  std::string pidfile, user;
};

//! The store's options (pool, index kind, size, items, eviction, lock); false: not one.
bool store_option(ArgReader& r, ServeArgs& a) {
  server::StoreOptions& so = a.o.store;
  if (r.is("--pool")) so.pool_path = r.value();
  else if (r.is("--index")) {
    so.kind = r.value();
    a.kind_given = true;
  } else if (r.is("-m") || r.is("--memory-limit")) {
    so.item_limit = parse_count(r.value(), "-m") << 20;
    a.size_given = true;
  } else if (r.is("-I") || r.is("--max-item-size")) so.max_item_size = parse_bytes(r.value(), "-I");
  else if (r.is("-M") || r.is("--disable-evictions")) so.no_evict = true;
  else if (r.is("--global-lock")) so.global_lock = true;
  else return false;
  return true;
}

//! The network server's options; false: not one.
bool server_option(ArgReader& r, server::ServerOptions& o) {
  if (r.is("-p") || r.is("--port")) o.port = static_cast<int>(parse_count(r.value(), "-p"));
  else if (r.is("-l") || r.is("--listen")) o.addr = r.value();
  else if (r.is("-t") || r.is("--threads")) o.threads = static_cast<int>(parse_count(r.value(), "-t"));
  else if (r.is("-c") || r.is("--conn-limit")) o.maxconns = static_cast<int>(parse_count(r.value(), "-c"));
  else if (r.is("--port-file")) o.port_file = r.value();
  else if (r.is("-F") || r.is("--disable-flush-all")) o.flush_enabled = false;
  else if (r.is("-b") || r.is("--listen-backlog")) o.backlog = static_cast<int>(parse_count(r.value(), "-b"));
  else if (r.is("-v") || r.is("--verbose")) o.verbosity = std::max(o.verbosity, 1);
  else if (r.is("-vv")) o.verbosity = 2;
  else if (r.is("-vvv")) o.verbosity = 2;  // memcached's cap for the command's level
  else if (r.is("-U") || r.is("--udp-port")) {
    if (parse_count(r.value(), "-U") != 0) throw UsageError("-U: UDP is not supported (only -U 0)");
  } else if (r.is("-B") || r.is("--protocol")) {
    if (r.value() != "ascii")
      throw UsageError("-B: only 'ascii' (the binary protocol is not implemented)");
  } else return false;
  return true;
}

//! An option that is none of ours: memcached's that are not supported say so.
[[noreturn]] void refuse_option(const std::string& a) {
  const std::string name = a.substr(0, a.find('='));
  for (const Refused& x : kRefused)
    if (name == x.short_name || (*x.long_name != '\0' && name == x.long_name))
      throw UsageError("memcached's " + std::string(x.short_name) +
                       (*x.long_name ? std::string(" (") + x.long_name + ")" : "") + " (" +
                       x.what + ") is not supported");
  throw UsageError("unknown option '" + a + "'");
}

//! The options; nullopt after --help or --version (printed).
std::optional<ServeArgs> parse_serve_args(const Args& args) {
  ServeArgs a;
  a.o.store.item_limit = 64ull << 20;  // -m 64
  ArgReader r(args);
  while (r.more()) {
    if (r.is("--help") || r.is("-h")) {
      std::fputs(kServeHelp, stdout);
      return std::nullopt;
    } else if (r.is("-V") || r.is("--version")) {
      std::printf("wort serve %s\n", server::kVersion);
      return std::nullopt;
    } else if (store_option(r, a) || server_option(r, a.o)) {
    } else if (r.is("--check")) a.check = true;
    else if (r.is("-d") || r.is("--daemon")) a.daemon = true;
    else if (r.is("-P") || r.is("--pidfile")) a.pidfile = r.value();
    else if (r.is("-u") || r.is("--user")) a.user = r.value();
    else refuse_option(r.peek());
  }
  a.o.store.pool_bytes = server::pool_bytes_for(a.o.store.kind, a.o.store.item_limit);
  return a;
}

void check_serve_args(const server::ServerOptions& o) {
  if (o.store.pool_path.empty()) throw UsageError("--pool PATH is required");
  if (o.port < 0 || o.port > 65535) throw UsageError("-p: a port 0..65535");
  // Every thread that calls a concurrent index (or the store's epochs) holds one of
  // kit::EpochReclaimer's 128 process-wide thread slots while it lives; a thread beyond them
  // would wait for one forever. Workers, the listener, the sweeper and main must fit.
  if (o.threads < 1 || o.threads > 120) throw UsageError("-t: 1..120 threads");
  if (o.maxconns < 1) throw UsageError("-c: at least 1");
  if (o.store.max_item_size < 1024 || o.store.max_item_size > (1u << 30))
    throw UsageError("-I: 1k .. 1g");
  // As memcached: an item may take at most half the memory. For an existing pool (-m
  // ignored) the store caps items at half its size instead.
  if (!std::filesystem::exists(o.store.pool_path) && o.store.max_item_size > o.store.item_limit / 2)
    throw UsageError("-I: at most half of -m for a new pool (" +
                     std::to_string(o.store.item_limit >> 20) + " MiB)");
}

//! Room for every connection plus the pool, listener, epoll and eventfd descriptors.
void raise_fd_limit(const server::ServerOptions& o) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t want = static_cast<rlim_t>(o.maxconns) + 64 + 3 * static_cast<rlim_t>(o.threads);
  if (rl.rlim_cur < want) {
    rl.rlim_cur = std::min(want, rl.rlim_max);
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace

int serve_main(const Args& args) {
  std::optional<ServeArgs> parsed = parse_serve_args(args);
  if (!parsed) return 0;
  ServeArgs& a = *parsed;
  server::ServerOptions& o = a.o;
  check_serve_args(o);
  if (!a.user.empty()) become_user(a.user);
  if (a.check) return check_pool(o.store, a.size_given, a.kind_given);
  int report_fd = -1;
  if (a.daemon) {
    // Paths relative to the start directory keep meaning the same files.
    o.store.pool_path = std::filesystem::absolute(o.store.pool_path).string();
    if (!o.port_file.empty()) o.port_file = std::filesystem::absolute(o.port_file).string();
    if (!a.pidfile.empty()) a.pidfile = std::filesystem::absolute(a.pidfile).string();
    report_fd = daemonize();
  }
  raise_fd_limit(o);
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  auto s = server::Server::start(o);
  if (!s) {
    std::fprintf(stderr, "wort serve: %s (%s)\n", s.error().message.c_str(),
                 std::string(to_string(s.error().code)).c_str());
    return 1;
  }
  warn_ignored((*s)->store(), a.size_given, a.kind_given);
  std::fprintf(stderr,
               "wort serve: %s pool %s (%s index, %s), listening on %s:%d, %d threads\n",
               (*s)->store().recovered() ? "recovered" : "created", o.store.pool_path.c_str(),
               std::string((*s)->store().kind()).c_str(),
               (*s)->store().concurrent() ? "no global lock" : "one reader/writer lock",
               o.addr.c_str(), (*s)->port(), o.threads);
  if (!a.pidfile.empty()) {
    const std::string tmp = a.pidfile + ".tmp";
    { std::ofstream(tmp) << getpid() << "\n"; }
    std::rename(tmp.c_str(), a.pidfile.c_str());
  }
  if (report_fd >= 0) detached(report_fd);
  const int rc = (*s)->run();
  if (!a.pidfile.empty()) std::remove(a.pidfile.c_str());
  return rc;
}

}  // namespace wort::cli
