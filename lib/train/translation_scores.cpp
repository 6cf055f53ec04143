// Translation scores at an evaluation: greedy decoding driven by rank 0 over the run's own
// pipeline, corpus BLEU and chrF of the decoded text against the targets' text, shared with every
// rank.
#include "train/translation_scores.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>
#include <utility>

#include "comm/watchdog.h"
#include "core/error.h"
#include "core/memory_account.h"
#include "score/bleu.h"
#include "score/chrf.h"
#include "tokenize/tokenizer.h"
#include "train/pipelined_forward.h"
#include "train/translator.h"

namespace mpipe::train {
namespace {

constexpr MemoryActivity kDecoding = MemoryActivity::part("the translation scores");

// World rank 0: the scores of pairs [0, count) of `split`, decoded over `forward`.
TranslationScores translate_and_score(const config::Experiment& experiment,
                                      const data::Dataset& dataset, data::Split split,
                                      int64_t count, int64_t vocab, PipelinedForward& forward) {
  // Sentences decoded together: an evaluation's largest micro-batch, so that a stage's decoding
  // forward holds no more than the plan gives its evaluation.
  const int64_t micro_batches = experiment.pipeline.micro_batches;
  const int64_t batch =
      (eval_batches(experiment.train, dataset.size(split)).batch + micro_batches - 1) /
      micro_batches;
  const tokenize::Tokenizer tokenizer = tokenize::Tokenizer::load(experiment.data.tokenizer);
  std::vector<int64_t> indices(static_cast<size_t>(count));
  std::iota(indices.begin(), indices.end(), 0);
  // {source, target_in} (data::ParallelDataset): the sources, and the targets with their eos.
  const Tensor sources = std::move(dataset.input_tensors(split, indices, 0, 0).at(0));
  const Tensor targets = dataset.targets(split, indices);
  const std::string fault = dataset.read_fault();
  if (!fault.empty()) throw InputError(fault);
  const int64_t source_len = sources.shape()[1];
  const int64_t target_len = targets.shape()[1];
  std::vector<std::vector<int>> source_ids;
  std::vector<std::string> references;
  for (int64_t i = 0; i < count; ++i) {
    source_ids.push_back(
        ids_before(std::span(sources.data() + i * source_len, static_cast<size_t>(source_len)),
                   tokenizer.eos_id(), true));
    references.push_back(tokenizer.decode(
        ids_before(std::span(targets.data() + i * target_len, static_cast<size_t>(target_len)),
                   tokenizer.eos_id(), false)));
  }
  Translator translator(
      source_len, target_len, vocab,
      {.pad = tokenizer.pad_id(), .bos = tokenizer.bos_id(), .eos = tokenizer.eos_id()},
      [&forward](std::vector<Tensor> data, int64_t position) {
        return forward.logits_at(std::move(data), position);
      });
  std::vector<std::string> hypotheses;
  for (const std::vector<int>& ids :
       translator.translate(source_ids, {.beam = 1, .batch = batch})) {
    hypotheses.push_back(tokenizer.decode(ids));
  }
  return {.bleu = score::corpus_bleu(hypotheses, references).score,
          .chrf = score::corpus_chrf(hypotheses, references).score,
          .sentences = count};
}

}  // namespace

std::vector<int> ids_before(std::span<const float> row, int stop, bool keep_stop) {
  std::vector<int> ids;
  for (const float value : row) {
    const int id = static_cast<int>(value);
    if (id == stop) {
      if (keep_stop) ids.push_back(id);
      break;
    }
    ids.push_back(id);
  }
  return ids;
}

std::optional<TranslationScores> score_translations(Trainer& trainer,
                                                    const config::Experiment& experiment,
                                                    const data::Dataset& dataset,
                                                    data::Split split) {
  const int64_t count = std::min(experiment.train.eval_bleu_sentences, dataset.size(split));
  if (experiment.data.kind != data::DatasetKind::kPairs || count <= 0) return std::nullopt;
  const comm::Communicator& world = trainer.world();
  const comm::WatchScope watch(world, "translation scores", comm::WaitPhase::kLong);
  const MemoryActivityScope label(kDecoding);
  const auto start = std::chrono::steady_clock::now();
  const int64_t vocab = trainer.plan().layers.back().output[1];
  double scores[2] = {0, 0};
  drive_pipelined(trainer, [&](PipelinedForward& forward) {
    const TranslationScores mine =
        translate_and_score(experiment, dataset, split, count, vocab, forward);
    scores[0] = mine.bleu;
    scores[1] = mine.chrf;
    spdlog::debug("translation scores: {} sentences decoded and scored in {:.3f} s", count,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  });
  world.broadcast(std::span<double>(scores, 2), 0);
  return TranslationScores{.bleu = scores[0], .chrf = scores[1], .sentences = count};
}

}  // namespace mpipe::train
