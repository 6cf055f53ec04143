// mpipe: the command-line program. Sets up MPI, the watchdog and logging, parses the subcommands
// and turns any error into a one-line message and a non-zero exit on every rank.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "comm/communicator.h"
#include "comm/watchdog.h"
#include "commands.h"
#include "core/error.h"
#include "core/tensor.h"
#include "init_deadline.h"
#include "log/logging.h"
#include "parse_failure.h"
#include "startup.h"
#include "version.h"

int main(int argc, char** argv) {
  mpipe::reuse_freed_tensor_memory();  // each step's activations reuse the last step's memory
  // MPI_Init waits for every rank of the job: comm.startup_timeout bounds that wait too.
  auto init_deadline = std::make_unique<mpipe::app::InitDeadline>(
      mpipe::app::startup_timeout_before_mpi(argc, argv));
  mpipe::comm::Environment mpi(&argc, &argv);
  init_deadline.reset();
  mpipe::comm::Communicator world = mpipe::comm::Communicator::world();
  mpipe::log::setup_logging(world.rank(), world.size(), "info");
  // Every wait on a peer has a deadline from here on (the config's comm: section, once read).
  mpipe::comm::Watchdog watchdog(world);
  world.set_watchdog(&watchdog);

  CLI::App app{"mpipe: GPipe-style pipeline-parallel training over MPI"};
  app.set_version_flag("--version", mpipe::app::build_version());
  app.require_subcommand(1);
  mpipe::app::Commands commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return mpipe::app::exit_after_parse_failure(app, e, world.rank());
  }
  return mpipe::app::leave(world, commands.run(world));
}
