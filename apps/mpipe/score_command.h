// `mpipe score`: corpus BLEU and chrF of translations against references (one process).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace mpipe::app {

class ScoreCommand {
 public:
  // Adds the subcommand `score` to `app`.
  explicit ScoreCommand(CLI::App& app);
  bool parsed() const { return score_->parsed(); }
  // Prints the scores; returns the process exit code.
  int run();

 private:
  CLI::App* score_ = nullptr;
  std::string hypotheses_path_;  // score --hyp
  std::string references_path_;  // score --ref
};

}  // namespace mpipe::app
