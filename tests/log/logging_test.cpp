// Tests for logging setup: level names, the rank-stamped line format, the default logger and its
// file copies.
#include "log/logging.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "support/temp_dir.h"

namespace mpipe::log {
namespace {

TEST(Logging, ParseLogLevelAcceptsTheDocumentedNames) {
  EXPECT_EQ(parse_log_level("trace"), spdlog::level::trace);
  EXPECT_EQ(parse_log_level("debug"), spdlog::level::debug);
  EXPECT_EQ(parse_log_level("info"), spdlog::level::info);
  EXPECT_EQ(parse_log_level("warn"), spdlog::level::warn);
  EXPECT_EQ(parse_log_level("error"), spdlog::level::err);
  EXPECT_EQ(parse_log_level("critical"), spdlog::level::critical);
  EXPECT_EQ(parse_log_level("off"), spdlog::level::off);
}

TEST(Logging, UnknownLevelIsAnInputErrorNamingIt) {
  try {
    parse_log_level("verbose");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown log level 'verbose' (expected trace, debug, info, warn, error, critical "
                 "or off)");
  }
  EXPECT_THROW(parse_log_level("INFO"), InputError);
  EXPECT_THROW(parse_log_level(""), InputError);
}

TEST(Logging, EveryLineCarriesTimeRankAndLevel) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  auto logger = make_rank_logger(1, 4, spdlog::level::info, sink);
  logger->info("hello {}", 42);
  logger->error("bad");
  const std::regex expected(
      R"(\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] \[rank 1/4\] \[info\] hello 42\n)"
      R"(\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] \[rank 1/4\] \[error\] bad\n)");
  EXPECT_TRUE(std::regex_match(out.str(), expected)) << out.str();
}

TEST(Logging, MessagesBelowTheLevelAreDropped) {
  std::ostringstream out;
  auto logger = make_rank_logger(0, 1, spdlog::level::warn,
                                 std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  logger->info("quiet");
  logger->warn("loud");
  EXPECT_EQ(out.str().find("quiet"), std::string::npos);
  EXPECT_NE(out.str().find("[rank 0/1] [warning] loud"), std::string::npos);
}

TEST(Logging, RankOutsideTheWorldIsRejected) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  EXPECT_THROW(make_rank_logger(4, 4, spdlog::level::info, sink), Error);
  EXPECT_THROW(make_rank_logger(-1, 4, spdlog::level::info, sink), Error);
}

TEST(Logging, SetupInstallsTheDefaultLoggerOrLeavesItOnABadLevel) {
  const auto before = spdlog::default_logger();
  EXPECT_THROW(setup_logging(0, 2, "loud"), InputError);
  EXPECT_EQ(spdlog::default_logger(), before);
  setup_logging(1, 2, "debug");
  EXPECT_EQ(spdlog::default_logger()->name(), "mpipe");
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::debug);
  spdlog::set_default_logger(before);
}

TEST(Logging, AFileCopyGetsTheLinesWhileItIsOpenAcrossSetups) {
  const auto before = spdlog::default_logger();
  testing::TempDir dir;
  const std::string path = dir.file("experiment.log");
  setup_logging(0, 2, "info");
  spdlog::info("before");
  {
    LogFileCopy copy(path, 0, 2);
    spdlog::info("first");
    setup_logging(0, 2, "warn");  // an experiment's own level
    spdlog::info("dropped");
    spdlog::warn("second");
    copy.write("step 1/2");
  }
  spdlog::warn("after");
  spdlog::set_default_logger(before);
  std::ifstream in(path);
  const std::string text(std::istreambuf_iterator<char>(in), {});
  const std::regex expected(R"(\[[0-9 :.-]+\] \[rank 0/2\] \[info\] first\n)"
                            R"(\[[0-9 :.-]+\] \[rank 0/2\] \[warning\] second\n)"
                            R"(\[[0-9 :.-]+\] \[rank 0/2\] \[info\] step 1/2\n)");
  EXPECT_TRUE(std::regex_match(text, expected)) << text;
}

}  // namespace
}  // namespace mpipe::log
