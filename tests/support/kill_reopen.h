// tests/support/kill_reopen.h — reopen after a real process kill: a forked child creates a
// file pool and applies a deterministic stream of upserts / removes, acknowledging each
// completed operation through a pipe; the parent SIGKILLs it mid-run, reopens the pool
// (recovery) and checks every key against the acknowledged prefix of the stream (the one
// in-flight operation's key may go either way), then verify(), the allocator audit, and one
// more insert. Used by the crash tests of every index kind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "crashsim/harness.h"
#include "support/keygen.h"
#include "wort/key.h"

namespace wort::test {

//! Operation j of the child's stream: remove keys[key], or upsert (keys[key], value).
struct StreamOp {
  std::size_t key;
  bool remove;
  Value value;
};
using Stream = std::function<StreamOp(std::uint64_t j)>;

//! Upserts keys[j % nkeys] with value j % nkeys: every key once, in order, then again.
Stream upsert_each_key_in_turn(std::size_t nkeys);
//! A pseudo-random key per operation (a function of j alone); one in four is a remove, the
//! rest upsert value j.
Stream random_upserts_and_removes(std::size_t nkeys);

struct KillReopenSpec {
  crashsim::Factory tree;            //!< its kind names the pool
  std::vector<std::string> keys;
  Stream stream;                     //!< operations over indices into keys
  std::uint64_t kill_after = 20000;  //!< acknowledged operations before the kill
  std::uint64_t pool_size = 64ull << 20;
};

//! Runs the experiment described at the top; reports through gtest (EXPECT / ASSERT).
void kill_and_reopen(const KillReopenSpec& spec);

//! kill_and_reopen over 20000 random-byte keys (seed 17) and random_upserts_and_removes,
//! the child killed after `kill_after` acknowledged operations.
void kill_and_reopen_random_bytes(const crashsim::Factory& tree, std::uint64_t kill_after = 15000);

//! kill_and_reopen over 20000 keys of `keys` (seed `seed`), each upserted in turn
//! (upsert_each_key_in_turn), the child killed after 15000 acknowledged upserts.
void kill_and_reopen_each_key(const crashsim::Factory& tree, Gen keys, std::uint64_t seed);

}  // namespace wort::test
