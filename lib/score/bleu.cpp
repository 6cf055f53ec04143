// Corpus BLEU, a port of sacreBLEU 2.x's metrics/bleu.py and tokenizers/tokenizer_13a.py.
#include "score/bleu.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "core/error.h"
#include "score/text.h"

namespace mpipe::score {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_period_or_comma(char c) { return c == '.' || c == ','; }

// tokenizer_re.py's first class, [\{-\~\[-\` -\&\(-\+\:-\@\/]: ASCII only, so testing bytes
// matches Python's test of code points (every byte of a multi-byte UTF-8 sequence is >= 0x80).
bool is_split_symbol(char c) {
  return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
         (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

// Python's str.replace: every occurrence, left to right, in one pass.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  std::size_t start = 0;
  for (std::size_t at; (at = text.find(from, start)) != std::string_view::npos;
       start = at + from.size()) {
    out.append(text.substr(start, at - start)).append(to);
  }
  out.append(text.substr(start));
  return out;
}

// tokenizer_re.py's regular expressions, each applied as re.sub does (matches left to right,
// none overlapping). Over bytes they give what Python gives over code points: the patterns pair
// an ASCII character with a neighbour that is only tested for not being an ASCII digit, so a
// multi-byte character's bytes are copied through unchanged in order either way.
std::string split_symbols(std::string_view text) {  // ([\{-\~...]) -> " \1 "
  std::string out;
  out.reserve(text.size() * 2);
  for (const char c : text) {
    if (is_split_symbol(c)) {
      out.append({' ', c, ' '});
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string split_after_non_digit(std::string_view text) {  // ([^0-9])([\.,]) -> "\1 \2 "
  std::string out;
  out.reserve(text.size() * 2);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i + 1 < text.size() && !is_digit(text[i]) && is_period_or_comma(text[i + 1])) {
      out.append({text[i], ' ', text[i + 1], ' '});
      ++i;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::string split_before_non_digit(std::string_view text) {  // ([\.,])([^0-9]) -> " \1 \2"
  std::string out;
  out.reserve(text.size() * 2);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i + 1 < text.size() && is_period_or_comma(text[i]) && !is_digit(text[i + 1])) {
      out.append({' ', text[i], ' ', text[i + 1]});
      ++i;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::string split_dash_after_digit(std::string_view text) {  // ([0-9])(-) -> "\1 \2 "
  std::string out;
  out.reserve(text.size() * 2);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i + 1 < text.size() && is_digit(text[i]) && text[i + 1] == '-') {
      out.append({text[i], ' ', '-', ' '});
      ++i;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

// One map per order: ngrams[n - 1] maps an n-gram (its tokens joined by spaces) to its count.
using NgramCounts = std::vector<std::unordered_map<std::string, int64_t>>;

NgramCounts count_ngrams(const std::vector<std::string_view>& tokens, int max_order) {
  NgramCounts ngrams(max_order);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::string ngram;
    for (int n = 1; n <= max_order && i + n <= tokens.size(); ++n) {
      if (n > 1) ngram.push_back(' ');
      ngram.append(tokens[i + n - 1]);
      ++ngrams[n - 1][ngram];
    }
  }
  return ngrams;
}

// BLEU._preprocess_segment with lowercase=False.
std::string preprocess(const std::string& segment) {
  return tokenize_13a(strip_trailing_space(segment));
}

// BLEU._get_closest_ref_len: the reference length nearest the hypothesis's, the shorter on a tie.
int64_t closest_ref_len(int64_t hyp_len, const std::vector<int64_t>& ref_lens) {
  int64_t closest = ref_lens.front();
  for (const int64_t len : ref_lens) {
    const int64_t diff = std::abs(hyp_len - len);
    const int64_t best = std::abs(hyp_len - closest);
    if (diff < best || (diff == best && len < closest)) closest = len;
  }
  return closest;
}

// sacreBLEU's utils.my_log: log, with log(0) floored to -9999999999.
double floored_log(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }

}  // namespace

BleuStatistics& BleuStatistics::operator+=(const BleuStatistics& other) {
  if (other.counts.size() != counts.size() || other.totals.size() != totals.size()) {
    throw Error(fmt::format("BLEU statistics of n-gram order {} and {} cannot be added",
                            counts.size(), other.counts.size()));
  }
  sys_len += other.sys_len;
  ref_len += other.ref_len;
  for (std::size_t n = 0; n < counts.size(); ++n) {
    counts[n] += other.counts[n];
    totals[n] += other.totals[n];
  }
  return *this;
}

std::string BleuScore::format() const {
  std::string precision_list;
  for (std::size_t n = 0; n < precisions.size(); ++n) {
    precision_list += fmt::format("{}{:.1f}", n == 0 ? "" : "/", precisions[n]);
  }
  const double ratio = ref_len != 0 ? static_cast<double>(sys_len) / ref_len : 0.0;
  return fmt::format("BLEU = {:.2f} {} (BP = {:.3f} ratio = {:.3f} hyp_len = {} ref_len = {})",
                     score, precision_list, bp, ratio, sys_len, ref_len);
}

std::string tokenize_13a(std::string_view line) {
  std::string text = replace_all(line, "<skipped>", "");
  text = replace_all(text, "-\n", "");
  text = replace_all(text, "\n", " ");
  text = replace_all(text, "&quot;", "\"");
  text = replace_all(text, "&amp;", "&");
  text = replace_all(text, "&lt;", "<");
  text = replace_all(text, "&gt;", ">");
  text = split_symbols(" " + text + " ");
  text = split_dash_after_digit(split_before_non_digit(split_after_non_digit(text)));
  std::string tokens;
  for (const std::string_view word : split_words(text)) {
    if (!tokens.empty()) tokens.push_back(' ');
    tokens.append(word);
  }
  return tokens;
}

BleuStatistics bleu_statistics(std::span<const std::string> hypotheses,
                               std::span<const std::vector<std::string>> references,
                               int max_order) {
  if (max_order < 1) throw InputError(fmt::format("BLEU: n-gram order {} < 1", max_order));
  if (references.empty()) throw InputError("BLEU: no references");
  for (std::size_t k = 0; k < references.size(); ++k) {
    if (references[k].size() != hypotheses.size()) {
      throw InputError(fmt::format("BLEU: reference set {} has {} lines for {} hypotheses", k + 1,
                                   references[k].size(), hypotheses.size()));
    }
  }
  BleuStatistics stats;
  stats.counts.assign(max_order, 0);
  stats.totals.assign(max_order, 0);
  for (std::size_t i = 0; i < hypotheses.size(); ++i) {
    // The references' n-grams, each count the most any one reference has (Counter's |).
    NgramCounts ref_ngrams(max_order);
    std::vector<int64_t> ref_lens;
    for (const std::vector<std::string>& reference_set : references) {
      const std::string ref = preprocess(reference_set[i]);
      const std::vector<std::string_view> tokens = split_words(ref);
      ref_lens.push_back(static_cast<int64_t>(tokens.size()));
      NgramCounts ngrams = count_ngrams(tokens, max_order);
      for (int n = 0; n < max_order; ++n) {
        for (auto& [ngram, count] : ngrams[n]) {
          int64_t& merged = ref_ngrams[n][ngram];
          merged = std::max(merged, count);
        }
      }
    }
    const std::string hyp = preprocess(hypotheses[i]);
    const std::vector<std::string_view> tokens = split_words(hyp);
    const auto hyp_len = static_cast<int64_t>(tokens.size());
    stats.sys_len += hyp_len;
    stats.ref_len += closest_ref_len(hyp_len, ref_lens);
    const NgramCounts hyp_ngrams = count_ngrams(tokens, max_order);
    for (int n = 0; n < max_order; ++n) {
      for (const auto& [ngram, count] : hyp_ngrams[n]) {
        stats.totals[n] += count;
        const auto ref = ref_ngrams[n].find(ngram);
        if (ref != ref_ngrams[n].end()) stats.counts[n] += std::min(count, ref->second);
      }
    }
  }
  return stats;
}

BleuScore compute_bleu(const BleuStatistics& statistics) {
  const int max_order = static_cast<int>(statistics.counts.size());
  BleuScore result;
  result.sys_len = statistics.sys_len;
  result.ref_len = statistics.ref_len;
  result.counts = statistics.counts;
  result.totals = statistics.totals;
  result.precisions.assign(max_order, 0.0);
  result.bp = 1.0;
  if (statistics.sys_len < statistics.ref_len) {
    result.bp = statistics.sys_len > 0
                    ? std::exp(1.0 - static_cast<double>(statistics.ref_len) / statistics.sys_len)
                    : 0.0;
  }
  if (std::all_of(statistics.counts.begin(), statistics.counts.end(),
                  [](int64_t count) { return count == 0; })) {
    return result;  // sacreBLEU #141: no match at all scores 0, precisions 0
  }
  double smooth = 1.0;
  for (int n = 0; n < max_order; ++n) {
    const auto total = static_cast<double>(statistics.totals[n]);
    // An order the hypotheses are too short to have keeps precision 0, and the score is 0.
    if (statistics.totals[n] == 0) break;
    if (statistics.counts[n] == 0) {
      smooth *= 2;
      result.precisions[n] = 100.0 / (smooth * total);
    } else {
      result.precisions[n] = 100.0 * static_cast<double>(statistics.counts[n]) / total;
    }
  }
  double log_sum = 0.0;
  for (const double precision : result.precisions) log_sum += floored_log(precision);
  result.score = result.bp * std::exp(log_sum / max_order);
  return result;
}

BleuScore corpus_bleu(std::span<const std::string> hypotheses,
                      std::span<const std::vector<std::string>> references, int max_order) {
  return compute_bleu(bleu_statistics(hypotheses, references, max_order));
}

BleuScore corpus_bleu(std::span<const std::string> hypotheses,
                      std::span<const std::string> references) {
  const std::vector<std::vector<std::string>> reference_sets{
      std::vector<std::string>(references.begin(), references.end())};
  return corpus_bleu(hypotheses, reference_sets);
}

}  // namespace mpipe::score
