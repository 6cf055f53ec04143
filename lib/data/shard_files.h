// shard_files: the files that the shard globs of data.train or data.val stand for.
#pragma once

#include <string>
#include <vector>

namespace mpipe::data {

// The files that `patterns` (data.train or data.val, named by `key`) stand for: each entry
// expanded as a glob (a plain path matches itself), in the order given, each pattern's matches
// sorted. Throws InputError "data.train: no file matches 'shards/train_*.bin'".
std::vector<std::string> shard_files(const std::vector<std::string>& patterns,
                                     const std::string& key);

}  // namespace mpipe::data
