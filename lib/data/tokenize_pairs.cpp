// The steps of `mpipe tokenize-pairs`: read the pairs, train or load the model, encode, write.
#include "data/tokenize_pairs.h"

#include <algorithm>
#include <filesystem>
#include <string_view>

#include "checkpoint/atomic_file.h"
#include "checkpoint/file_digest.h"
#include "core/error.h"
#include "data/pair_shard_writer.h"
#include "data/text_corpus.h"

namespace mpipe::data {
namespace {

namespace fs = std::filesystem;

// Token ids travel as floats in training, exact below 2^24.
constexpr int64_t kMaxVocab = int64_t{1} << 24;

struct TextPair {
  std::string source;
  std::string target;
  int64_t line = 0;  // in its file, from 1
};

struct SplitInput {
  std::string split;  // "train"
  std::string file;
  std::string option;  // "--train", naming the file in errors
  std::vector<TextPair> pairs;
};

// The pairs of `file`, one a line ("SOURCE<TAB>TARGET"), or InputError naming the line.
std::vector<TextPair> read_pairs(const std::string& file, const std::string& option) {
  const std::string text = read_text_file(file, option);
  std::vector<TextPair> pairs;
  std::string_view rest = text;
  for (int64_t line = 1; !rest.empty(); ++line) {
    const size_t end = std::min(rest.find('\n'), rest.size());
    const std::string_view row = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    const size_t tab = row.find('\t');
    check_input(tab != std::string_view::npos && row.find('\t', tab + 1) == std::string_view::npos,
                "{}:{}: expected SOURCE<TAB>TARGET, one tab, got {}", file, line,
                tab == std::string_view::npos ? "none" : "more");
    check_input(tab > 0 && tab + 1 < row.size(), "{}:{}: an empty {}", file, line,
                tab == 0 ? "source" : "target");
    pairs.push_back({std::string(row.substr(0, tab)), std::string(row.substr(tab + 1)), line});
  }
  check_input(!pairs.empty(), "{}: no pairs ({})", file, option);
  return pairs;
}

// Throws InputError when `out_dir` holds shards (of an earlier tokenize or tokenize-pairs):
// their manifest would be overwritten, or their pair shards mixed with these.
void refuse_earlier_shards(const std::string& out_dir) {
  std::error_code error;
  std::vector<std::string> found;
  for (auto it = fs::directory_iterator(out_dir, error); !error && it != fs::directory_iterator();
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name == kShardManifestName || (name.starts_with("pairs_") && name.ends_with(".bin"))) {
      found.push_back(name);
    }
  }
  if (found.empty()) return;
  std::sort(found.begin(), found.end());
  throw InputError(fmt::format(
      "{}: holds the shards of an earlier tokenize ({}{}): remove them or choose another --out",
      out_dir, found.front(),
      found.size() > 1 ? fmt::format(" and {} more", found.size() - 1) : std::string()));
}

// The model to encode with: trained on the text files (its bytes in `trained`), or loaded.
tokenize::Tokenizer load_or_train(const TokenizePairsOptions& options, std::string& model_path,
                                  std::string& trained) {
  if (!options.model.empty()) {
    model_path = options.model;
    tokenize::Tokenizer tokenizer = tokenize::Tokenizer::load(options.model);
    check_input(tokenizer.pad_id() >= 0 && tokenizer.bos_id() >= 0 && tokenizer.eos_id() >= 0,
                "--model {}: pair shards need pad, bos and eos pieces, and it has no {} piece "
                "(train one with tokenize-pairs --vocab-size)",
                options.model,
                tokenizer.pad_id() < 0   ? "pad"
                : tokenizer.bos_id() < 0 ? "bos"
                                         : "eos");
    return tokenizer;
  }
  const int64_t vocab_size = *options.vocab_size;
  check_input(vocab_size >= 2 && vocab_size < kMaxVocab,
              "--vocab-size: must be in [2, 2^24), got {}", vocab_size);
  check_input(!options.text_files.empty(),
              "tokenize-pairs: give --text, the text the new tokenizer learns from (the training "
              "split's sentences)");
  std::string text;
  for (const std::string& path : options.text_files) {
    for (const std::string& file : corpus_files(path, "--text")) {
      text += read_text_file(file, "--text");
    }
  }
  check_input(!text.empty(), "--text: the text files are empty");
  trained = tokenize::train_model(text, {.vocab_size = vocab_size,
                                         .type = options.model_type,
                                         .sentences = true,
                                         .pad_piece = true,
                                         .user_symbols = options.tags});
  model_path = (fs::path(options.out_dir) / "tokenizer.model").string();
  return tokenize::Tokenizer::from_bytes(trained, model_path);
}

}  // namespace

