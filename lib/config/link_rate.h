// Link rates as people write them: "100mbit", "1gbit" (tc's decimal bits per second) or a byte
// size per second such as "125MB".
#pragma once

#include <string_view>

namespace mpipe::config {

// Bytes per second of `text`: a number with a unit bit, kbit, mbit, gbit or tbit (any case,
// decimal: 1mbit = 10^6 bits), or a byte size as parse_byte_size reads it ("125MB", binary
// units), per second. Throws InputError with the message alone (the caller names the option):
// "expected a rate such as 100mbit, 1gbit or 125MB, got 'fast'", "must be > 0, got 0mbit".
double parse_link_rate(std::string_view text);

}  // namespace mpipe::config
