// Translations scored against references, for translate --ref and score.
#include "reference_scores.h"

#include <fmt/format.h>

#include "core/error.h"
#include "score/bleu.h"
#include "score/chrf.h"

namespace mpipe::app {

void check_line_counts(size_t sentences, size_t references, const std::string& sentence_source,
                       const std::string& ref_source) {
  check_input(sentences == references, "{}: {} lines, but {} has {}", ref_source, references,
              sentence_source, sentences);
}

std::string score_lines(const std::vector<std::string>& hypotheses,
                        const std::vector<std::string>& references) {
  return fmt::format("{}\n{}\n", score::corpus_bleu(hypotheses, references).format(),
                     score::corpus_chrf(hypotheses, references).format());
}

}  // namespace mpipe::app
