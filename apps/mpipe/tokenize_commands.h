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
  bool parsed() const { return tokenize_->parsed(); }
  // Writes the token shards; returns the process exit code.
  int run();

 private:
  CLI::App* tokenize_ = nullptr;
  data::TokenizeOptions tokenize_options_;
  std::string tokenize_model_type_ = "bpe";
};

class TokenizePairsCommand {
 public:
  // Adds the subcommand `tokenize-pairs` to `app`.
  explicit TokenizePairsCommand(CLI::App& app);
  bool parsed() const { return tokenize_pairs_->parsed(); }
  // Writes the pair shards; returns the process exit code.
  int run();

 private:
  CLI::App* tokenize_pairs_ = nullptr;
  data::TokenizePairsOptions pairs_options_;
  std::string pairs_model_type_ = "unigram";
};

}  // namespace mpipe::app
