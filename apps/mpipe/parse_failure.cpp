// A command line that does not parse: one line from rank 0, the same exit code on every rank.
#include "parse_failure.h"

#include <spdlog/spdlog.h>

#include <string>
#include <vector>

namespace mpipe::app {
namespace {

// "train, schedule, ...": the program's subcommands, in the order --help lists them.
std::string subcommand_names(const CLI::App& app) {
  std::string names;
  for (const CLI::App* subcommand : app.get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + subcommand->get_name();
  }
  return names;
}

// The line for `error`: CLI11's own, except where it misses the point: an unknown subcommand
// reads "A subcommand is required", and --help or --version with more after it (which is left
// over) is not an error to CLI11.
std::string message(const CLI::App& app, const CLI::ParseError& error) {
  const std::vector<std::string> left = app.remaining();
  if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
    return "The following argument was not expected: " + left.front();
  }
  if (app.get_subcommands().empty()) {  // no subcommand was recognised
    if (!left.empty() && !left.front().starts_with('-')) {
      return fmt::format("unknown subcommand '{}'; the subcommands are {}", left.front(),
                         subcommand_names(app));
    }
    if (error.get_name() == "RequiredError") {
      return "A subcommand is required: " + subcommand_names(app);
    }
  }
  return error.what();
}

}  // namespace

int exit_after_parse_failure(const CLI::App& app, const CLI::ParseError& error, int rank) {
  const bool success = error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success);
  if (success && app.remaining().empty()) return rank == 0 ? app.exit(error) : 0;
  if (rank == 0) {
    std::string command = "mpipe";
    for (const CLI::App* subcommand : app.get_subcommands()) {
      command += " " + subcommand->get_name();
    }
    spdlog::error("{} (`{} --help` lists the options)", message(app, error), command);
  }
  return 2;  // bad input, as for every other one-line error
}

}  // namespace mpipe::app
