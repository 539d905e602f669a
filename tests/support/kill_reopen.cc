#include "support/kill_reopen.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <random>

#include "support/keygen.h"

#include "pm/allocator.h"
#include "wort/index.h"
#include "wort/pool.h"

namespace wort::test {

Stream upsert_each_key_in_turn(std::size_t nkeys) {
  return [nkeys](std::uint64_t j) {
    const std::size_t k = static_cast<std::size_t>(j % nkeys);
    return StreamOp{k, false, static_cast<Value>(k)};
  };
}

Stream random_upserts_and_removes(std::size_t nkeys) {
  return [nkeys](std::uint64_t j) {
    std::mt19937_64 rng(j * 0x9e3779b97f4a7c15ull + 1);
    const auto key = static_cast<std::size_t>(rng() % nkeys);
    return StreamOp{key, rng() % 4 == 0, static_cast<Value>(j)};
  };
}

namespace {

//! Child: creates the file pool and applies the stream; after each acknowledged operation it
//! writes the operation's number to the pipe. Never returns (the parent kills it).
[[noreturn]] void child_run(const KillReopenSpec& spec, const std::string& path, int fd) {
  PoolOptions o;
  o.size = spec.pool_size;
  o.kind = spec.tree.kind;
  auto pool = Pool::create(path, o);
  if (!pool) _exit(2);
  auto tree = spec.tree.create(**pool);
  if (!tree) _exit(3);
  for (std::uint64_t j = 0;; ++j) {
    const StreamOp op = spec.stream(j);
    const Key k = as_key(spec.keys[op.key]);
    const Status s = op.remove ? (*tree)->remove(k) : (*tree)->upsert(k, op.value);
    if (s != Status::ok && !(op.remove && s == Status::not_found)) _exit(4);
    if (write(fd, &j, sizeof j) != sizeof j) _exit(5);
  }
}

//! Forks the child, lets it acknowledge spec.kill_after operations, SIGKILLs it; returns
//! the number of acknowledged operations (those still in the pipe included), 0 on failure.
std::uint64_t run_child_and_kill(const KillReopenSpec& spec, const std::string& path) {
  int fds[2];
  if (pipe(fds) != 0) {
    ADD_FAILURE() << "pipe failed";
    return 0;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork failed";
    close(fds[0]);
    close(fds[1]);
    return 0;
  }
  if (pid == 0) {
    close(fds[0]);
    child_run(spec, path, fds[1]);
  }
  close(fds[1]);
  std::uint64_t j = 0, acked = 0;
  while (acked < spec.kill_after && read(fds[0], &j, sizeof j) == sizeof j) acked = j + 1;
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  while (read(fds[0], &j, sizeof j) == sizeof j) acked = j + 1;  // acks still in the pipe
  close(fds[0]);
  EXPECT_TRUE(WIFSIGNALED(status)) << "child exited on its own, status " << status;
  EXPECT_GE(acked, spec.kill_after) << "child stopped early";
  if (!WIFSIGNALED(status) || acked < spec.kill_after) return 0;
  return acked;
}

//! Reopens the pool and checks it against the first `acked` operations of the stream.
void reopen_and_check(const KillReopenSpec& spec, const std::string& path, std::uint64_t acked) {
  std::map<std::size_t, Value> expect;
  for (std::uint64_t i = 0; i < acked; ++i) {
    const StreamOp op = spec.stream(i);
    if (op.remove) expect.erase(op.key);
    else expect[op.key] = op.value;
  }
  const std::size_t in_flight = spec.stream(acked).key;
  ASSERT_LT(in_flight, spec.keys.size()) << "the stream names a key the spec does not have";

  auto pool = Pool::open(path, spec.tree.kind);
  ASSERT_TRUE(pool) << pool.error().message;
  auto tree = spec.tree.open(**pool);
  ASSERT_TRUE(tree) << tree.error().message;
  for (std::size_t k = 0; k < spec.keys.size(); ++k) {
    if (k == in_flight) continue;
    const auto it = expect.find(k);
    const auto want = it == expect.end() ? std::nullopt : std::optional<Value>(it->second);
    EXPECT_EQ((*tree)->lookup(as_key(spec.keys[k])), want) << "key " << k;
  }
  const auto v = (*tree)->verify();
  EXPECT_TRUE(v.ok()) << v.error().message;
  auto audit = (*pool)->allocator().audit([&](pm::BlockVisitor bv) { return (*tree)->visit_blocks(bv); });
  EXPECT_TRUE(audit.ok()) << audit.describe();
  // and it keeps working
  EXPECT_EQ((*tree)->insert(as_key(std::string("after-the-crash")), 1), Status::ok);
  EXPECT_TRUE((*tree)->verify().ok());
}

}  // namespace

void kill_and_reopen(const KillReopenSpec& spec) {
  const auto dir = std::filesystem::temp_directory_path() /
                   (spec.tree.kind + "_kill_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "pool").string();
  const std::uint64_t acked = run_child_and_kill(spec, path);
  if (acked > 0) {
    std::cout << "[" << spec.tree.kind << " crash] killed the child after " << acked
              << " acknowledged operations\n";
    reopen_and_check(spec, path, acked);
  }
  std::filesystem::remove_all(dir);
}

void kill_and_reopen_random_bytes(const crashsim::Factory& tree, std::uint64_t kill_after) {
  KillReopenSpec spec{tree, make_keys(Gen::random_bytes, 20000, 17),
                      random_upserts_and_removes(20000)};
  spec.kill_after = kill_after;
  kill_and_reopen(spec);
}

void kill_and_reopen_each_key(const crashsim::Factory& tree, Gen keys, std::uint64_t seed) {
  KillReopenSpec spec{tree, make_keys(keys, 20000, seed), upsert_each_key_in_turn(20000)};
  spec.kill_after = 15000;
  kill_and_reopen(spec);
}

}  // namespace wort::test
