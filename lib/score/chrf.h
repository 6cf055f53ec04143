// Corpus chrF as sacreBLEU 2.x's CHRF computes it: character n-grams, whitespace removed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mpipe::score {

// sacreBLEU's CHRF settings (word_order 0: chrF, not chrF++; case kept; whitespace removed).
struct ChrfOptions {
  int char_order = 6;          // character n-grams of 1..char_order code points
  int beta = 2;                // recall weighs beta times as much as precision
  bool eps_smoothing = false;  // false: sacreBLEU's default, the F-score of the precision and
                               // recall averaged over the orders both sides have; true: the
                               // mean of each order's F-score (chrF++.py, NLTK, Moses)
};

// What corpus chrF sums over the sentences, per order n (index n - 1); sums of several parts
// give the whole corpus's score.
struct ChrfStatistics {
  std::vector<int64_t> hyp;    // hypothesis n-grams, 0 for a sentence whose reference has none
  std::vector<int64_t> ref;    // reference n-grams
  std::vector<int64_t> match;  // hypothesis n-grams matched (clipped by the reference's count)

  // Adds `other`'s sums; both must have the same order.
  ChrfStatistics& operator+=(const ChrfStatistics& other);
};

struct ChrfScore {
  double score = 0;  // 0-100
  int beta = 2;

  // sacreBLEU's line: "chrF2 = 59.73".
  std::string format() const;
};

// The statistics of `hypotheses` against `references`, where references[k][i] is the k-th
// reference of hypothesis i (sacreBLEU's layout). Characters are code points (see text.h);
// whitespace (Python's str.split) is removed first. With several references a sentence takes the
// statistics of the one with the best sentence F-score (the first on a tie). Throws InputError
// when there is no reference set or a set's length differs from the hypotheses'.
ChrfStatistics chrf_statistics(std::span<const std::string> hypotheses,
                               std::span<const std::vector<std::string>> references,
                               const ChrfOptions& options = {});

// sacreBLEU's CHRF._compute_f_score over summed statistics.
ChrfScore compute_chrf(const ChrfStatistics& statistics, const ChrfOptions& options = {});

// sacreBLEU's corpus_chrf(hypotheses, references) (with its defaults when `options` is {}).
ChrfScore corpus_chrf(std::span<const std::string> hypotheses,
                      std::span<const std::vector<std::string>> references,
                      const ChrfOptions& options = {});
// One reference per hypothesis.
ChrfScore corpus_chrf(std::span<const std::string> hypotheses,
                      std::span<const std::string> references, const ChrfOptions& options = {});

}  // namespace mpipe::score
