// `mpipe tokenize` and `mpipe tokenize-pairs`: text to token shards or to pair shards, through a
// SentencePiece tokenizer they train or apply (one process).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "data/tokenize_corpus.h"
#include "data/tokenize_pairs.h"

namespace mpipe::app {

class TokenizeCommand {
 public:
  // Adds the subcommand `tokenize` to `app`.
  explicit TokenizeCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  // Writes the token shards; returns the process exit code.
  int run();

 private:
  CLI::App* app_ = nullptr;
  data::TokenizeOptions options_;
  std::string model_type_ = "bpe";
};

class TokenizePairsCommand {
 public:
  // Adds the subcommand `tokenize-pairs` to `app`.
  explicit TokenizePairsCommand(CLI::App& app);
  bool parsed() const { return app_->parsed(); }
  // Writes the pair shards; returns the process exit code.
  int run();

 private:
  CLI::App* app_ = nullptr;
  data::TokenizePairsOptions options_;
  std::string model_type_ = "unigram";
};

}  // namespace mpipe::app
