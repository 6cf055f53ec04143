// The subcommands' dispatch: the one the command line chose runs, under MPI after the start-up
// handshake (train, eval, translate on several ranks, serve) or as one process; its errors become
// the exit code (and, under MPI, agree or end the job).
#include "commands.h"

#include <spdlog/spdlog.h>

#include <exception>

#include "comm/watchdog.h"
#include "config/experiment.h"
#include "core/error.h"
#include "core/memory_account.h"
#include "job/eval_job.h"
#include "job/train_job.h"
#include "job/translate_job.h"
#include "launcher_rank.h"
#include "startup.h"

namespace mpipe::app {
namespace {

// Ends the whole job from this rank, which cannot reach agreement with its peers (a lost peer,
// or a rank over its memory limit mid-step): logs `line`, then MPI_Abort(code) kills every rank.
[[noreturn]] void end_job(const comm::Communicator& world, const char* line, int code) {
  spdlog::error("{}", line);
  spdlog::default_logger()->flush();
  world.abort(code);
}

}  // namespace

Commands::Commands(CLI::App& app)
    : train_(app),
      schedule_(app),
      plan_(app),
      generate_(app),
      translate_(app),
      eval_(app),
      score_(app),
      serve_(app),
      submit_(app),
      status_(app),
      cancel_(app),
      tokenize_(app),
      tokenize_pairs_(app),
      export_(app),
      compare_(app),
      supervise_(app) {}

bool Commands::needs_mpi() const {
  return train_.parsed() || eval_.parsed() || serve_.parsed() ||
         (translate_.parsed() && launcher_size() > 1);
}

int Commands::run(const comm::Communicator& world) {
  try {
    // The experiment's deadlines bound every wait from the first collective on.
    if (train_.parsed()) {
      job::use_experiment_deadlines(train_.config_path(), train_.overrides(), world);
    }
    if (eval_.parsed()) {
      job::use_experiment_deadlines(eval_.config_path(), eval_.overrides(), world);
    }
    if (translate_.parsed()) {
      job::use_experiment_deadlines(translate_.config_path(), translate_.overrides(), world);
    }
    start_up(world);  // the first collective: every rank runs the same mpipe version
    if (train_.parsed()) return train_.run(world);
    if (eval_.parsed()) return eval_.run(world);
    if (translate_.parsed()) return translate_.run(world);
    if (serve_.parsed()) return serve_.run(world);
    return 1;
  } catch (const AgreedError& e) {
    // Every rank has this error (they agreed on it): each exits, rank 0 alone reports.
    if (world.rank() == 0) spdlog::error("{}", e.what());
    return e.exit_code();
  } catch (const comm::WatchdogTimeout& e) {
    // A peer is lost (or hangs while a stop was requested): no agreement is possible.
    end_job(world, e.what(), comm::kWatchdogExitCode);
  } catch (const MemoryLimitExceeded& e) {
    // One rank passed pipeline.memory_limit mid-step while its peers wait for it in receives:
    // no agreement is possible either.
    end_job(world, e.what(), kMemoryLimitExitCode);
  } catch (const InputError& e) {
    // Bad input is usually seen by every rank alike: if all ranks fail, each exits cleanly and
    // rank 0 alone prints the message. If only some fail, the others would wait forever in
    // a collective, so the failing rank aborts the whole job.
    spdlog::error("{}", e.what());
    if (world.size() > 1) world.abort(2);
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    if (world.size() > 1) world.abort(1);
    return 1;
  }
}

int Commands::run_alone() {
  // Started by a launcher on several ranks by mistake: rank 0 runs it, the others do nothing.
  if (launcher_rank() != 0) return 0;
  try {
    if (schedule_.parsed()) return schedule_.run();
    if (plan_.parsed()) return plan_.run();
    if (compare_.parsed()) return compare_.run();
    if (generate_.parsed()) return generate_.run();
    if (translate_.parsed()) return translate_.run();
    if (score_.parsed()) return score_.run();
    if (export_.parsed()) return export_.run();
    if (submit_.parsed()) return submit_.run();
    if (status_.parsed()) return status_.run();
    if (cancel_.parsed()) return cancel_.run();
    if (tokenize_.parsed()) return tokenize_.run();
    if (tokenize_pairs_.parsed()) return tokenize_pairs_.run();
    if (supervise_.parsed()) return supervise_.run();
    return 1;
  } catch (const AgreedError& e) {
    spdlog::error("{}", e.what());
    return e.exit_code();
  } catch (const InputError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}

double Commands::startup_timeout_s() const {
  comm::CommConfig deadlines;
  if (train_.parsed()) {
    try {
      deadlines = config::load_comm_section(train_.config_path(), train_.overrides());
    } catch (const InputError&) {
      // The default: preflight reads the file again and reports its problem on every rank.
    }
  }
  return deadlines.startup_timeout_s;
}

}  // namespace mpipe::app
