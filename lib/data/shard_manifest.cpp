// Writing and checking the shards.json manifest of a folder of token shards.
#include "data/shard_manifest.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "checkpoint/atomic_file.h"
#include "checkpoint/file_digest.h"
#include "core/error.h"
#include "core/regular_file.h"

namespace mpipe::data {
namespace {

namespace fs = std::filesystem;

// The manifest at `path`, or throws InputError naming it.
ShardManifest read_manifest(const std::string& path) {
  const std::string text = read_regular_file(path, "a shard manifest must be a regular file");
  try {
    const nlohmann::json json = nlohmann::json::parse(text);
    ShardManifest manifest;
    manifest.tokenizer_crc32 = json.at("tokenizer_crc32").get<std::string>();
    manifest.vocab = json.at("vocab").get<int64_t>();
    manifest.shards = json.at("shards").get<std::vector<std::string>>();
    return manifest;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not a shard manifest of mpipe tokenize: {}", path, e.what()));
  }
}

}  // namespace

void write_shard_manifest(const std::string& folder, const ShardManifest& manifest) {
  nlohmann::json json = {{"tokenizer_crc32", manifest.tokenizer_crc32},
                         {"vocab", manifest.vocab},
                         {"shards", manifest.shards}};
  if (!manifest.pair_splits.empty()) {
    json["max_len"] = manifest.max_len;
    nlohmann::json splits = nlohmann::json::object();
    for (const PairSplitCount& count : manifest.pair_splits) {
      splits[count.split] = {
          {"pairs", count.pairs}, {"tokens", count.tokens}, {"dropped", count.dropped}};
    }
    json["splits"] = splits;
  }
  checkpoint::write_file_atomically((fs::path(folder) / kShardManifestName).string(),
                                    json.dump(2) + "\n");
}

void check_shard_manifests(const std::vector<std::string>& files, const std::string& tokenizer,
                           const std::string& tokenizer_key) {
  std::map<std::string, std::set<std::string>> listed;  // per folder with a manifest
  std::set<std::string> without_manifest;
  std::string tokenizer_crc32;  // read when first needed
  std::string first_manifest;   // the first manifest read, and its tokenizer's crc32
  std::string first_crc32;
  for (const std::string& file : files) {
    const fs::path path(file);
    const std::string folder = path.parent_path().string();
    if (without_manifest.contains(folder)) continue;
    auto found = listed.find(folder);
    if (found == listed.end()) {
      const std::string manifest_path = (path.parent_path() / kShardManifestName).string();
      std::error_code error;
      if (!fs::exists(manifest_path, error)) {
        without_manifest.insert(folder);
        continue;
      }
      const ShardManifest manifest = read_manifest(manifest_path);
      if (!tokenizer.empty()) {
        if (tokenizer_crc32.empty()) {
          tokenizer_crc32 = checkpoint::crc32_hex(checkpoint::digest_file(tokenizer).crc32);
        }
        check_input(tokenizer_crc32 == manifest.tokenizer_crc32,
                    "{} {}: crc32 {}, but {} records its shards as made with a tokenizer of "
                    "crc32 {}",
                    tokenizer_key, tokenizer, tokenizer_crc32, manifest_path,
                    manifest.tokenizer_crc32);
      }
      if (first_manifest.empty()) {
        first_manifest = manifest_path;
        first_crc32 = manifest.tokenizer_crc32;
      }
      check_input(manifest.tokenizer_crc32 == first_crc32,
                  "{}: records its shards as made with a tokenizer of crc32 {}, but {} records "
                  "crc32 {}; the shards of a run must share one tokenizer",
                  manifest_path, manifest.tokenizer_crc32, first_manifest, first_crc32);
      found =
          listed.emplace(folder, std::set(manifest.shards.begin(), manifest.shards.end())).first;
    }
    check_input(found->second.contains(path.filename().string()),
                "{}: not one of the shards that {} lists (left by another tokenize, maybe of "
                "another tokenizer)",
                file, (path.parent_path() / kShardManifestName).string());
  }
}

}  // namespace mpipe::data
