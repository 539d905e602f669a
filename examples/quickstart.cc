// examples/quickstart.cc — the README's library example, compiled and run as a test so it
// cannot drift from the API. Usage: quickstart [POOL_PATH]
#include <cstdio>
#include <string>
#include <unistd.h>

#include "wort/index.h"
#include "wort/pool.h"

int main(int argc, char** argv) {
  const std::string path =
      argc > 1 ? argv[1] : "/tmp/wort-quickstart-" + std::to_string(getpid()) + ".pool";

  // Create a 64 MiB pool file holding a WORT tree, insert, look up, close.
  {
    wort::PoolOptions opts;
    opts.size = 64 << 20;
    opts.kind = "wort";
    auto pool = wort::Pool::create(path, opts);
    if (!pool) return std::fprintf(stderr, "%s\n", pool.error().message.c_str()), 1;
    auto index = wort::Index::create(**pool, "wort");
    if (!index) return std::fprintf(stderr, "%s\n", index.error().message.c_str()), 1;

    wort::Index& ix = **index;
    // Every operation returns a Status (ignoring one is a compile warning): ok, or a normal
    // outcome such as exists / not_found, or out_of_space when the pool is full.
    if (ix.insert(wort::as_key("hello"), 1) != wort::Status::ok) return 1;
    if (ix.upsert(wort::as_key("world"), 2) != wort::Status::ok) return 1;  // insert or overwrite
    auto k = wort::u64_key(42);                                // integers: 8 bytes big-endian
    if (ix.insert(k, 3) != wort::Status::ok) return 1;
    if (ix.insert(wort::as_key("hello"), 9) != wort::Status::exists) return 1;
  }  // closing the pool records a clean shutdown; a crash instead would be recovered on open

  // Reopen (recovery runs in Index::open) and read everything back in key order.
  auto pool = wort::Pool::open(path, "wort");
  if (!pool) return std::fprintf(stderr, "%s\n", pool.error().message.c_str()), 1;
  auto index = wort::Index::open(**pool);
  if (!index) return std::fprintf(stderr, "%s\n", index.error().message.c_str()), 1;
  if ((*index)->lookup(wort::as_key("world")) != std::optional<wort::Value>(2)) return 1;
  std::size_t n = (*index)->scan(wort::Key{}, 10, [](wort::Key key, wort::Value v) {
    std::printf("%zu-byte key -> %llu\n", key.size(), static_cast<unsigned long long>(v));
    return true;  // false stops the scan
  });
  if (auto ok = (*index)->verify(); !ok) return std::fprintf(stderr, "%s\n", ok.error().message.c_str()), 1;
  std::printf("%zu keys\n", n);
  index->reset();
  pool->reset();
  unlink(path.c_str());
  return n == 3 ? 0 : 1;
}
