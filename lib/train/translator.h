// Translator: decodes target token ids from source token ids with a trained encoder-decoder
// (data.dataset: pairs): beam search, greedy at width 1, over the whole model on one process or
// over a run's pipeline.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "core/tensor.h"
#include "kernels/context.h"
#include "model/layer_spec.h"

namespace mpipe::train {

// The ids decoding places and stops at (the tokenizer's).
struct SpecialTokens {
  int pad = 0;  // fills the source and the decoder input after their tokens
  int bos = 2;  // the decoder input's first token
  int eos = 3;  // ends a translation
};

struct TranslateOptions {
  int64_t beam = 1;    // hypotheses kept per sentence; 1 = greedy
  int64_t batch = 32;  // sentences decoded together
};

// The model a search reads: the logits [rows, vocab] at decoder position `position` of the
// model's output for the data inputs {source [rows, source_len], target_in [rows, target_len]}.
using NextLogits = std::function<Tensor(std::vector<Tensor> data, int64_t position)>;

// The rows [rows, vocab] at position `position` of a model's output logits [rows, positions,
// vocab]: what a NextLogits returns.
Tensor logits_at_position(const Tensor& logits, int64_t position);

class Translator {
 public:
  // Decodes with `next_logits` (train::PipelinedForward: the run's own pipeline).
  Translator(int64_t source_len, int64_t target_len, int64_t vocab, SpecialTokens tokens,
             NextLogits next_logits);
  // Builds the whole model on this process for the data inputs "source" [source_len] and
  // "target_in" [target_len] (data::ParallelDataset's), loads `weights` (exported names
  // "layers.<i>.<name>"), and runs its forwards with `kernels`. Throws InputError naming
  // `weights_source` when a weight is missing or has another shape, or when the model's output
  // is not [target_len, vocab] logits.
  Translator(const model::ModelSpec& spec, int64_t source_len, int64_t target_len,
             SpecialTokens tokens, const std::vector<checkpoint::NamedTensor>& weights,
             const std::string& weights_source, kernels::KernelContext& kernels);

  int64_t vocab() const { return vocab_; }

  // The translation of each source (its ids with eos, at most source_len of them): the ids of
  // the best hypothesis, without its eos, at most target_len. Each step runs the whole model on
  // every live hypothesis's prefix (bos, then the ids so far, padded) and reads the logits at the
  // prefix's last position, so a sentence costs O(target_len^2) decoder positions (no cache).
  // A hypothesis ends at eos or after target_len ids. Scores are summed log-probabilities; a
  // sentence's search ends when `beam` hypotheses have ended (at the last step every live one
  // ends with its most likely id), and the best of them by score / its length (ids, with the eos)
  // wins (ties: the first to end). Per step and live hypothesis only its beam + 1 most likely ids
  // are candidates; the candidates of all live hypotheses are ranked by score (ties: the earlier
  // hypothesis, then the lower id) and taken in that order: one with eos ends, the others live on
  // until `beam` are live. At width 1 that is greedy decoding: the first largest logit.
  std::vector<std::vector<int>> translate(const std::vector<std::vector<int>>& sources,
                                          const TranslateOptions& options);

 private:
  struct Hypothesis {
    std::vector<int> ids;  // after bos, without eos
    double score = 0;      // the ids' summed log-probabilities (with the eos, once ended)
  };
  struct Search;

  // Log-probabilities [rows, vocab] of the next id after each row's prefix of `step` ids.
  std::vector<double> next_log_probs(const std::vector<const std::vector<int>*>& sources,
                                     const std::vector<const Hypothesis*>& prefixes, int64_t step);
  // One step of one sentence's search, from its live hypotheses' log-probabilities.
  void advance(Search& search, const double* log_probs, int64_t step, int64_t beam) const;

  int64_t source_len_;
  int64_t target_len_;
  SpecialTokens tokens_;
  int64_t vocab_ = 0;
  NextLogits next_logits_;
};

}  // namespace mpipe::train
