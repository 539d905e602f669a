// tests/support/wort_cmd.h — running the built `wort` command from a test, as an operator
// would, and reading a file whole.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

namespace wort::test {

//! What one run of the command gave: its exit status (-1: it did not exit) and its output,
//! stdout and stderr together.
struct CmdRun {
  int status = -1;
  std::string out;
};

//! Runs `wort <args>` (the binary of this build tree) through the shell.
inline CmdRun run_wort(const std::string& args) {
  CmdRun r;
  const std::string cmd = std::string(WORT_BINARY_DIR) + "/wort " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

//! The bytes of the file at `path` (empty if it cannot be read).
inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

}  // namespace wort::test
