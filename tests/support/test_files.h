// Files for the tests that move them: reproducible pseudo-random bytes, and a file read whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>

namespace mpipe::testing {

// `size` bytes from a xorshift32 generator seeded with `seed` (the same bytes on every rank).
inline std::string pseudo_random_bytes(size_t size, uint32_t seed) {
  std::string bytes(size, '\0');
  uint32_t state = 2463534242u + seed;
  for (char& byte : bytes) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    byte = static_cast<char>(state);
  }
  return bytes;
}

// The whole content of the file at `path` (empty when it cannot be read).
inline std::string file_contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace mpipe::testing
