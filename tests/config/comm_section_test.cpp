// Tests for the `comm:` section (the watchdog's deadlines) and for durations.
#include <gtest/gtest.h>

#include "experiment_file.h"

namespace mpipe::config {
namespace {

std::string error_of(const std::string& yaml) { return ExperimentFile().error(yaml + kModel); }

comm::CommConfig comm_of(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  return ExperimentFile().load(yaml + kModel, sets).comm;
}

TEST(CommSection, DefaultsAreAutoAndTenMinutesAtStartUp) {
  const comm::CommConfig config = comm_of("");
  EXPECT_EQ(config.timeout_s, 0.0);  // auto
  EXPECT_EQ(config.startup_timeout_s, 600.0);
  EXPECT_EQ(config.stop_grace_s, 0.0);  // auto
}

TEST(CommSection, DurationsTakeUnitsOrPlainSeconds) {
  EXPECT_EQ(comm_of("comm: {timeout: 300s}\n").timeout_s, 300.0);
  EXPECT_EQ(comm_of("comm: {timeout: 5m}\n").timeout_s, 300.0);
  EXPECT_EQ(comm_of("comm: {timeout: 1.5h}\n").timeout_s, 5400.0);
  EXPECT_EQ(comm_of("comm: {timeout: 250ms}\n").timeout_s, 0.25);
  EXPECT_EQ(comm_of("comm: {timeout: 2d}\n").timeout_s, 172800.0);
  EXPECT_EQ(comm_of("comm: {timeout: 45}\n").timeout_s, 45.0);
  EXPECT_EQ(comm_of("comm: {timeout: auto, stop_grace: auto}\n").stop_grace_s, 0.0);
  const comm::CommConfig config = comm_of("comm: {startup_timeout: 20m, stop_grace: 30s}\n");
  EXPECT_EQ(config.startup_timeout_s, 1200.0);
  EXPECT_EQ(config.stop_grace_s, 30.0);
}

TEST(CommSection, SetOverridesTheTimeout) {
  EXPECT_EQ(comm_of("", {"comm.timeout=3s"}).timeout_s, 3.0);
}

TEST(CommSection, ReadAloneBeforeTheExperimentWithItsOverrides) {
  // The watchdog's deadlines before the experiment is loaded: other sections are not checked.
  const ExperimentFile file;
  const std::string path =
      file.write("comm: {startup_timeout: 20s, timeout: 1m}\ntrain: {steps: -1}\n" + kModel);
  const comm::CommConfig config = load_comm_section(path, {"comm.startup_timeout=3s"});
  EXPECT_EQ(config.startup_timeout_s, 3.0);
  EXPECT_EQ(config.timeout_s, 60.0);
  EXPECT_EQ(load_comm_section(file.write(kModel, "plain.yaml"), {}).startup_timeout_s, 600.0);
  EXPECT_THROW(load_comm_section(file.write("comm: {startup_timeout: soon}\n", "bad.yaml"), {}),
               InputError);
  EXPECT_THROW(load_comm_section(file.write("- a list\n", "list.yaml"), {}), InputError);
}

TEST(CommSection, ADurationNeedsANumberAndAKnownUnit) {
  const std::string expected =
      "exp.yaml:2: comm.timeout: expected a duration such as 30s, 5m or 1h (units ms, s, m, h, "
      "d), got ";
  EXPECT_EQ(error_of("comm:\n  timeout: soon\n"), expected + "'soon'");
  EXPECT_EQ(error_of("comm:\n  timeout: 5 min\n"), expected + "'5 min'");
  EXPECT_EQ(error_of("comm:\n  timeout: 5w\n"), expected + "'5w'");
  EXPECT_EQ(error_of("comm:\n  timeout: s\n"), expected + "'s'");
  EXPECT_EQ(error_of("comm:\n  timeout: -5s\n"), expected + "'-5s'");
  EXPECT_EQ(error_of("comm:\n  timeout: [5s]\n"), expected + "a list");
  EXPECT_EQ(error_of("comm:\n  timeout:\n"), expected + "nothing");
}

TEST(CommSection, ADurationMustBePositiveAndAtMostThirtyDays) {
  EXPECT_EQ(error_of("comm:\n  timeout: 0s\n"), "exp.yaml:2: comm.timeout: must be > 0, got 0s");
  EXPECT_EQ(error_of("comm:\n  stop_grace: 0\n"),
            "exp.yaml:2: comm.stop_grace: must be > 0, got 0");
  EXPECT_EQ(error_of("comm:\n  startup_timeout: 31d\n"),
            "exp.yaml:2: comm.startup_timeout: must be at most 30d, got 31d");
}

TEST(CommSection, StartupTimeoutIsNeverAuto) {
  EXPECT_EQ(error_of("comm:\n  startup_timeout: auto\n"),
            "exp.yaml:2: comm.startup_timeout: expected a duration such as 30s, 5m or 1h (units "
            "ms, s, m, h, d), got 'auto'");
}

TEST(CommSection, ProgressThreadIsOffUnlessAsked) {
  EXPECT_FALSE(comm_of("").progress_thread);
  EXPECT_TRUE(comm_of("comm: {progress_thread: true}\n").progress_thread);
  EXPECT_FALSE(comm_of("comm: {progress_thread: false}\n").progress_thread);
  EXPECT_TRUE(comm_of("", {"comm.progress_thread=true"}).progress_thread);
}

TEST(CommSection, ProgressThreadIsTrueOrFalse) {
  EXPECT_EQ(error_of("comm:\n  progress_thread: sometimes\n"),
            "exp.yaml:2: comm.progress_thread: expected true or false, got 'sometimes'");
  EXPECT_EQ(error_of("comm:\n  progress_thread: [true]\n"),
            "exp.yaml:2: comm.progress_thread: expected true or false, got a list");
}

TEST(CommSection, UnknownKeysAreRefused) {
  EXPECT_EQ(error_of("comm:\n  timout: 5s\n"),
            "exp.yaml:2: comm.timout: unknown key (known: timeout, startup_timeout, stop_grace, "
            "progress_thread)");
}

}  // namespace
}  // namespace mpipe::config
