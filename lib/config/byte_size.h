// Byte sizes as people write them: "6GiB", "512MiB", "2G", "1.5 TiB", "1048576".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mpipe::config {

// Bytes of `text`: a number (integer or decimal) with an optional unit B, K, M, G, T (also KB,
// KiB, MB, MiB, ... in any case), all binary (K = KiB = 1024 B) as memory sizes are in Slurm and
// Docker; fractions of a byte are dropped. Throws InputError with the message alone (the caller
// names the key): "expected a size such as 6GiB, 512MiB or 2G, got 'lots'", "must be > 0, got
// 0GiB", "must be < 8 EiB, got 9000000TiB".
int64_t parse_byte_size(std::string_view text);

}  // namespace mpipe::config
