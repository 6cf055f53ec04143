// Reading, splitting and windowing of a byte-level text corpus.
#include "data/text_corpus.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/regular_file.h"

namespace mpipe::data {
namespace {

namespace fs = std::filesystem;

// What a file that is neither a regular file nor a folder is, for errors.
const char* file_type_name(fs::file_type type) {
  switch (type) {
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

}  // namespace

std::string read_text_file(const std::string& path, const std::string& key) {
  std::string text = read_regular_file(path, key + ": must be a regular file or a folder of them");
  const size_t nul = text.find('\0');
  check_input(nul == std::string::npos,
              "{}: a binary file, not text (a NUL byte at offset {}); {} takes text files", path,
              nul, key);
  return text;
}

std::vector<std::string> corpus_files(const std::string& path, const std::string& key) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  check_input(!error && fs::exists(status), "{}: cannot open", path);
  if (fs::is_regular_file(status)) return {path};
  check_input(fs::is_directory(status),
              "{}: {}: must be a regular file or a folder of them, not {}", path, key,
              file_type_name(status.type()));
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(path, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    const fs::directory_entry& entry = *it;
    if (entry.is_symlink() || !entry.is_regular_file()) continue;
    if (entry.path().extension() == ".dat") continue;
    files.push_back(entry.path().string());
  }
  check_input(!error, "{}: cannot list folder: {}", path, error.message());
  check_input(!files.empty(), "{}: no text files in folder", path);
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<float> encode_text(std::string_view text) {
  std::vector<float> tokens(text.size());
  std::transform(text.begin(), text.end(), tokens.begin(),
                 [](char c) { return static_cast<float>(static_cast<unsigned char>(c)); });
  return tokens;
}

std::string decode_text(std::span<const float> tokens) {
  std::string text(tokens.size(), '\0');
  std::transform(tokens.begin(), tokens.end(), text.begin(), [](float token) {
    return static_cast<char>(static_cast<unsigned char>(std::clamp(std::lround(token), 0L, 255L)));
  });
  return text;
}

TextCorpus::TextCorpus(const DataConfig& config)
    : path_(config.path.empty() ? kDefaultTextPath : config.path), seq_len_(config.seq_len) {
  check_input(seq_len_ >= 1, "data.seq_len: must be >= 1, got {}", seq_len_);
  check_input(config.val_fraction > 0.0 && config.val_fraction < 1.0,
              "data.val_fraction: must be in (0, 1), got {}", config.val_fraction);
  for (const std::string& file : corpus_files(path_, kTextPathKey)) {
    bytes_ += read_text_file(file, kTextPathKey);
  }
  const auto total = static_cast<int64_t>(bytes_.size());
  const auto val_bytes = static_cast<int64_t>(std::llround(config.val_fraction * total));
  train_bytes_ = total - val_bytes;
  check_input(train_bytes_ > seq_len_ && val_bytes > seq_len_,
              "{}: {} bytes split into {} for training and {} for validation; each needs at "
              "least seq_len + 1 = {}",
              path_, total, train_bytes_, val_bytes, seq_len_ + 1);
}

std::string_view TextCorpus::text(Split split) const {
  const std::string_view all = bytes_;
  return split == Split::kTrain ? all.substr(0, static_cast<size_t>(train_bytes_))
                                : all.substr(static_cast<size_t>(train_bytes_));
}

int64_t TextCorpus::size(Split split) const {
  // The last window ends at the split's last byte or before: s + seq_len + 1 <= L.
  return (static_cast<int64_t>(text(split).size()) - seq_len_ - 1) / stride(split) + 1;
}

Tensor TextCorpus::windows(Split split, std::span<const int64_t> indices, int64_t offset) const {
  const std::string_view source = text(split);
  const auto count = static_cast<int64_t>(indices.size());
  Tensor out(Shape{count, seq_len_});  // [n, seq_len]
  for (int64_t row = 0; row < count; ++row) {
    const int64_t start = indices[static_cast<size_t>(row)];
    check(start >= 0 && start < size(split), "text example {} out of range [0, {})", start,
          size(split));
    const char* src = source.data() + start * stride(split) + offset;
    float* dst = out.data() + row * seq_len_;
    for (int64_t i = 0; i < seq_len_; ++i) {
      dst[i] = static_cast<float>(static_cast<unsigned char>(src[i]));
    }
  }
  return out;
}

Tensor TextCorpus::inputs(Split split, std::span<const int64_t> indices, uint64_t /*seed*/,
                          int64_t /*step*/) const {
  return windows(split, indices, 0);
}

Tensor TextCorpus::targets(Split split, std::span<const int64_t> indices) const {
  return windows(split, indices, 1);
}

double TextCorpus::unigram_entropy_bits(Split split) const {
  const std::string_view source = text(split);
  std::array<int64_t, kVocab> counts{};
  for (char c : source) ++counts[static_cast<unsigned char>(c)];
  double entropy = 0.0;
  for (int64_t count : counts) {
    if (count == 0) continue;
    const double p = static_cast<double>(count) / static_cast<double>(source.size());
    entropy -= p * std::log2(p);
  }
  return entropy;
}

}  // namespace mpipe::data