std::string pair_shard_name(const std::string& split) { return "pairs_" + split + ".bin"; }

std::vector<int> encode_source(const tokenize::Tokenizer& tokenizer, std::string_view source,
                               const std::string& model, const std::string& where) {
  const size_t close = source.find("> ");
  if (!source.starts_with('<') || close == std::string_view::npos || source.find(' ') < close) {
    return tokenizer.encode(source);
  }
  const std::string_view tag = source.substr(0, close + 1);
  const int tag_id = tokenizer.piece_id(tag);
  check_input(tag_id >= 0,
              "{}: the tag '{}' is not a piece of {} (train it with tokenize-pairs --tags)", where,
              tag, model);
  std::vector<int> ids{tag_id};
  for (int id : tokenizer.encode(source.substr(close + 2))) ids.push_back(id);
  return ids;
}

TokenizePairsReport tokenize_pairs(const TokenizePairsOptions& options) {
  check_input(options.max_len >= 2, "--max-len: must be >= 2 (a token and its eos), got {}",
              options.max_len);
  check_input(!options.model.empty() || options.vocab_size.has_value(),
              "tokenize-pairs: give --vocab-size to train a model or --model to apply one");
  refuse_earlier_shards(options.out_dir);
  std::vector<SplitInput> inputs;
  for (const auto& [split, file, option] : {std::tuple{"train", &options.train, "--train"},
                                            {"val", &options.val, "--val"},
                                            {"test", &options.test, "--test"}}) {
    if (file->empty()) continue;
    inputs.push_back({split, *file, option, read_pairs(*file, option)});
  }

  TokenizePairsReport report;
  std::string trained;  // the serialized model when one is trained
  const tokenize::Tokenizer tokenizer = load_or_train(options, report.model, trained);
  report.vocab = tokenizer.vocab_size();
  check_input(report.vocab < kMaxVocab,
              "{}: {} pieces, more than the 2^24 token ids training takes", report.model,
              report.vocab);
  std::vector<std::vector<TokenPair>> encoded;
  for (const SplitInput& input : inputs) {
    PairSplitCount count{.split = input.split};
    std::vector<TokenPair>& kept = encoded.emplace_back();
    for (const TextPair& pair : input.pairs) {
      TokenPair ids{encode_source(tokenizer, pair.source, report.model,
                                  fmt::format("{}:{}", input.file, pair.line)),
                    tokenizer.encode(pair.target)};
      // With its eos (source) or its bos and eos (target_in and targets: one more each).
      if (static_cast<int64_t>(ids.source.size()) + 1 > options.max_len ||
          static_cast<int64_t>(ids.target.size()) + 1 > options.max_len) {
        ++count.dropped;
        continue;
      }
      count.tokens += static_cast<int64_t>(ids.source.size() + ids.target.size());
      kept.push_back(std::move(ids));
    }
    count.pairs = static_cast<int64_t>(kept.size());
    check_input(count.pairs > 0,
                "{}: no pair left: all {} are longer than --max-len {} tokens (with eos)",
                input.file, count.dropped, options.max_len);
    report.splits.push_back(count);
  }
  // Only now, with nothing left to refuse, is anything written.
  std::error_code error;
  fs::create_directories(options.out_dir, error);
  check_input(!error, "{}: cannot create the output folder: {}", options.out_dir, error.message());
  if (!trained.empty()) checkpoint::write_file_atomically(report.model, trained);
  ShardManifest manifest{
      .tokenizer_crc32 = checkpoint::crc32_hex(checkpoint::digest_file(report.model).crc32),
      .vocab = report.vocab,
      .shards = {},
      .max_len = options.max_len,
      .pair_splits = report.splits};
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = pair_shard_name(inputs[i].split);
    write_pair_shard((fs::path(options.out_dir) / name).string(), encoded[i], report.vocab);
    manifest.shards.push_back(name);
  }
  // Last: a folder with a manifest holds every shard it lists.
  write_shard_manifest(options.out_dir, manifest);
  return report;
}

}  // namespace mpipe::data
