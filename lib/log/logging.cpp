// Logging setup: rank-stamped pattern, level parsing, the default stderr logger (rank-stamped or
// plain) and its file copies.
#include "log/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <array>
#include <utility>

#include "core/error.h"

namespace mpipe::log {
namespace {

// The open LogFileCopy files: one sink of every logger setup_logging makes, so a file stays open
// across setup_logging calls (each experiment sets its own level).
std::shared_ptr<spdlog::sinks::dist_sink_mt> file_copies() {
  static const auto sinks = std::make_shared<spdlog::sinks::dist_sink_mt>();
  return sinks;
}

}  // namespace

spdlog::level::level_enum parse_log_level(const std::string& name) {
  using spdlog::level::level_enum;
  static constexpr std::array<std::pair<const char*, level_enum>, 7> kLevels = {{
      {"trace", level_enum::trace},
      {"debug", level_enum::debug},
      {"info", level_enum::info},
      {"warn", level_enum::warn},
      {"error", level_enum::err},
      {"critical", level_enum::critical},
      {"off", level_enum::off},
  }};
  for (const auto& [text, level] : kLevels) {
    if (name == text) return level;
  }
  throw InputError(fmt::format(
      "unknown log level '{}' (expected trace, debug, info, warn, error, critical or off)", name));
}

std::string log_pattern(int world_rank, int world_size) {
  return fmt::format("[%Y-%m-%d %H:%M:%S.%e] [rank {}/{}] [%^%l%$] %v", world_rank, world_size);
}

std::shared_ptr<spdlog::logger> make_rank_logger(int world_rank, int world_size,
                                                 spdlog::level::level_enum level,
                                                 spdlog::sink_ptr sink) {
  check(world_size >= 1 && world_rank >= 0 && world_rank < world_size,
        "invalid rank {} of world size {}", world_rank, world_size);
  auto logger = std::make_shared<spdlog::logger>("mpipe", std::move(sink));
  logger->set_pattern(log_pattern(world_rank, world_size));
  logger->set_level(level);
  return logger;
}

void setup_logging(int world_rank, int world_size, const std::string& level) {
  const spdlog::level::level_enum parsed = parse_log_level(level);
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto logger = make_rank_logger(world_rank, world_size, parsed, std::move(sink));
  logger->sinks().push_back(file_copies());  // each file keeps its own pattern
  spdlog::set_default_logger(std::move(logger));
}

void setup_plain_logging(const std::string& level) {
  auto logger = std::make_shared<spdlog::logger>(
      "mpipe", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  logger->set_pattern("[%^%l%$] %v");
  logger->set_level(parse_log_level(level));
  spdlog::set_default_logger(std::move(logger));
}

LogFileCopy::LogFileCopy(const std::string& path, int world_rank, int world_size)
    : sink_(std::make_shared<spdlog::sinks::basic_file_sink_mt>(path)),
      file_only_(make_rank_logger(world_rank, world_size, spdlog::level::info, sink_)) {
  file_only_->flush_on(spdlog::level::info);
  file_copies()->add_sink(sink_);
}

LogFileCopy::~LogFileCopy() {
  sink_->flush();
  file_copies()->remove_sink(sink_);
}

void LogFileCopy::write(const std::string& message) { file_only_->info("{}", message); }

}  // namespace mpipe::log
