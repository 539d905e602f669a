// tests/support/crash_findings.h — how the crash tests that drive the simulator themselves
// (the server's and the store's) record what a recovered crash image got wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace wort::test {

//! Findings kept per run: enough to see a pattern, few enough to read.
inline constexpr std::size_t kMaxImageFindings = 40;

//! Adds `problem` (if it is not empty, while fewer than kMaxImageFindings are kept) to
//! `findings`, with where its image came from: " [crash point N after|inside <step>,
//! choice a.b.c]" (the image's choice vector, which replays it).
inline void add_image_finding(std::vector<std::string>& findings, const std::string& problem,
                              std::uint64_t crash_point, bool at_ack, const std::string& step,
                              std::span<const std::uint32_t> choice) {
  if (problem.empty() || findings.size() >= kMaxImageFindings) return;
  std::string choice_s;
  for (auto x : choice) choice_s += (choice_s.empty() ? "" : ".") + std::to_string(x);
  findings.push_back(problem + " [crash point " + std::to_string(crash_point) +
                     (at_ack ? " after " : " inside ") + step + ", choice " + choice_s + "]");
}

}  // namespace wort::test
