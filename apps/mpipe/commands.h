// The subcommands of the mpipe program and their options.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "config/experiment.h"
#include "data/tokenize_corpus.h"
#include "data/tokenize_pairs.h"
#include "supervise_command.h"
#include "tokenize/tokenizer.h"
#include "train/generator.h"
#include "train/init_weights.h"
#include "train/translator.h"

namespace mpipe::app {

// `train`'s run directory when --run-dir is not given: runs/<config name>.
std::string default_run_dir(const std::string& config_path);

class Commands {
 public:
  explicit Commands(CLI::App& app);
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
  // Each adds its subcommand to `app`, with its options and their checks.
  void add_train(CLI::App& app);
  void add_schedule(CLI::App& app);
  void add_plan(CLI::App& app);
  void add_generate(CLI::App& app);
  void add_translate(CLI::App& app);
  void add_eval(CLI::App& app);
  void add_score(CLI::App& app);
  void add_serve(CLI::App& app);
  void add_submit(CLI::App& app);
  void add_status(CLI::App& app);
  void add_cancel(CLI::App& app);
  void add_tokenize(CLI::App& app);
  void add_tokenize_pairs(CLI::App& app);
  void add_export(CLI::App& app);
  void add_compare(CLI::App& app);

  int train(const comm::Communicator& world);
  int schedule();
  int plan();
  int compare();
  int export_checkpoint();
  int generate();
  int translate();
  int translate(const comm::Communicator& world);
  // translate's sources from --input, with --ref's lines read into `references` and counted.
  std::vector<std::vector<int>> translate_sources(const config::Experiment& experiment,
                                                  const tokenize::Tokenizer& tokenizer,
                                                  std::vector<std::string>& references) const;
  // translate's output: the translations on stdout, then --ref's scores on stderr.
  void print_translations(const std::vector<std::string>& translations,
                          const std::vector<std::string>& references) const;
  int evaluate(const comm::Communicator& world);
  int score();
  int serve(const comm::Communicator& world);
  int submit();
  int status();
  int cancel();
  int tokenize();
  int tokenize_pairs();

  CLI::App* train_ = nullptr;
  CLI::App* schedule_ = nullptr;
  CLI::App* plan_ = nullptr;
  CLI::App* compare_ = nullptr;
  CLI::App* export_ = nullptr;
  CLI::App* generate_ = nullptr;
  CLI::App* translate_ = nullptr;
  CLI::App* eval_ = nullptr;
  CLI::App* score_ = nullptr;
  CLI::App* serve_ = nullptr;
  CLI::App* submit_ = nullptr;
  CLI::App* status_ = nullptr;
  CLI::App* cancel_ = nullptr;
  CLI::App* tokenize_ = nullptr;
  CLI::App* tokenize_pairs_ = nullptr;
  std::unique_ptr<SuperviseCommand> supervise_;

  std::string config_path_;
  std::vector<std::string> overrides_;
  std::string run_dir_;
  std::string export_path_;
  train::InitWeights init_weights_;  // --init-weights, --init-skip
  bool resume_ = false;
  bool resume_or_start_ = false;

  std::string schedule_kind_ = "gpipe";
  int stages_ = 4;
  int micro_batches_ = 8;
  int virtual_stages_ = 1;
  int plan_threads_ = 1;             // mpipe plan --threads-per-rank
  std::string plan_link_bandwidth_;  // mpipe plan --link-bandwidth
  bool plan_calibrate_ = false;      // mpipe plan --calibrate
  bool plan_assumed_rates_ = false;  // mpipe plan --assumed-rates
  std::string plan_memory_limit_;
  bool plan_json_ = false;

  std::vector<std::string> compare_paths_;
  double rtol_ = 0.0;
  std::string compare_only_;  // a regular expression: compare only the tensors it matches

  std::string weights_path_;  // generate, translate: the weights read; export: the file written
  int64_t export_step_ = -1;  // export --step; -1 = the newest committed checkpoint
  train::GenerateOptions generate_options_;
  std::string translate_tag_;               // translate --to
  std::string translate_input_;             // translate --input; "" = stdin
  std::string checkpoint_run_dir_;          // translate and eval --checkpoint
  std::string eval_split_;                  // eval --split; "" = the data's held-out split
  std::string eval_losses_;                 // eval --losses; "" = none
  std::string eval_logits_;                 // eval --logits; "" = none
  std::string eval_logits_limit_ = "1GiB";  // eval --logits-limit
  train::TranslateOptions translate_options_;
  std::string hypotheses_path_;  // score --hyp
  std::string references_path_;  // translate and score --ref

  std::string spool_dir_;
  double idle_exit_s_ = 0.0;  // 0 = never
  std::string experiment_name_;

  data::TokenizeOptions tokenize_options_;
  std::string tokenize_model_type_ = "bpe";
  data::TokenizePairsOptions pairs_options_;
  std::string pairs_model_type_ = "unigram";
};

}  // namespace mpipe::app
