// Byte counts for people: "512 B", "1.5 KiB", "23.4 GiB".
#pragma once

#include <string>

namespace mpipe {

// `bytes` in the largest binary unit it reaches, with `decimals` decimals ("48.0 MiB").
std::string format_bytes(double bytes, int decimals = 1);
// Like format_bytes, but rounded up in its last digit ("2.8 GiB" for 2.71 GiB): a limit written
// as shown is never below `bytes`.
std::string format_bytes_up(double bytes);

}  // namespace mpipe
