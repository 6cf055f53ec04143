// Corpus chrF, a port of sacreBLEU 2.x's metrics/chrf.py (word_order 0) and metrics/helpers.py.
#include "score/chrf.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "core/error.h"
#include "score/text.h"

namespace mpipe::score {

namespace {

// One map per order: ngrams[n - 1] maps an n-gram of code points to its count.
using CharNgrams = std::vector<std::unordered_map<std::u32string_view, int64_t>>;

// The code points of `text` without its whitespace (''.join(line.split())).
std::u32string characters(std::string_view text) {
  std::u32string points = decode_utf8(text);
  std::erase_if(points, is_space);
  return points;
}

// helpers.extract_all_char_ngrams; the keys view `chars`.
CharNgrams count_ngrams(const std::u32string& chars, int char_order) {
  CharNgrams ngrams(char_order);
  const std::u32string_view view(chars);
  for (int n = 1; n <= char_order; ++n) {
    for (std::size_t i = 0; i + n <= view.size(); ++i) ++ngrams[n - 1][view.substr(i, n)];
  }
  return ngrams;
}

// CHRF._get_match_statistics for each order, laid out as ChrfStatistics.
ChrfStatistics match_statistics(const CharNgrams& hyp, const CharNgrams& ref) {
  ChrfStatistics stats;
  for (std::size_t n = 0; n < hyp.size(); ++n) {
    int64_t hyp_count = 0;
    int64_t ref_count = 0;
    int64_t match_count = 0;
    for (const auto& [ngram, count] : hyp[n]) {
      hyp_count += count;
      const auto found = ref[n].find(ngram);
      if (found != ref[n].end()) match_count += std::min(count, found->second);
    }
    for (const auto& entry : ref[n]) ref_count += entry.second;
    // No hypothesis n-grams are counted where the reference has none of that order.
    stats.hyp.push_back(ref[n].empty() ? 0 : hyp_count);
    stats.ref.push_back(ref_count);
    stats.match.push_back(match_count);
  }
  return stats;
}

// CHRF._compute_f_score with word_order 0.
double f_score(const ChrfStatistics& stats, const ChrfOptions& options) {
  constexpr double eps = 1e-16;
  const int order = static_cast<int>(stats.hyp.size());
  const double factor = static_cast<double>(options.beta) * options.beta;
  double score = 0.0;
  double avg_prec = 0.0;
  double avg_rec = 0.0;
  int effective_order = 0;
  for (int n = 0; n < order; ++n) {
    const auto n_hyp = static_cast<double>(stats.hyp[n]);
    const auto n_ref = static_cast<double>(stats.ref[n]);
    const auto n_match = static_cast<double>(stats.match[n]);
    const double prec = stats.hyp[n] > 0 ? n_match / n_hyp : eps;
    const double rec = stats.ref[n] > 0 ? n_match / n_ref : eps;
    const double denom = factor * prec + rec;
    score += denom > 0 ? (1 + factor) * prec * rec / denom : eps;
    if (stats.hyp[n] > 0 && stats.ref[n] > 0) {
      avg_prec += prec;
      avg_rec += rec;
      ++effective_order;
    }
  }
  if (options.eps_smoothing) return 100 * score / order;
  if (effective_order == 0) return 0.0;
  avg_prec /= effective_order;
  avg_rec /= effective_order;
  if (avg_prec + avg_rec == 0.0) return 0.0;
  const double score_of_averages =
      (1 + factor) * avg_prec * avg_rec / (factor * avg_prec + avg_rec);
  return 100 * score_of_averages;
}

}  // namespace

ChrfStatistics& ChrfStatistics::operator+=(const ChrfStatistics& other) {
  if (other.hyp.size() != hyp.size()) {
    throw Error(fmt::format("chrF statistics of character order {} and {} cannot be added",
                            hyp.size(), other.hyp.size()));
  }
  for (std::size_t n = 0; n < hyp.size(); ++n) {
    hyp[n] += other.hyp[n];
    ref[n] += other.ref[n];
    match[n] += other.match[n];
  }
  return *this;
}

std::string ChrfScore::format() const { return fmt::format("chrF{} = {:.2f}", beta, score); }

ChrfStatistics chrf_statistics(std::span<const std::string> hypotheses,
                               std::span<const std::vector<std::string>> references,
                               const ChrfOptions& options) {
  if (options.char_order < 1) {
    throw InputError(fmt::format("chrF: character order {} < 1", options.char_order));
  }
  if (references.empty()) throw InputError("chrF: no references");
  for (std::size_t k = 0; k < references.size(); ++k) {
    if (references[k].size() != hypotheses.size()) {
      throw InputError(fmt::format("chrF: reference set {} has {} lines for {} hypotheses", k + 1,
                                   references[k].size(), hypotheses.size()));
    }
  }
  const auto order = static_cast<std::size_t>(options.char_order);
  ChrfStatistics stats{std::vector<int64_t>(order), std::vector<int64_t>(order),
                       std::vector<int64_t>(order)};
  for (std::size_t i = 0; i < hypotheses.size(); ++i) {
    const std::u32string hyp_chars = characters(hypotheses[i]);
    const CharNgrams hyp_ngrams = count_ngrams(hyp_chars, options.char_order);
    ChrfStatistics best;
    double best_f = -1.0;
    for (const std::vector<std::string>& reference_set : references) {
      const std::u32string ref_chars = characters(reference_set[i]);
      ChrfStatistics sentence =
          match_statistics(hyp_ngrams, count_ngrams(ref_chars, options.char_order));
      const double f = f_score(sentence, options);
      if (f > best_f) {
        best_f = f;
        best = std::move(sentence);
      }
    }
    stats += best;
  }
  return stats;
}

ChrfScore compute_chrf(const ChrfStatistics& statistics, const ChrfOptions& options) {
  return ChrfScore{f_score(statistics, options), options.beta};
}

ChrfScore corpus_chrf(std::span<const std::string> hypotheses,
                      std::span<const std::vector<std::string>> references,
                      const ChrfOptions& options) {
  return compute_chrf(chrf_statistics(hypotheses, references, options), options);
}

ChrfScore corpus_chrf(std::span<const std::string> hypotheses,
                      std::span<const std::string> references, const ChrfOptions& options) {
  const std::vector<std::vector<std::string>> reference_sets{
      std::vector<std::string>(references.begin(), references.end())};
  return corpus_chrf(hypotheses, reference_sets, options);
}

}  // namespace mpipe::score
