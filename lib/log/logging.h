// Logging setup: the spdlog default logger on stderr, with the MPI rank in every line.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace mpipe::log {

// "trace", "debug", "info", "warn", "error", "critical" or "off"; anything else throws
// InputError "unknown log level 'x' (expected trace, debug, info, warn, error, critical or off)".
spdlog::level::level_enum parse_log_level(const std::string& name);

// The spdlog pattern of every line: "[2026-11-22 11:02:03.123] [rank 1/4] [info] message".
std::string log_pattern(int world_rank, int world_size);

// A logger writing to `sink` with log_pattern() and `level`.
std::shared_ptr<spdlog::logger> make_rank_logger(int world_rank, int world_size,
                                                 spdlog::level::level_enum level,
                                                 spdlog::sink_ptr sink);

// Makes a rank logger on stderr (level colored when stderr is a terminal) the spdlog
// default, so library code logs with spdlog::info(...) and friends.
void setup_logging(int world_rank, int world_size, const std::string& level);

}  // namespace mpipe::log
