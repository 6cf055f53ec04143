// Reads gzipped IDX files (the MNIST / Fashion-MNIST format) of unsigned bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mpipe::data {

// An IDX array of unsigned bytes: `dims` outermost first, `bytes` row-major.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
};

// Reads a gzipped (or plain) IDX file of element type unsigned byte (magic 0x00000801 for
// one dimension, 0x00000803 for three, ...). Throws InputError naming `path` when it cannot be
// opened, the magic or element type is wrong, or the payload is shorter or longer than `dims`
// say.
IdxArray read_idx(const std::string& path);

}  // namespace mpipe::data
