// Test helpers: a self-deleting temporary folder and writers for small gzipped IDX files.
#pragma once

#include <stdlib.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpipe::data::testing {

// A fresh folder under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "mpipe_data_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// An IDX file's bytes: magic (0, 0, type, rank), big-endian dims, then `payload`.
inline std::vector<uint8_t> idx_bytes(uint8_t type, const std::vector<uint32_t>& dims,
                                      const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> bytes{0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t dim : dims) {
    for (int shift = 24; shift >= 0; shift -= 8)
      bytes.push_back(static_cast<uint8_t>(dim >> shift));
  }
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  return bytes;
}

inline void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  if (file == nullptr) throw std::runtime_error("gzopen failed: " + path);
  const int written =
      bytes.empty() ? 0 : gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(file);
  if (written != static_cast<int>(bytes.size())) throw std::runtime_error("gzwrite failed");
}

inline void write_plain(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Writes a Fashion-MNIST style folder: `images` [n, 28, 28] and `labels` [n] for both the
// train and t10k files.
inline void write_fashion_folder(const TempDir& dir, const std::vector<uint8_t>& images,
                                 const std::vector<uint8_t>& labels) {
  const auto n = static_cast<uint32_t>(labels.size());
  for (const char* prefix : {"train", "t10k"}) {
    write_gz(dir.file(std::string(prefix) + "-images-idx3-ubyte.gz"),
             idx_bytes(0x08, {static_cast<uint32_t>(images.size() / 784), 28, 28}, images));
    write_gz(dir.file(std::string(prefix) + "-labels-idx1-ubyte.gz"), idx_bytes(0x08, {n}, labels));
  }
}

}  // namespace mpipe::data::testing
