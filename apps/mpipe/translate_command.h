// `mpipe translate`: translates lines of text with a trained translation model, in one process
// or pipelined across the ranks mpirun starts.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "config/experiment.h"
#include "tokenize/tokenizer.h"
#include "train/translator.h"

namespace mpipe::app {

class TranslateCommand {
 public:
  // Adds the subcommand `translate` to `app`.
  explicit TranslateCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  const std::string& config_path() const { return config_path_; }
  const std::vector<std::string>& overrides() const { return overrides_; }
  // Translates in this one process; returns the process exit code.
  int run();
  // Translates pipelined across the ranks of `world`; returns the process exit code.
  int run(const comm::Communicator& world);

 private:
  // translate's sources from --input, with --ref's lines read into `references` and counted.
  std::vector<std::vector<int>> read_sources(const config::Experiment& experiment,
                                             const tokenize::Tokenizer& tokenizer,
                                             std::vector<std::string>& references) const;
  // translate's output: the translations on stdout, then --ref's scores on stderr.
  void print_translations(const std::vector<std::string>& translations,
                          const std::vector<std::string>& references) const;

  CLI::App* app_ = nullptr;
  std::string config_path_;
  std::vector<std::string> overrides_;
  std::string weights_path_;
  std::string tag_;                 // --to
  std::string input_;               // --input; "" = stdin
  std::string checkpoint_run_dir_;  // --checkpoint
  train::TranslateOptions options_;
  std::string references_path_;  // --ref
};

}  // namespace mpipe::app
