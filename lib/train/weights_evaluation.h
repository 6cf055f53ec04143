// Evaluating trained weights (a run's committed checkpoint, or a weights file) on one split of the
// data, pipelined over the ranks as a run's evaluations are (`mpipe eval`).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "comm/communicator.h"
#include "config/experiment.h"
#include "data/dataset.h"
#include "kernels/context.h"
#include "train/eval_measures.h"
#include "train/pipeline_plan.h"
#include "train/trainer.h"
#include "train/translation_scores.h"

namespace mpipe::train {

// The weights evaluated: one of the two.
struct WeightsSource {
  std::string checkpoint;  // a run directory (its newest committed step) or a step folder in it
  std::string weights;     // a weights file, matched against the model at preflight
};

// The files rank 0 writes after an evaluation, each atomically (empty: none).
struct EvalFiles {
  // Each example's own loss, one line per example in example order: its index in the split, its
  // loss (the mean over its tokens for sequences) and its tokens (1 for an example with one
  // target), tab-separated.
  std::string losses;
  // Each example's model output (what the loss reads: logits), a safetensors file of one f32
  // tensor "logits" [examples, ...the model's output shape] in example order, with metadata
  // "source" and "split" (WeightsEvaluation's).
  std::string logits;
  // The most bytes of outputs `logits` may hold (rank 0 gathers them in memory, and a language
  // model's are examples × seq_len × vocab floats): more is refused before the evaluation.
  int64_t logits_limit = int64_t{1} << 30;
};

struct WeightsEvaluation {
  std::string source;  // "runs/x (checkpoint step 4)", or the weights file
  std::string split;   // "train", "val" or "test"
  EvalReport report;
  EvalMeasures measures;  // rank 0's (bits per byte is read there)
  // Translation pairs with train.eval_bleu_sentences > 0: the split's first pairs translated.
  std::optional<TranslationScores> translation;
};

// The split called `name` of data `kind`: "train", or the held-out split by the name it goes by
// (data::held_out_split_name). Throws InputError "--split test: tokens data has no test split (its
// held-out split is val)".
data::Split parse_split(std::string_view name, data::DatasetKind kind);

// Weights loaded into a trainer's stages, as messages name them.
struct LoadedWeights {
  std::string source;  // "runs/x (checkpoint step 4)", or the weights file
  int64_t step = 0;    // the checkpoint's step; 0 for a weights file
};

// Collective over `world`: loads `source` into this rank's stages of `trainer` (a checkpoint:
// rank 0 picks the step, the run's newest committed one or the step folder's, verified and
// checked against the model as a resume loads it; a weights file as --init-weights loads it).
// Throws AgreedError on every rank for a missing, damaged or mismatched checkpoint or file.
LoadedWeights load_weights(Trainer& trainer, const config::Experiment& experiment,
                           const WeightsSource& source, const comm::Communicator& world);

// Collective over `world`: builds this rank's stages of `plan`, loads the weights into them
// (load_weights), and evaluates `split` (parse_split's; empty: the held-out one) as a
// run's evaluations do (Trainer::evaluate: train.eval_batch_size, train.eval_batches), so a
// checkpoint's numbers are those its run logged at that step (a translation model's BLEU and chrF
// too: score_translations). Rank 0 then writes `files`. Throws AgreedError on every rank, before
// evaluating for what it can check then (a file that cannot be written, logits over
// `files.logits_limit`), and with no file written:
// "runs/x: --checkpoint: no committed checkpoint (checkpoints/ holds no committed step)",
// ".../step_00000004: tensor layers.3.weight is missing", ...
WeightsEvaluation evaluate_weights(const config::Experiment& experiment,
                                   const data::Dataset& dataset, RunPlan plan,
                                   const WeightsSource& source, std::string_view split,
                                   const EvalFiles& files, const comm::Communicator& world,
                                   kernels::KernelContext& kernels);

}  // namespace mpipe::train
