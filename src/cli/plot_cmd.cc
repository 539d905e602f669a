// cli/plot_cmd.cc — `wort plot`: the figures are drawn by tools/plot.py (matplotlib).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "cli/commands.h"

namespace wort::cli {

int plot_main(const Args& args) {
  const std::string script = source_dir() + "/tools/plot.py";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf(
        "usage: wort plot RESULTS.json [--out DIR]\n\n"
        "Draws the WORT paper's figures from a 'wort bench --json' file into DIR (default:\n"
        "the JSON's folder): insertion and search time per distribution (Fig. 7, 9),\n"
        "insertion time against PM write latency (Fig. 8, when the run swept\n"
        "--write-latency), range query time (Fig. 10), flushes and leaf depth (Table 1),\n"
        "latency percentiles and throughput over time of mixes. Times are CPU time per\n"
        "operation; the subtitles give the machine's load average at the start and end of\n"
        "the run; lines written back are drawn as lines flushed + non-temporal stores. Each\n"
        "index keeps one colour in every figure. Runs %s.\n",
        script.c_str());
    return args.empty() ? 2 : 0;
  }
  if (!std::filesystem::exists(script)) throw std::runtime_error(script + " not found");
  // Debian's matplotlib is installed for the system interpreter.
  const std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  std::vector<std::string> cmd{python, script};
  cmd.insert(cmd.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : cmd) argv.push_back(s.data());
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  std::perror("wort plot: exec python3");
  return 1;
}


}  // namespace wort::cli
