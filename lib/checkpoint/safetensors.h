// Safetensors files: named f32 tensors plus string metadata, the format PyTorch/HF tools read.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/file_digest.h"
#include "core/shape.h"

namespace mpipe::checkpoint {

struct NamedTensor {
  std::string name;
  Shape shape;
  std::vector<float> values;  // row-major, shape.numel() values
};

// The name of the first tensor holding a NaN or an infinity, if any.
std::optional<std::string> first_non_finite(const std::vector<NamedTensor>& tensors);

struct SafetensorsFile {
  std::vector<NamedTensor> tensors;  // in the order of their data in the file
  std::map<std::string, std::string> metadata;
};

// Writes `tensors` (data in the given order) and `metadata` as a safetensors file:
// u64 little-endian header length, JSON header padded with spaces to a multiple of 8,
// then the raw little-endian f32 data. Atomic: `path` is either the whole new file or
// untouched. Throws mpipe::Error on duplicate names, values/shape mismatch or I/O failure.
// Returns the size and crc32 of the file written.
FileDigest write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                             const std::map<std::string, std::string>& metadata = {});

// Reads and validates a safetensors file holding only F32 tensors. Throws
// mpipe::InputError with a one-line message naming the file, e.g.
// "ckpt.safetensors: truncated: header says 1024 bytes of data, file has 512".
SafetensorsFile read_safetensors(const std::string& path);

// Only the metadata of a safetensors file (reads and checks the header, not the data). Throws
// InputError like read_safetensors.
std::map<std::string, std::string> read_safetensors_metadata(const std::string& path);

}  // namespace mpipe::checkpoint
