// The lines of a text file or of stdin, as translate and score read sentences: one a line.
#pragma once

#include <string>
#include <vector>

namespace mpipe::app {

// The lines of file `path` ("" = stdin), without their newlines; a last line without one counts,
// and a file that ends with a newline has no empty line after it. Throws InputError naming
// `option` and the file when it cannot be read or is not text.
std::vector<std::string> read_lines(const std::string& path, const std::string& option);

// "--ref refs.txt" or "stdin": how errors name the lines of `path` ("" = stdin).
std::string lines_source(const std::string& path, const std::string& option);

}  // namespace mpipe::app
