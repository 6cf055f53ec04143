// Preflight, the weights into each rank's stages, then rank 0's search over the pipeline.
#include "job/translate_job.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>
#include <utility>

#include "comm/agree.h"
#include "comm/watchdog.h"
#include "core/enum_names.h"
#include "core/error.h"
#include "job/data_paths.h"
#include "job/weights_preflight.h"
#include "kernels/context.h"
#include "train/pipelined_forward.h"
#include "train/trainer.h"

namespace mpipe::job {

TranslateJob run_translate_job(const TranslateInputs& inputs, const comm::Communicator& world) {
  // A model of another kind is refused before its weights are matched against it.
  comm::agree(world, [&] {
    const config::Experiment experiment =
        config::load_experiment(inputs.config_path, inputs.overrides);
    check_input(experiment.data.kind == data::DatasetKind::kPairs,
                "{}: translate needs a translation model, trained on data.dataset: pairs, not {}",
                experiment.where("data.dataset"),
                name_of(data::kDatasetNames, experiment.data.kind));
  });
  PreflightResult checked =
      preflight_weights(inputs.config_path, inputs.overrides, inputs.source.weights, world);
  const config::Experiment& experiment = checked.experiment;
  const comm::WatchScope watch(world, "translation", comm::WaitPhase::kLong);
  const Shape output = checked.plan.model.layers.back().output;  // one example's
  std::optional<tokenize::Tokenizer> tokenizer;                  // rank 0's
  std::vector<std::vector<int>> sources;                         // rank 0's
  comm::agree(world, [&] {
    if (world.rank() != 0) return;
    check_tokenizer_path(experiment);
    const std::string& model = experiment.data.tokenizer;
    tokenizer = tokenize::Tokenizer::load(model);
    sources = inputs.read_sources(experiment, *tokenizer);
    check_input(output.rank() == 2 && output[0] == experiment.data.target_len,
                "{}: the model's output {} is not [data.target_len {}, vocab] logits",
                inputs.config_path, output, experiment.data.target_len);
    check_input(output[1] == tokenizer->vocab_size(),
                "{0}: the model outputs {2} scores per token but the tokenizer {3} has {1} pieces",
                inputs.config_path, tokenizer->vocab_size(), output[1], model);
  });
  // f32 whatever train.precision says, as the one-process command decodes.
  kernels::KernelContext kernels;
  train::Trainer trainer(experiment, std::move(checked.plan), world, kernels, *checked.dataset);
  TranslateJob job{.source = train::load_weights(trainer, experiment, inputs.source, world).source,
                   .translations = {}};
  const auto start = std::chrono::steady_clock::now();
  train::drive_pipelined(trainer, [&](train::PipelinedForward& forward) {
    train::Translator translator(
        experiment.data.source_len, experiment.data.target_len, output[1],
        {.pad = tokenizer->pad_id(), .bos = tokenizer->bos_id(), .eos = tokenizer->eos_id()},
        [&forward](std::vector<Tensor> data, int64_t position) {
          return forward.logits_at(std::move(data), position);
        });
    for (const std::vector<int>& ids : translator.translate(sources, inputs.options)) {
      job.translations.push_back(tokenizer->decode(ids));
    }
    spdlog::debug("translate: {} sentences decoded in {:.3f} s through {} stages on {} ranks",
                  sources.size(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                  trainer.placement().num_stages(), world.size());
  });
  return job;
}

}  // namespace mpipe::job
