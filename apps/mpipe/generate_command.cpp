// `mpipe generate`: samples text from a trained language model (one process).
#include "generate_command.h"

#include <cstdint>
#include <cstdio>
#include <optional>

#include "checkpoint/safetensors.h"
#include "checkpoint/weights_file.h"
#include "config/experiment.h"
#include "config/stored_settings.h"
#include "core/error.h"
#include "job/data_paths.h"
#include "kernels/context.h"
#include "option_checks.h"
#include "tokenize/tokenizer.h"

namespace mpipe::app {

GenerateCommand::GenerateCommand(CLI::App& app) {
  app_ = app.add_subcommand(
      "generate", "Sample text from a trained language model (bytes, or the data's tokenizer)");
  app_->add_option("config", config_path_, "The experiment YAML file it was trained with")
      ->required()
      ->check(kNotEmpty);
  app_->add_option("--weights", weights_path_, "Exported weights (.safetensors)")
      ->required()
      ->check(kNotEmpty);
  app_->add_option("--prompt", options_.prompt, "Text to continue (default: a newline)");
  app_->add_option("--length", options_.length,
                   "Tokens to generate (bytes for a character-level model), at most 1048576")
      ->check(unnamed(CLI::Range(int64_t{1}, int64_t{1} << 20)))
      ->capture_default_str();
  app_->add_option("--temperature", options_.sampling.temperature,
                   "Sampling temperature (0 = greedy: always the most likely token)")
      ->check(non_negative_number("0 = greedy"))
      ->capture_default_str();
  app_->add_option("--top-k", options_.sampling.top_k,
                   "Draw only from the k most likely tokens (0 = all)")
      ->check(non_negative_integer("0 = all"))
      ->capture_default_str();
  app_->add_option("--top-p", options_.sampling.top_p,
                   "Draw only from the fewest most likely tokens whose probabilities add up to "
                   "at least p, in (0, 1] (1 = all)")
      ->check(unnamed(CLI::Range(0.0, 1.0)))
      ->capture_default_str();
  app_->add_option("--seed", options_.seed,
                   "Random seed of the draws (docs/design/inference.md, \"Sampling text\")")
      ->check(non_negative_integer())
      ->capture_default_str();
  app_->add_option("--set", overrides_, "Override a config key: key.path=value");
}

int GenerateCommand::run() {
  config::Experiment experiment = config::load_experiment(config_path_, overrides_);
  if (experiment.data.kind == data::DatasetKind::kTokens) job::check_tokenizer_path(experiment);
  checkpoint::SafetensorsFile weights = checkpoint::read_safetensors(weights_path_);
  // The model the weights were trained as, where the export records it; the YAML's otherwise.
  std::string model_source = config_path_;
  if (const auto settings =
          checkpoint::model_settings_in_metadata(weights.metadata, weights_path_)) {
    experiment.model = config::stored_model(*settings, weights_path_).model;
    model_source = weights_path_;
  }
  check_input(experiment.model.layers.front().kind == "embedding",
              "{}: generate needs a language model (its first layer must be an embedding)",
              model_source);
  // Token data is text through its tokenizer; other token ids are bytes.
  std::optional<tokenize::Tokenizer> tokenizer;
  if (experiment.data.kind == data::DatasetKind::kTokens) {
    check_input(!experiment.data.tokenizer.empty(),
                "{}: generate needs data.tokenizer to turn the model's tokens into text",
                config_path_);
    tokenizer = tokenize::Tokenizer::load(experiment.data.tokenizer);
  }
  kernels::KernelContext kernels;
  std::string text =
      train::generate_text(experiment.model, experiment.data.seq_len, weights.tensors,
                           weights_path_, options_, kernels, tokenizer ? &*tokenizer : nullptr);
  std::printf("%s\n", text.c_str());
  return 0;
}

}  // namespace mpipe::app
