// Where and when: this host's name, this process's id and the UTC time, for lock holders and the
// status file.
#pragma once

#include <string>

namespace mpipe {

// The host name (gethostname), or "unknown".
std::string this_host();

// The current UTC time as "2026-11-23T20:00:00Z".
std::string utc_now();

// The process id.
int this_pid();

}  // namespace mpipe
