// Opening and checking a pair shard: header, offsets, token count against the file's size.
#include "data/pair_shard.h"

#include <algorithm>
#include <array>
#include <utility>

#include "core/error.h"
#include "data/pair_shard_format.h"
#include "data/token_shard_format.h"

namespace mpipe::data {

namespace format = pair_shard;

PairShard::PairShard(std::string path) : TokenFile(std::move(path), "pair shard") {
  const std::string& file = this->path();
  const auto file_bytes = static_cast<size_t>(this->file_bytes());
  check_input(file_bytes >= format::kHeaderBytes,
              "{}: {} bytes, shorter than the {}-byte pair shard header", file, file_bytes,
              format::kHeaderBytes);
  std::array<int32_t, format::kHeaderInts> header{};
  read_exactly(header.data(), format::kHeaderBytes, 0);
  const int32_t magic = header[format::kMagicAt];
  const size_t token_bytes = format::token_bytes(magic);
  check_input(token_bytes != 0,
              "{}: not a pair shard: magic {}, expected {} (uint16 tokens) or {} (uint32 tokens){}",
              file, magic, format::kMagicU16, format::kMagicU32,
              token_shard::token_bytes(magic) != 0
                  ? "; it is a token shard of mpipe tokenize (pairs come from mpipe tokenize-pairs)"
                  : "");
  check_input(header[format::kVersionAt] == format::kVersion,
              "{}: pair shard version {}, expected {}", file, header[format::kVersionAt],
              format::kVersion);
  const int64_t pairs = header[format::kPairsAt];
  const int64_t tokens = header[format::kTokensAt];
  const int64_t offsets = 2 * pairs + 1;
  const int64_t needed = offsets * static_cast<int64_t>(format::kOffsetBytes) +
                         tokens * static_cast<int64_t>(token_bytes);
  const auto payload = static_cast<int64_t>(file_bytes - format::kHeaderBytes);
  check_input(pairs >= 0 && tokens >= 0 && needed == payload,
              "{}: {} pairs and {} tokens in the header need {} bytes after it, the file has {}",
              file, pairs, tokens, needed, payload);
  offsets_.resize(static_cast<size_t>(offsets));
  read_exactly(offsets_.data(), offsets_.size() * format::kOffsetBytes, format::kHeaderBytes);
  check_input(offsets_.front() == 0, "{}: the first pair starts at token {}, not 0", file,
              offsets_.front());
  for (int64_t i = 1; i < offsets; ++i) {
    check_input(at(i) >= at(i - 1), "{}: pair {}'s {} ends at token {}, before it starts ({})",
                file, (i - 1) / 2, i % 2 == 1 ? "source" : "target", at(i), at(i - 1));
  }
  check_input(offsets_.back() == tokens,
              "{}: the last pair ends at token {}, not at the {} tokens of the header", file,
              offsets_.back(), tokens);
  for (int64_t pair = 0; pair < pairs; ++pair) {
    longest_source_ = std::max(longest_source_, source_length(pair));
    longest_target_ = std::max(longest_target_, target_length(pair));
  }
  set_tokens(static_cast<off_t>(format::kHeaderBytes + offsets_.size() * format::kOffsetBytes),
             token_bytes, tokens);
}

void PairShard::read_pair(int64_t pair, int64_t vocab, float* out) const {
  check(pair >= 0 && pair < num_pairs(), "{}: pair {} out of range [0, {})", path(), pair,
        num_pairs());
  read_as_floats(at(2 * pair), at(2 * pair + 2) - at(2 * pair), vocab, out);
}

}  // namespace mpipe::data
