// The pair shard writer: header, offsets, then the tokens at the width the vocabulary needs.
#include "data/pair_shard_writer.h"

#include <array>
#include <limits>

#include "checkpoint/atomic_file.h"
#include "core/error.h"
#include "data/pair_shard_format.h"

namespace mpipe::data {
namespace {

namespace format = pair_shard;

// Writes the tokens of every pair, source then target, as Token.
template <typename Token>
void write_tokens_as(checkpoint::AtomicFile& file, std::span<const TokenPair> pairs) {
  std::vector<Token> tokens;
  for (const TokenPair& pair : pairs) {
    tokens.insert(tokens.end(), pair.source.begin(), pair.source.end());
    tokens.insert(tokens.end(), pair.target.begin(), pair.target.end());
  }
  file.write(std::as_bytes(std::span(tokens)));
}

}  // namespace

void write_pair_shard(const std::string& path, std::span<const TokenPair> pairs, int64_t vocab) {
  constexpr auto kMaxCount = static_cast<size_t>(std::numeric_limits<int32_t>::max());
  check(pairs.size() <= kMaxCount, "{}: {} pairs do not fit one shard", path, pairs.size());
  std::vector<uint32_t> offsets{0};
  for (const TokenPair& pair : pairs) {
    for (const std::vector<int>* text : {&pair.source, &pair.target}) {
      for (int id : *text)
        check(id >= 0 && id < vocab, "{}: token id {} not in [0, {})", path, id, vocab);
      const size_t end = offsets.back() + text->size();
      check(end <= kMaxCount, "{}: more than 2^31 - 1 tokens do not fit one shard", path);
      offsets.push_back(static_cast<uint32_t>(end));
    }
  }
  const int32_t magic = format::magic_for_vocab(vocab);
  std::array<int32_t, format::kHeaderInts> header{};
  header[format::kMagicAt] = magic;
  header[format::kVersionAt] = format::kVersion;
  header[format::kPairsAt] = static_cast<int32_t>(pairs.size());
  header[format::kTokensAt] = static_cast<int32_t>(offsets.back());
  checkpoint::AtomicFile file(path);
  file.write(std::as_bytes(std::span(header)));
  file.write(std::as_bytes(std::span(offsets)));
  if (format::token_bytes(magic) == sizeof(uint16_t)) {
    write_tokens_as<uint16_t>(file, pairs);
  } else {
    write_tokens_as<uint32_t>(file, pairs);
  }
  file.commit();
}

}  // namespace mpipe::data
