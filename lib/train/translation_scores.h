// BLEU and chrF of a translation model's greedy translations of a split's first pairs, during
// training's evaluations and `mpipe eval` (data.dataset: pairs, train.eval_bleu_sentences).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "config/experiment.h"
#include "data/dataset.h"
#include "train/trainer.h"

namespace mpipe::train {

struct TranslationScores {
  double bleu = 0;        // sacreBLEU's corpus BLEU (13a tokens), 0-100
  double chrf = 0;        // sacreBLEU's corpus chrF2, 0-100
  int64_t sentences = 0;  // the pairs translated: [0, sentences) of the split
};

// The ids of one padded row of a pair's tensor before the first `stop` id (all of them when it
// has none), and `stop` itself when `keep_stop`; the padding after it is dropped.
std::vector<int> ids_before(std::span<const float> row, int stop, bool keep_stop);

// Collective over the trainer's world, between steps; changes no weight. When the data is pairs
// and train.eval_bleu_sentences > 0: the first min(that, the split's size) pairs of `split`
// translated greedily (train::Translator, in batches of an evaluation's micro-batch) with the
// current weights, world rank 0
// driving the search and every forward running through the first replica's own stages
// (train::PipelinedForward), so no rank needs the whole model; hypothesis and reference are the
// tokenizer's text of the decoded ids and of the pair's target. Every rank returns rank 0's
// scores. nullopt, with no communication, for other data or when the setting is 0. A failure on
// rank 0 (a read fault of the shards) throws AgreedError on every rank; the memory limit in a
// stage ends the job from that rank, as in a step (train::PipelinedForward).
std::optional<TranslationScores> score_translations(Trainer& trainer,
                                                    const config::Experiment& experiment,
                                                    const data::Dataset& dataset,
                                                    data::Split split);

}  // namespace mpipe::train
