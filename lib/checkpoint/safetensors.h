// Safetensors files: named f32 tensors plus string metadata, the format PyTorch/HF tools read.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/shape.h"

namespace mpipe::checkpoint {

struct NamedTensor {
  std::string name;
  Shape shape;
  std::vector<float> values;  // row-major, shape.numel() values
};

struct SafetensorsFile {
  std::vector<NamedTensor> tensors;  // in the order of their data in the file
  std::map<std::string, std::string> metadata;
};

// Writes `tensors` (data in the given order) and `metadata` as a safetensors file:
// u64 little-endian header length, JSON header padded with spaces to a multiple of 8,
// then the raw little-endian f32 data. Atomic: `path` is either the whole new file or
// untouched. Throws mpipe::Error on duplicate names, values/shape mismatch or I/O failure.
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Reads and validates a safetensors file holding only F32 tensors. Throws
// mpipe::InputError with a one-line message naming the file, e.g.
// "ckpt.safetensors: truncated: header says 1024 bytes of data, file has 512".
SafetensorsFile read_safetensors(const std::string& path);

}  // namespace mpipe::checkpoint
