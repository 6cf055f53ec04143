// `mpipe tokenize` and `mpipe tokenize-pairs`: text to token shards or to pair shards, through a
// SentencePiece tokenizer they train or apply (one process).
#include "tokenize_commands.h"

#include <cstdint>
#include <cstdio>
#include <tuple>
#include <utility>
#include <vector>

#include "core/enum_names.h"
#include "option_checks.h"
#include "tokenize/tokenizer.h"

namespace mpipe::app {
namespace {

// The SentencePiece model types tokenize and tokenize-pairs train.
std::vector<std::string> tokenizer_model_types() {
  std::vector<std::string> names;
  for (const auto& [name, type] : tokenize::kModelTypeNames) names.emplace_back(name);
  return names;
}

}  // namespace

TokenizeCommand::TokenizeCommand(CLI::App& app) {
  app_ = app.add_subcommand(
      "tokenize", "Train or apply a SentencePiece tokenizer and write llm.c token shards");
  app_->add_option("text", options_.text_files, "Text files or folders of them")
      ->required()
      ->check(kNotEmpty);
  app_->add_option("--out", options_.out_dir, "Output folder (created if needed)")
      ->required()
      ->check(kNotEmpty);
  auto* vocab_size = app_->add_option_function<int64_t>(
      "--vocab-size", [this](int64_t pieces) { options_.vocab_size = pieces; },
      "Train a model of this many pieces on the text (written to OUT/tokenizer.model)");
  app_->add_option("--model", options_.model, "Apply this existing .model instead")
      ->check(kNotEmpty)
      ->excludes(vocab_size);
  app_->add_option("--model-type", model_type_,
                   "Model to train: " + list_names(tokenize::kModelTypeNames, " or "))
      ->check(unnamed(CLI::IsMember(tokenizer_model_types())))
      ->capture_default_str()
      ->needs(vocab_size);
  app_->add_option("--val-fraction", options_.val_fraction,
                   "The last part of the text kept for validation (from a line start)")
      ->capture_default_str();
  app_->add_option("--shard-tokens", options_.shard_tokens,
                   "At most this many tokens per shard file");
}

int TokenizeCommand::run() {
  options_.model_type = *value_named(tokenize::kModelTypeNames, model_type_);
  const data::TokenizeReport report = data::tokenize_corpus(options_);
  std::printf("tokenizer %s: %lld pieces\n", report.model.c_str(),
              static_cast<long long>(report.vocab));
  for (const auto& [name, count] : {std::pair{"train", report.train}, {"val", report.val}}) {
    std::printf("%s: %lld tokens, %lld bytes, %.3f bytes per token, %lld shard(s)\n", name,
                static_cast<long long>(count.tokens), static_cast<long long>(count.bytes),
                count.tokens > 0 ? static_cast<double>(count.bytes) / count.tokens : 0.0,
                static_cast<long long>(count.shards));
  }
  return 0;
}

TokenizePairsCommand::TokenizePairsCommand(CLI::App& app) {
  app_ = app.add_subcommand(
      "tokenize-pairs",
      "Train or apply a SentencePiece tokenizer and write pair shards of translation pairs");
  for (const auto& [option, file, what] : {std::tuple{"--train", &options_.train, "Training pairs"},
                                           {"--val", &options_.val, "Validation pairs"},
                                           {"--test", &options_.test, "Test pairs"}}) {
    auto* added = app_->add_option(option, *file,
                                   std::string(what) +
                                       ": a file of SOURCE<TAB>TARGET lines, each source starting "
                                       "with its target language's tag (\"<2en> ...\")")
                      ->check(kNotEmpty);
    if (file != &options_.test) added->required();
  }
  app_->add_option("--out", options_.out_dir, "Output folder (created if needed)")
      ->required()
      ->check(kNotEmpty);
  auto* pairs_vocab = app_->add_option_function<int64_t>(
      "--vocab-size", [this](int64_t pieces) { options_.vocab_size = pieces; },
      "Train a model of this many pieces on --text (written to OUT/tokenizer.model)");
  app_->add_option("--model", options_.model,
                   "Apply this existing .model (with pad, bos and eos pieces) instead")
      ->check(kNotEmpty)
      ->excludes(pairs_vocab);
  app_->add_option("--model-type", model_type_,
                   "Model to train: " + list_names(tokenize::kModelTypeNames, " or "))
      ->check(unnamed(CLI::IsMember(tokenizer_model_types())))
      ->capture_default_str()
      ->needs(pairs_vocab);
  app_->add_option("--text", options_.text_files,
                   "Text files or folders the new model learns from (the training sentences)")
      ->check(kNotEmpty)
      ->needs(pairs_vocab);
  app_->add_option("--tags", options_.tags,
                   "Target-language tags the new model keeps as pieces of their own: '<2en>' ...")
      ->check(kNotEmpty)
      ->needs(pairs_vocab);
  app_->add_option("--max-len", options_.max_len,
                   "Leave out pairs whose source or target with its eos is longer (tokens)")
      ->capture_default_str();
}

int TokenizePairsCommand::run() {
  options_.model_type = *value_named(tokenize::kModelTypeNames, model_type_);
  const data::TokenizePairsReport report = data::tokenize_pairs(options_);
  std::printf("tokenizer %s: %lld pieces\n", report.model.c_str(),
              static_cast<long long>(report.vocab));
  for (const data::PairSplitCount& count : report.splits) {
    std::printf("%s: %lld pairs, %lld tokens in %s; %lld longer than --max-len %lld dropped\n",
                count.split.c_str(), static_cast<long long>(count.pairs),
                static_cast<long long>(count.tokens), data::pair_shard_name(count.split).c_str(),
                static_cast<long long>(count.dropped), static_cast<long long>(options_.max_len));
  }
  return 0;
}

}  // namespace mpipe::app
