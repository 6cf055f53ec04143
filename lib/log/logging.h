// Logging setup: the spdlog default logger on stderr, with the MPI rank in every line (or plain,
// for a command of one process), and copies of it in a log file while one is open (LogFileCopy).
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
// default, so library code logs with spdlog::info(...) and friends. Its lines also go to each
// open LogFileCopy.
void setup_logging(int world_rank, int world_size, const std::string& level);

// Makes a logger on stderr with neither time nor rank ("[error] message") the spdlog default: the
// commands of one process, and a command line that does not parse.
void setup_plain_logging(const std::string& level);

// While it lives, the default logger's lines (of this and later setup_logging calls) are also
// appended to `path`, with the same pattern: the daemon's log of one experiment
// (runs/NAME/experiment.log). Throws spdlog::spdlog_ex when the file cannot be opened.
class LogFileCopy {
 public:
  LogFileCopy(const std::string& path, int world_rank, int world_size);
  ~LogFileCopy();
  LogFileCopy(const LogFileCopy&) = delete;
  LogFileCopy& operator=(const LogFileCopy&) = delete;

  // Appends `message` to the file only, as an info line (what goes to stdout, not the log:
  // progress lines).
  void write(const std::string& message);

 private:
  spdlog::sink_ptr sink_;
  std::shared_ptr<spdlog::logger> file_only_;
};

}  // namespace mpipe::log
