// A character-level (byte) language-modelling corpus read from a text file or a folder of them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/data_config.h"
#include "data/dataset.h"

namespace mpipe::data {

inline constexpr const char* kDefaultTextPath = "/usr/share/games/fortunes";

// What names a corpus's path in errors: the text dataset's key, or `mpipe tokenize`'s argument.
inline constexpr const char* kTextPathKey = "data.path";
inline constexpr const char* kTokenizeTextArgument = "tokenize TEXT";

// The files a corpus at `path` (given as `key`) is read from: `path` itself if it is a regular
// file; for a folder, its regular files found recursively, sorted, skipping symbolic links, names
// ending in ".dat" (fortune's index files) and anything else that is not a regular file. Throws
// InputError when `path` does not exist, holds no file, or is neither a regular file nor a folder
// (a device, a FIFO, a socket: never opened, as reading one may not end).
std::vector<std::string> corpus_files(const std::string& path, const std::string& key);

// The bytes of the regular file `path` (a file of the corpus given as `key`), at most the size
// stat reported: opened without blocking (a FIFO put in its place after the check is refused, not
// waited on) and confirmed regular. Throws InputError naming the path, also for a binary file (a
// NUL byte: "/bin/ls: a binary file, not text (a NUL byte at offset 7); tokenize TEXT takes
// text files").
std::string read_text_file(const std::string& path, const std::string& key);

// Bytes as token ids, [text.size()], and back (ids rounded and clamped to [0, 255]).
std::vector<float> encode_text(std::string_view text);
std::string decode_text(std::span<const float> tokens);

// The files' bytes concatenated; the last val_fraction of them is the test (validation) split.
// Example i of a split is the window at byte s = i x stride: inputs [seq_len] = bytes[s, s +
// seq_len), targets [seq_len] = bytes[s + 1, s + seq_len + 1), both as floats. Training windows
// start at every byte (stride 1: a split of L bytes has L - seq_len examples); validation windows
// do not overlap (stride seq_len: floor((L - 1) / seq_len) examples), so an evaluation of the
// whole split predicts each held-out byte once (all but the first and a tail shorter than a
// window), as the token dataset's windows do, and its bits per byte compare with a tokenized
// model's.
class TextCorpus : public Dataset {
 public:
  static constexpr int64_t kVocab = 256;

  // Reads config.path (default kDefaultTextPath), each file up to the size it had when opened.
  // Throws InputError naming the path when it cannot be read, is binary, or a split is shorter
  // than seq_len + 1 bytes.
  explicit TextCorpus(const DataConfig& config);

  Shape input_shape() const override { return Shape{seq_len_}; }
  Shape target_shape() const override { return Shape{seq_len_}; }
  int64_t num_classes() const override { return kVocab; }
  int64_t input_vocab() const override { return kVocab; }
  std::string_view name() const override { return "text"; }
  int64_t size(Split split) const override;
  Tensor inputs(Split split, std::span<const int64_t> indices, uint64_t seed,
                int64_t step) const override;
  Tensor targets(Split split, std::span<const int64_t> indices) const override;
  std::optional<double> text_baseline_bits() const override {
    return unigram_entropy_bits(Split::kTest);
  }

  // The bytes of a split.
  std::string_view text(Split split) const;
  // Entropy of the split's byte distribution in bits per character: the loss (over ln 2) of the
  // best model that ignores context.
  double unigram_entropy_bits(Split split) const;

 private:
  // Bytes between the starts of consecutive examples of a split: 1 or seq_len.
  int64_t stride(Split split) const { return split == Split::kTrain ? 1 : seq_len_; }
  // Windows at `indices` starting `offset` bytes in: [n, seq_len] floats.
  Tensor windows(Split split, std::span<const int64_t> indices, int64_t offset) const;

  std::string path_;
  int64_t seq_len_;
  std::string bytes_;
  int64_t train_bytes_ = 0;  // bytes_[0, train_bytes_) is training text, the rest validation
};

}  // namespace mpipe::data
