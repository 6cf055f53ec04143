// `mpipe score`: corpus BLEU and chrF of translations against references (one process).
#include "score_command.h"

#include <cstdio>
#include <vector>

#include "option_checks.h"
#include "reference_scores.h"
#include "text_lines.h"

namespace mpipe::app {

ScoreCommand::ScoreCommand(CLI::App& app) {
  app_ = app.add_subcommand(
      "score", "Corpus BLEU and chrF of translations against references (sacreBLEU's defaults)");
  app_->add_option("--hyp", hypotheses_path_, "Translations, one a line")
      ->required()
      ->check(kNotEmpty);
  app_->add_option("--ref", references_path_, "References, one a line")
      ->required()
      ->check(kNotEmpty);
}

int ScoreCommand::run() {
  const std::vector<std::string> hypotheses = read_lines(hypotheses_path_, "--hyp");
  const std::vector<std::string> references = read_lines(references_path_, "--ref");
  check_line_counts(hypotheses.size(), references.size(), lines_source(hypotheses_path_, "--hyp"),
                    lines_source(references_path_, "--ref"));
  std::fputs(score_lines(hypotheses, references).c_str(), stdout);
  return 0;
}

}  // namespace mpipe::app
