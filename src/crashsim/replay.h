// crashsim/replay.h — the replay string of a finding, and choice vectors as text.
//
//   seed=7,op=3,point=41,choice=0.2.1[,rpoint=2,rchoice=1.0]
//   seed=7,stalls=12.1/40.0,ops=3/1,point=41,choice=0.2.1     (run_concurrent_kv)
//
// `point` numbers the crash points of the traced run in order (fences and acknowledgements,
// counted whether explored or not); `choice` is one prefix length per dirty line in line
// order, or "none" (all zero), "all" (every log applied), "-" (no dirty line). rpoint and
// rchoice name a second crash inside the recovery of that image. `op` is informational.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace wort::crashsim {

struct ReplaySpec {
  bool active = false;
  std::uint64_t seed = 1;
  std::uint64_t point = 0;
  std::string choice;
  bool nested = false;
  std::uint64_t rpoint = 0;
  std::string rchoice;
  //! Concurrent histories (run_concurrent_kv): `stalls=12.1/40.0` (or `-`) lists the
  //! global event numbers after which the running writer (after the dot) was found stalled
  //! (blocked on a lock the paused writer holds) and the turn passed on; with the seed this
  //! fixes the schedule. Held as event * 16 + writer.
  bool concurrent = false;
  std::vector<std::uint64_t> stalls;
};

//! Parses a replay string; false (with a message) if malformed.
bool parse_replay(const std::string& s, ReplaySpec* out, std::string* err);
//! Turns a choice text into a vector fitting `limits`; false if it does not fit.
bool resolve_choice(const std::string& text, std::span<const std::uint32_t> limits,
                    std::vector<std::uint32_t>* out);
//! "0.2.1", or "-" for an empty vector.
std::string format_choice(std::span<const std::uint32_t> choice);
//! A hash of a choice vector (to derive per-image seeds).
std::uint64_t hash_choice(std::span<const std::uint32_t> choice) noexcept;

}  // namespace wort::crashsim
