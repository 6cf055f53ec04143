// The subcommands of the mpipe program: which one the command line chose, whether it runs under
// MPI, and running it.
#pragma once

#include <CLI/CLI.hpp>

#include "comm/communicator.h"
#include "compare_command.h"
#include "eval_command.h"
#include "export_command.h"
#include "generate_command.h"
#include "plan_command.h"
#include "schedule_command.h"
#include "score_command.h"
#include "spool_commands.h"
#include "supervise_command.h"
#include "tokenize_commands.h"
#include "train_command.h"
#include "translate_command.h"

namespace mpipe::app {

class Commands {
 public:
  // Adds every subcommand to `app`, in the order --help lists them.
  explicit Commands(CLI::App& app);
  // The subcommands' option callbacks hold their addresses.
  Commands(const Commands&) = delete;
  Commands& operator=(const Commands&) = delete;
  // Whether the parsed subcommand runs on every rank under MPI (train, eval, serve, and translate
  // when a launcher started several ranks); the others are one process and run without MPI.
  bool needs_mpi() const;
  // Runs the parsed subcommand that needs MPI on this rank; returns the process exit code.
  int run(const comm::Communicator& world);
  // Runs the parsed subcommand of one process (on the launcher's rank 0 only, should one start
  // it on several); returns the process exit code.
  int run_alone();
  // After a parse, before MPI_Init (train and serve): comm.startup_timeout of train's experiment
  // (--set applied; the default when it cannot be read), else the default.
  double startup_timeout_s() const;

 private:
  TrainCommand train_;
  ScheduleCommand schedule_;
  PlanCommand plan_;
  GenerateCommand generate_;
  TranslateCommand translate_;
  EvalCommand eval_;
  ScoreCommand score_;
  ServeCommand serve_;
  SubmitCommand submit_;
  StatusCommand status_;
  CancelCommand cancel_;
  TokenizeCommand tokenize_;
  TokenizePairsCommand tokenize_pairs_;
  ExportCommand export_;
  CompareCommand compare_;
  SuperviseCommand supervise_;
};

}  // namespace mpipe::app
