// mpipe: the command-line program. Sets up MPI and logging, parses the subcommands and turns
// any error into a one-line message and a non-zero exit on every rank.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "comm/communicator.h"
#include "commands.h"
#include "core/error.h"
#include "log/logging.h"

int main(int argc, char** argv) {
  mpipe::comm::Environment mpi(&argc, &argv);
  const mpipe::comm::Communicator world = mpipe::comm::Communicator::world();
  mpipe::log::setup_logging(world.rank(), world.size(), "info");

  CLI::App app{"mpipe: GPipe-style pipeline-parallel training over MPI"};
  app.require_subcommand(1);
  mpipe::app::Commands commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank parses the same command line; only rank 0 reports.
    return world.rank() == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 1);
  }
  return commands.run(world);
}
