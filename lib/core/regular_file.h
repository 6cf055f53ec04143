// Reading a whole regular file without ever blocking on a FIFO or a device put in its place.
#pragma once

#include <string>
#include <string_view>

namespace mpipe {

// The bytes of the regular file `path`, at most the size fstat reported when it was opened. It
// is opened without blocking (a FIFO is refused, not waited on) and confirmed regular on the open
// descriptor, so a file swapped for something else after a check is refused too. Throws
// InputError: "PATH: cannot open: REASON", "PATH: NOT_REGULAR" (e.g. "a SentencePiece model must
// be a regular file"), "PATH: read error: REASON".
std::string read_regular_file(const std::string& path, std::string_view not_regular);

}  // namespace mpipe
