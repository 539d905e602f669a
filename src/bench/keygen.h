// bench/keygen.h — the benchmark's key sets.
//
// The WORT paper's 8-byte integer sets (Dense 1..N, Sparse uniform 64-bit, Clustered runs of
// 64 sequential keys at random bases), each in random insertion order; ROART's
// variable-size random byte strings; a real string set (a word list such as
// /usr/share/dict/words, or generated email-like keys); and 20-byte keys (WORT's Memcached
// test). Every set is a pure function of (kind, n, seed, sizes): the load phase is
// reproducible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/lookup_loops.h"
#include "wort/key.h"
#include "wort/status.h"

namespace wort::bench {

//! Which key set to generate.
enum class KeyDist : std::uint8_t {
  dense,      //!< 1..N, shuffled
  sparse,     //!< N distinct uniform 64-bit values
  clustered,  //!< groups of 64 sequential keys from random bases, shuffled
  varbytes,   //!< random byte strings, sizes uniform in [min_len, max_len]
  words,      //!< lines of a word file (shuffled); email-like keys if the file is missing
  email,      //!< generated email-like strings ("name.surname123@host.tld")
  fixed20,    //!< random 20-byte keys (the WORT paper's Memcached test)
};

std::string_view to_string(KeyDist d) noexcept;
//! Parses a name from to_string; false if unknown.
bool parse(std::string_view s, KeyDist& out) noexcept;
//! True for the 8-byte integer sets (dense, sparse, clustered).
bool is_integer(KeyDist d) noexcept;

//! Parameters of a key set.
struct KeySpec {
  KeyDist dist = KeyDist::dense;
  std::size_t n = 0;
  std::uint64_t seed = 1;
  std::size_t min_len = 4;    //!< varbytes
  std::size_t max_len = 128;  //!< varbytes
  std::string words_file = "/usr/share/dict/words";
};

//! N distinct keys stored back to back in one buffer (no per-key allocation).
class KeySet {
 public:
  std::size_t size() const noexcept { return offsets_.empty() ? 0 : offsets_.size() - 1; }
  Key operator[](std::size_t i) const noexcept {
    return {reinterpret_cast<const std::byte*>(bytes_.data()) + offsets_[i],
            offsets_[i + 1] - offsets_[i]};
  }
  //! Appends a key (the caller guarantees distinctness).
  void push(std::string_view k);
  void reserve(std::size_t n, std::size_t bytes);
  //! Total key bytes.
  std::size_t total_bytes() const noexcept { return bytes_.size(); }
  //! The keys as the lookup loops take them (bench/lookup_loops.h; valid while *this lives
  //! unchanged).
  PackedKeys packed() const noexcept {
    return {reinterpret_cast<const std::byte*>(bytes_.data()), offsets_.data(), size()};
  }
  //! Where the keys came from ("generated", or the word file and how many lines it had).
  std::string source;

 private:
  std::string bytes_;
  std::vector<std::size_t> offsets_{0};
};

//! The integer keys of a paper set, in insertion (random) order.
std::vector<std::uint64_t> integer_keys(KeyDist d, std::size_t n, std::uint64_t seed);

//! Builds the key set for `spec`. Fails only if the spec is invalid (n of distinct keys not
//! possible, bad length range). A word file with fewer than n distinct lines yields fewer
//! keys; `source` says so.
Result<KeySet> make_key_set(const KeySpec& spec);

}  // namespace wort::bench
