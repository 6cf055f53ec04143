// Translations scored against references, for translate --ref and score.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace mpipe::app {

// Refuses references of another count than the sentences they score: "--ref r.txt: 5 lines,
// but --hyp h.txt has 6".
void check_line_counts(size_t sentences, size_t references, const std::string& sentence_source,
                       const std::string& ref_source);

// sacreBLEU's two lines, BLEU and chrF2, for `hypotheses` against `references`, one each.
std::string score_lines(const std::vector<std::string>& hypotheses,
                        const std::vector<std::string>& references);

}  // namespace mpipe::app
