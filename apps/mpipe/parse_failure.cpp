// A command line that does not parse: one line from rank 0, the same exit code on every rank.
#include "parse_failure.h"

#include <spdlog/spdlog.h>

#include <string>

namespace mpipe::app {

int exit_after_parse_failure(const CLI::App& app, const CLI::ParseError& error, int world_rank) {
  if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {  // --help, --version
    return world_rank == 0 ? app.exit(error) : 0;
  }
  if (world_rank == 0) {
    std::string command = "mpipe";
    for (const CLI::App* subcommand : app.get_subcommands())
      command += " " + subcommand->get_name();
    spdlog::error("{} (`{} --help` lists the options)", error.what(), command);
  }
  return 2;  // bad input, as for every other one-line error
}

}  // namespace mpipe::app
