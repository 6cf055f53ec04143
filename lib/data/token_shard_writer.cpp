// The llm.c shard writer: header, then the tokens at the width the vocabulary needs.
#include "data/token_shard_writer.h"

#include <array>
#include <limits>
#include <vector>

#include "checkpoint/atomic_file.h"
#include "core/error.h"
#include "data/token_shard_format.h"

namespace mpipe::data {
namespace {

namespace format = token_shard;

// Writes `ids` as tokens of type Token.
template <typename Token>
void write_as(checkpoint::AtomicFile& file, std::span<const int> ids) {
  const std::vector<Token> tokens(ids.begin(), ids.end());
  file.write(std::as_bytes(std::span(tokens)));
}

}  // namespace

void write_token_shard(const std::string& path, std::span<const int> ids, int64_t vocab) {
  check(ids.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
        "{}: {} tokens do not fit one shard", path, ids.size());
  for (int id : ids)
    check(id >= 0 && id < vocab, "{}: token id {} not in [0, {})", path, id, vocab);
  const int32_t magic = format::magic_for_vocab(vocab);
  std::array<int32_t, format::kHeaderInts> header{};
  header[format::kMagicAt] = magic;
  header[format::kVersionAt] = format::kVersion;
  header[format::kCountAt] = static_cast<int32_t>(ids.size());
  checkpoint::AtomicFile file(path);
  file.write(std::as_bytes(std::span(header)));
  if (format::token_bytes(magic) == sizeof(uint16_t)) {
    write_as<uint16_t>(file, ids);
  } else {
    write_as<uint32_t>(file, ids);
  }
  file.commit();
}

}  // namespace mpipe::data
