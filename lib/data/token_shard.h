// TokenShard: one llm.c token shard (data/token_shard_format.h), checked, and read with pread.
#pragma once

#include <string>

#include "data/token_file.h"

namespace mpipe::data {

// A shard's file, checked when opened (header magic and version, token count against the file's
// size) and kept open: its tokens are read with pread (data/token_file.h). Errors are
// InputErrors naming the file: "train_000.bin: token count 1000 in the header needs 2000 bytes
// after it, the file has 1998".
class TokenShard : public TokenFile {
 public:
  explicit TokenShard(std::string path);
};

}  // namespace mpipe::data
