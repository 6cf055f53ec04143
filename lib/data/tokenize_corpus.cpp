// The steps of `mpipe tokenize`: read, train or load the model, split, encode, write shards.
#include "data/tokenize_corpus.h"

#include <filesystem>
#include <span>
#include <string_view>

#include "checkpoint/atomic_file.h"
#include "core/error.h"
#include "data/text_corpus.h"
#include "data/token_shard_writer.h"

namespace mpipe::data {
namespace {

namespace fs = std::filesystem;

// Token ids travel as floats in training, exact below 2^24.
constexpr int64_t kMaxVocab = int64_t{1} << 24;

// Encodes `text` line by line (each line with its newline) and writes its tokens as shards
// `<out_dir>/<prefix>_NNNNNN.bin` of at most `shard_tokens` tokens.
SplitCount write_split(const tokenize::Tokenizer& tokenizer, std::string_view text,
                       const std::string& out_dir, const std::string& prefix,
                       int64_t shard_tokens) {
  SplitCount count{.bytes = static_cast<int64_t>(text.size())};
  std::vector<int> pending;
  auto flush = [&] {
    const std::string name = fmt::format("{}_{:06}.bin", prefix, count.shards);
    write_token_shard((fs::path(out_dir) / name).string(), pending, tokenizer.vocab_size());
    count.tokens += static_cast<int64_t>(pending.size());
    ++count.shards;
    pending.clear();
  };
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size() - 1) + 1;
    for (int id : tokenizer.encode(text.substr(0, end))) {
      pending.push_back(id);
      if (static_cast<int64_t>(pending.size()) == shard_tokens) flush();
    }
    text.remove_prefix(end);
  }
  if (!pending.empty() || count.shards == 0) flush();
  return count;
}

}  // namespace

TokenizeReport tokenize_corpus(const TokenizeOptions& options) {
  check_input(!options.text_files.empty(), "tokenize: no text files given");
  check_input(options.val_fraction > 0.0 && options.val_fraction < 1.0,
              "--val-fraction: must be in (0, 1), got {}", options.val_fraction);
  check_input(options.shard_tokens >= 1 && options.shard_tokens <= INT32_MAX,
              "--shard-tokens: must be in [1, 2^31), got {}", options.shard_tokens);
  std::string text;
  for (const std::string& path : options.text_files) {
    for (const std::string& file : corpus_files(path)) text += read_text_file(file);
  }
  check_input(!text.empty(), "tokenize: the text files are empty");
  // The validation text starts at the first line start at or after the cut.
  const auto cut =
      static_cast<size_t>(static_cast<double>(text.size()) * (1.0 - options.val_fraction));
  const size_t newline = text.find('\n', cut == 0 ? 0 : cut - 1);
  const size_t val_start = newline == std::string::npos ? text.size() : newline + 1;
  check_input(val_start > 0 && val_start < text.size(),
              "tokenize: {} bytes of text cannot be split into training and validation text at "
              "a line start (--val-fraction {})",
              text.size(), options.val_fraction);
  const std::string_view all = text;

  TokenizeReport report;
  std::optional<tokenize::Tokenizer> tokenizer;
  std::string trained;  // the serialized model when one is trained
  if (options.model.empty()) {
    check_input(options.vocab_size >= 2 && options.vocab_size < kMaxVocab,
                "--vocab-size: must be in [2, 2^24), got {}", options.vocab_size);
    // Learned from the training text only: the validation text stays unseen.
    trained =
        tokenize::train_model(all.substr(0, val_start), options.vocab_size, options.model_type);
    report.model = (fs::path(options.out_dir) / "tokenizer.model").string();
    tokenizer = tokenize::Tokenizer::from_bytes(trained, report.model);
  } else {
    report.model = options.model;
    tokenizer = tokenize::Tokenizer::load(options.model);
  }
  report.vocab = tokenizer->vocab_size();
  check_input(report.vocab < kMaxVocab,
              "{}: {} pieces, more than the 2^24 token ids training takes", report.model,
              report.vocab);
  // Only now, with nothing left to refuse, is anything written.
  std::error_code error;
  fs::create_directories(options.out_dir, error);
  check_input(!error, "{}: cannot create the output folder: {}", options.out_dir, error.message());
  if (!trained.empty()) checkpoint::write_file_atomically(report.model, trained);
  report.train = write_split(*tokenizer, all.substr(0, val_start), options.out_dir, "train",
                             options.shard_tokens);
  report.val =
      write_split(*tokenizer, all.substr(val_start), options.out_dir, "val", options.shard_tokens);
  return report;
}

}  // namespace mpipe::data
