// cli/commands.h — the `wort` subcommands. Each takes its arguments after the subcommand
// name and returns the process exit code; they may throw std::exception for usage errors
// (the CLI boundary is the one place exceptions are used).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace wort::cli {

using Args = std::vector<std::string>;

int bench_main(const Args& args, const Args& full_argv);
int demo_main(const Args& args);
int plot_main(const Args& args);
int list_main(const Args& args);
int serve_main(const Args& args);
int check_main(const Args& args);
int dump_main(const Args& args);

//! Thrown for a bad command line; main prints the message and a hint to use --help.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

//! Where the source tree is (for tools/plot.py and the git revision).
std::string source_dir();

}  // namespace wort::cli
