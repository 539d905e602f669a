// examples/store.cc — the README's key-value store example (section "Key-value store"),
// compiled and run as a test. Usage: store [POOL_PATH]
#include <cstdio>
#include <string>
#include <unistd.h>

#include "wort/store.h"

int main(int argc, char** argv) {
  const std::string path =
      argc > 1 ? argv[1] : "/tmp/wort-store-example-" + std::to_string(getpid()) + ".pool";
  {
    wort::StoreOptions opts;
    opts.kind = "wort";                           // any persistent kind: wort list
    opts.size = 64 << 20;
    auto db = wort::Store::open(path, opts);      // creates when missing, else recovers
    if (!db) return std::fprintf(stderr, "%s\n", db.error().message.c_str()), 1;
    wort::Store& s = **db;
    if (s.put("user:1", "Ada") != wort::Status::ok) return 1;  // durable on return
    if (s.put("user:2", std::string(100000, 'x')) != wort::Status::ok) return 1;
    wort::WriteBatch b;                           // all or nothing, also across a crash
    b.put("user:3", "Grace");
    b.remove("user:2");
    if (s.write(b) != wort::Status::ok) return 1;
  }
  auto db = wort::Store::open(path);              // reopen (recovery)
  if (!db) return std::fprintf(stderr, "%s\n", db.error().message.c_str()), 1;
  wort::Store& s = **db;
  auto v = s.get("user:1");                       // Result<std::optional<std::string>>
  if (!v || *v != "Ada") return 1;                // corrupt if the value fails its checksum
  for (auto c = s.cursor("user:", "user;"); c.valid(); c.next())  // [lo, hi), ascending
    std::printf("%.*s = %.*s\n", int(c.key().size()), c.key().data(), int(c.value().size()),
                c.value().data());
  const bool ok = s.size() == 2 && !s.contains("user:2");
  db->reset();
  unlink(path.c_str());
  return ok ? 0 : 1;
}
