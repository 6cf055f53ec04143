// `mpipe score`: corpus BLEU and chrF of translations against references (one process).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace mpipe::app {

class ScoreCommand {
 public:
  // Adds the subcommand `score` to `app`.
  explicit ScoreCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  // Prints the scores; returns the process exit code.
  int run();

 private:
  CLI::App* app_ = nullptr;
  std::string hypotheses_path_;  // --hyp
  std::string references_path_;  // --ref
};

}  // namespace mpipe::app
