// mpipe: the command-line program. Parses the subcommands; runs those of one process without
// MPI, and for train and serve sets up MPI (its start bounded by comm.startup_timeout), the
// watchdog and logging; turns any error into a one-line message and a non-zero exit on every rank.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "comm/communicator.h"
#include "comm/watchdog.h"
#include "commands.h"
#include "core/error.h"
#include "core/tensor.h"
#include "init_deadline.h"
#include "launcher_rank.h"
#include "log/logging.h"
#include "parse_failure.h"
#include "startup.h"
#include "version.h"

int main(int argc, char** argv) {
  mpipe::reuse_freed_tensor_memory();  // each step's activations reuse the last step's memory
  mpipe::log::setup_plain_logging("info");

  CLI::App app{"mpipe: GPipe-style pipeline-parallel training over MPI"};
  app.set_version_flag("--version", mpipe::app::build_version());
  app.require_subcommand(1);
  mpipe::app::Commands commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return mpipe::app::exit_after_parse_failure(app, e, mpipe::app::launcher_rank());
  }
  if (!commands.needs_mpi()) return commands.run_alone();

  // MPI_Init waits for every rank of the job: comm.startup_timeout bounds that wait too.
  auto init_deadline = std::make_unique<mpipe::app::InitDeadline>(commands.startup_timeout_s());
  mpipe::comm::Environment mpi(&argc, &argv);
  init_deadline.reset();
  mpipe::comm::Communicator world = mpipe::comm::Communicator::world();
  mpipe::log::setup_logging(world.rank(), world.size(), "info");
  // Every wait on a peer has a deadline from here on (the config's comm: section, once read).
  mpipe::comm::Watchdog watchdog(world);
  world.set_watchdog(&watchdog);
  return mpipe::app::leave(world, commands.run(world));
}
