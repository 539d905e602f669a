#include <cstdio>
#include <string>

#include "wort/index.h"  // wort::Index, wort::Key, wort::Value, Status, Result
#include "wort/pool.h"   // wort::Pool

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "/dev/shm/my.pool";  // on real PM: a DAX mount
  auto pool = wort::Pool::open(path, "wort");     // an existing pool (Status::in_use if open)
  if (pool.status() == wort::Status::no_such_file) {
    wort::PoolOptions opts;                       // none yet: make one
    opts.size = 64 << 20;
    opts.kind = "wort";                           // the pool holds one index of this kind
    pool = wort::Pool::create(path, opts);
  }
  if (!pool) return std::fprintf(stderr, "%s\n", pool.error().message.c_str()), 1;
  auto index = (*pool)->root() == 0 ? wort::Index::create(**pool, "wort")
                                    : wort::Index::open(**pool);  // recovery happens here
  if (!index) return std::fprintf(stderr, "%s\n", index.error().message.c_str()), 1;
  wort::Index& ix = **index;                      // keeps its pool open while it lives

  // Every operation returns a Status, durable on return; ignoring one is a compile warning.
  if (ix.upsert(wort::as_key("hello"), 1) != wort::Status::ok) return 1;  // insert or overwrite
  if (ix.insert(wort::u64_key(42), 3) == wort::Status::exists)            // 8-byte big-endian
    std::puts("42 was stored by an earlier run");
  std::optional<wort::Value> v = ix.lookup(wort::as_key("hello"));        // 1
  std::size_t n = ix.scan(wort::Key{}, 10, [](wort::Key k, wort::Value value) {
    std::printf("%zu-byte key -> %llu\n", k.size(), static_cast<unsigned long long>(value));
    return true;                                  // false stops the scan
  });
  return v == 1 && n == 2 ? 0 : 1;
}
