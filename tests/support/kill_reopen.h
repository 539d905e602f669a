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

}  // namespace wort::test
