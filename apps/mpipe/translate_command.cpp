// `mpipe translate`: translates lines of text with a trained translation model, in one process
// or pipelined across the ranks mpirun starts.
#include "translate_command.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>

#include "checkpoint/checkpoint_weights.h"
#include "checkpoint/safetensors.h"
#include "core/error.h"
#include "data/dataset.h"
#include "job/data_paths.h"
#include "job/translate_job.h"
#include "kernels/context.h"
#include "option_checks.h"
#include "reference_scores.h"
#include "text_lines.h"
#include "train/checkpoint_model.h"
#include "train/translate_text.h"

namespace mpipe::app {

TranslateCommand::TranslateCommand(CLI::App& app) {
  app_ = app.add_subcommand(
      "translate",
      "Translate lines of text with a trained translation model (data.dataset: pairs), one "
      "process, or pipelined across the ranks mpirun starts");
  app_->add_option("config", config_path_, "The experiment YAML file it was trained with")
      ->required()
      ->check(kNotEmpty);
  auto* translate_weights =
      app_->add_option("--weights", weights_path_, "Exported weights (.safetensors)")
          ->check(kNotEmpty);
  app_->add_option("--checkpoint", checkpoint_run_dir_,
                   "A run directory: its newest committed checkpoint's weights instead")
      ->check(kNotEmpty)
      ->excludes(translate_weights);
  app_->add_option("--to", tag_,
                   "The target language's tag, a piece of data.tokenizer: '<2en>' ...")
      ->required()
      ->check(kNotEmpty);
  app_->add_option("--input", input_, "Sentences to translate, one a line (default: stdin)");
  app_->add_option("--beam", options_.beam,
                   "Beam width, 1 to 64 (1 = greedy: always the most likely token)")
      ->check(unnamed(CLI::Range(int64_t{1}, int64_t{64})))
      ->capture_default_str();
  app_->add_option("--batch", options_.batch, "Sentences decoded together, 1 to 4096")
      ->check(unnamed(CLI::Range(int64_t{1}, int64_t{4096})))
      ->capture_default_str();
  app_->add_option("--ref", references_path_,
                   "Reference translations, one a line: print BLEU and chrF on stderr")
      ->check(kNotEmpty);
  app_->add_option("--set", overrides_, "Override a config key: key.path=value");
  app_->callback([this] {
    if (weights_path_.empty() && checkpoint_run_dir_.empty()) {
      throw CLI::RequiredError("--weights or --checkpoint");
    }
  });
}

std::vector<std::vector<int>> TranslateCommand::read_sources(
    const config::Experiment& experiment, const tokenize::Tokenizer& tokenizer,
    std::vector<std::string>& references) const {
  const std::string input_source = lines_source(input_, "--input");
  std::vector<std::vector<int>> sources = train::encode_source_lines(
      tokenizer, experiment.data.tokenizer, tag_, read_lines(input_, "--input"),
      experiment.data.source_len, input_source);
  if (!references_path_.empty()) {
    references = read_lines(references_path_, "--ref");
    check_line_counts(sources.size(), references.size(), input_source,
                      lines_source(references_path_, "--ref"));
  }
  return sources;
}

void TranslateCommand::print_translations(const std::vector<std::string>& translations,
                                          const std::vector<std::string>& references) const {
  for (const std::string& translation : translations) std::printf("%s\n", translation.c_str());
  if (!references_path_.empty()) {
    std::fflush(stdout);
    std::fputs(score_lines(translations, references).c_str(), stderr);
  }
}

int TranslateCommand::run() {
  config::Experiment experiment = config::load_experiment(config_path_, overrides_);
  check_input(experiment.data.kind == data::DatasetKind::kPairs,
              "{}: translate needs a translation model, trained on data.dataset: pairs, not {}",
              experiment.where("data.dataset"), name_of(data::kDatasetNames, experiment.data.kind));
  job::check_tokenizer_path(experiment);
  const std::string& model = experiment.data.tokenizer;
  const tokenize::Tokenizer tokenizer = tokenize::Tokenizer::load(model);
  std::vector<std::string> references;
  const std::vector<std::vector<int>> sources = read_sources(experiment, tokenizer, references);
  checkpoint::CheckpointWeights weights;
  std::string weights_source = weights_path_;
  if (weights_path_.empty()) {
    weights =
        checkpoint::read_checkpoint_weights(checkpoint_run_dir_, train::check_checkpoint_model);
    weights_source = fmt::format("{} (checkpoint step {})", checkpoint_run_dir_, weights.step);
  } else {
    weights.tensors = checkpoint::read_safetensors(weights_path_).tensors;
  }
  kernels::KernelContext kernels;
  train::Translator translator(
      experiment.model, experiment.data.source_len, experiment.data.target_len,
      {.pad = tokenizer.pad_id(), .bos = tokenizer.bos_id(), .eos = tokenizer.eos_id()},
      weights.tensors, weights_source, kernels);
  check_input(translator.vocab() == tokenizer.vocab_size(),
              "{0}: the model outputs {2} scores per token but the tokenizer {3} has {1} pieces",
              weights_source, tokenizer.vocab_size(), translator.vocab(), model);
  std::vector<std::string> translations;
  for (const std::vector<int>& ids : translator.translate(sources, options_)) {
    translations.push_back(tokenizer.decode(ids));
  }
  print_translations(translations, references);
  return 0;
}

int TranslateCommand::run(const comm::Communicator& world) {
  std::vector<std::string> references;  // rank 0's
  const job::TranslateJob done = job::run_translate_job(
      {.config_path = config_path_,
       .overrides = overrides_,
       .source = {.checkpoint = checkpoint_run_dir_, .weights = weights_path_},
       .read_sources =
           [&](const config::Experiment& experiment, const tokenize::Tokenizer& tokenizer) {
             return read_sources(experiment, tokenizer, references);
           },
       .options = options_},
      world);
  if (world.rank() == 0) print_translations(done.translations, references);
  return 0;
}

}  // namespace mpipe::app
