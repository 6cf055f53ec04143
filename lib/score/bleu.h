// Corpus BLEU as sacreBLEU 2.x computes it by default: the 13a tokenizer, exp smoothing.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mpipe::score {

// sacreBLEU's default n-gram order.
inline constexpr int kBleuMaxOrder = 4;

// What corpus BLEU sums over the sentences; sums of several parts (the shards of a test set
// scored on several ranks) give the whole corpus's score.
struct BleuStatistics {
  int64_t sys_len = 0;          // hypothesis tokens
  int64_t ref_len = 0;          // reference tokens: for each sentence the closest reference's
  std::vector<int64_t> counts;  // counts[n - 1]: matched n-grams (clipped by the references)
  std::vector<int64_t> totals;  // totals[n - 1]: hypothesis n-grams

  // Adds `other`'s sums; both must have the same n-gram order.
  BleuStatistics& operator+=(const BleuStatistics& other);
};

struct BleuScore {
  double score = 0;                // 0-100
  std::vector<double> precisions;  // precisions[n - 1], 0-100, smoothed as sacreBLEU's 'exp'
  double bp = 0;                   // brevity penalty
  int64_t sys_len = 0;
  int64_t ref_len = 0;
  std::vector<int64_t> counts;
  std::vector<int64_t> totals;

  // sacreBLEU's line: "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17
  // ref_len = 18)".
  std::string format() const;
};

// sacreBLEU's Tokenizer13a (mteval-v13a's tokenization): "<skipped>" and "-\n" removed,
// newlines to spaces, &quot; &amp; &lt; &gt; unescaped, ASCII symbols split off, '.' and ','
// split off unless between digits, '-' after a digit split off; single spaces between tokens.
std::string tokenize_13a(std::string_view line);

// The statistics of `hypotheses` against `references`, where references[k][i] is the k-th
// reference of hypothesis i (sacreBLEU's layout: one list per reference set). Each segment is
// stripped of trailing whitespace and tokenized with 13a; n-gram matches are clipped by the most
// any one reference has. An empty string is a reference that matches nothing. Throws InputError
// when there is no reference set or a set's length differs from the hypotheses'.
BleuStatistics bleu_statistics(std::span<const std::string> hypotheses,
                               std::span<const std::vector<std::string>> references,
                               int max_order = kBleuMaxOrder);

// sacreBLEU's BLEU.compute_bleu with smooth_method='exp' and effective_order=False: an order
// without matches gets precision 100 / (2^k · total) for the k-th such order; no match at all,
// or an order without hypothesis n-grams, scores 0.
BleuScore compute_bleu(const BleuStatistics& statistics);

// sacreBLEU's corpus_bleu(hypotheses, references) with its defaults.
BleuScore corpus_bleu(std::span<const std::string> hypotheses,
                      std::span<const std::vector<std::string>> references,
                      int max_order = kBleuMaxOrder);
// One reference per hypothesis.
BleuScore corpus_bleu(std::span<const std::string> hypotheses,
                      std::span<const std::string> references);

}  // namespace mpipe::score
