// The steps of `mpipe tokenize`: read, train or load the model, split, encode, write shards.
#include "data/tokenize_corpus.h"

#include <algorithm>
#include <filesystem>
#include <span>
#include <string_view>

#include "checkpoint/atomic_file.h"
#include "checkpoint/file_digest.h"
#include "core/error.h"
#include "data/shard_manifest.h"
#include "data/text_corpus.h"
#include "data/token_shard_writer.h"

namespace mpipe::data {
namespace {

namespace fs = std::filesystem;

// Token ids travel as floats in training, exact below 2^24.
constexpr int64_t kMaxVocab = int64_t{1} << 24;

// The name of shard `index` of a split: "train_000003.bin".
std::string shard_name(const std::string& prefix, int64_t index) {
  return fmt::format("{}_{:06}.bin", prefix, index);
}

// Throws InputError when `out_dir` holds shards already (train_*.bin, val_*.bin): shards of this
// tokenize beside them would mix into such a glob, maybe made with another tokenizer.
void refuse_earlier_shards(const std::string& out_dir) {
  std::error_code error;
  std::vector<std::string> found;
  for (auto it = fs::directory_iterator(out_dir, error); !error && it != fs::directory_iterator();
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if ((name.starts_with("train_") || name.starts_with("val_")) && name.ends_with(".bin")) {
      found.push_back(name);
    }
  }
  if (found.empty()) return;
  std::sort(found.begin(), found.end());
  throw InputError(fmt::format(
      "{}: holds the shards of an earlier tokenize ({}{}); new shards beside them would mix "
      "into train_*.bin: remove them or choose another --out",
      out_dir, found.front(),
      found.size() > 1 ? fmt::format(" and {} more", found.size() - 1) : std::string()));
}

// Encodes `text` line by line (each line with its newline) and writes its tokens as shards
// `<out_dir>/<prefix>_NNNNNN.bin` of at most `shard_tokens` tokens.
SplitCount write_split(const tokenize::Tokenizer& tokenizer, std::string_view text,
                       const std::string& out_dir, const std::string& prefix,
                       int64_t shard_tokens) {
  SplitCount count{.bytes = static_cast<int64_t>(text.size())};
  std::vector<int> pending;
  auto flush = [&] {
    write_token_shard((fs::path(out_dir) / shard_name(prefix, count.shards)).string(), pending,
                      tokenizer.vocab_size());
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
  check_input(options.shard_tokens >= kMinShardTokens && options.shard_tokens <= INT32_MAX,
              "--shard-tokens: must be in [{}, 2^31), got {}", kMinShardTokens,
              options.shard_tokens);
  check_input(!options.model.empty() || options.vocab_size.has_value(),
              "tokenize: give --vocab-size to train a model or --model to apply one");
  refuse_earlier_shards(options.out_dir);
  std::string text;
  for (const std::string& path : options.text_files) {
    for (const std::string& file : corpus_files(path, kTokenizeTextArgument)) {
      text += read_text_file(file, kTokenizeTextArgument);
    }
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
    const int64_t vocab_size = *options.vocab_size;
    check_input(vocab_size >= 2 && vocab_size < kMaxVocab,
                "--vocab-size: must be in [2, 2^24), got {}", vocab_size);
    // Learned from the training text only: the validation text stays unseen.
    trained = tokenize::train_model(all.substr(0, val_start),
                                    {.vocab_size = vocab_size, .type = options.model_type});
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
  // Last: a folder with a manifest holds every shard it lists.
  ShardManifest manifest{
      .tokenizer_crc32 = checkpoint::crc32_hex(checkpoint::digest_file(report.model).crc32),
      .vocab = report.vocab,
      .shards = {}};
  for (const auto& [prefix, count] : {std::pair{"train", report.train}, {"val", report.val}}) {
    for (int64_t i = 0; i < count.shards; ++i) manifest.shards.push_back(shard_name(prefix, i));
  }
  write_shard_manifest(options.out_dir, manifest);
  return report;
}

}  // namespace mpipe::data
