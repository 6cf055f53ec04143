// Tests for what a supervisor reads of a run directory and the recoveries it records.
#include "supervise/run_progress.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "supervise/recovery.h"
#include "support/temp_dir.h"

namespace mpipe::supervise {
namespace {

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(RunProgress, TheLastTrainingRecordGivesTheStepAndNoFileGivesZero) {
  testing::TempDir dir;
  EXPECT_EQ(last_logged_step(dir.path().string()), 0);
  EXPECT_EQ(newest_checkpoint_step(dir.path().string()), 0);
  write(dir.file("metrics.jsonl"),
        "{\"step\":1,\"loss\":1.0}\n{\"step\":2,\"loss\":0.9}\n"
        "{\"step\":9,\"split\":\"val\",\"loss\":0.8}\n{\"step\":3,\"lo");
  EXPECT_EQ(last_logged_step(dir.path().string()), 2);
}

TEST(RunProgress, ARecoveryGoesIntoMetricsAtItsResumedStepAndIsNotAStepLogged) {
  testing::TempDir dir;
  write(dir.file("metrics.jsonl"), "{\"step\":5,\"loss\":1.0}\n{\"step\":6,\"loss\":0.9}\n");
  const Recovery recovery{.time = "2026-11-29T23:00:00Z",
                          .failure = "exit status 3: the watchdog lost a peer",
                          .lost_hosts = {"h2"},
                          .old_hosts = "h1:1,h2:1",
                          .new_hosts = "h1:1",
                          .old_layout = {.stages = 2, .replicas = 1, .micro_batches = 4},
                          .new_layout = {.stages = 1, .replicas = 1, .micro_batches = 4},
                          .bit_identical = true,
                          .last_step = 6,
                          .resumed_from = 4};
  add_to_metrics(dir.path().string(), recovery);
  EXPECT_EQ(last_logged_step(dir.path().string()), 6);
  std::ifstream in(dir.file("metrics.jsonl"));
  std::string line;
  for (int i = 0; i < 3; ++i) std::getline(in, line);
  const auto record = nlohmann::json::parse(line);
  EXPECT_EQ(record["step"], 4);
  EXPECT_EQ(record["event"], "recovery");
  EXPECT_EQ(record["lost_hosts"][0], "h2");
  EXPECT_EQ(record["new_layout"]["stages"], 1);
  EXPECT_EQ(record["steps_redone"], 2);
  EXPECT_FALSE(record.contains("seconds_lost"));  // known only once the relaunch gets past step 6
}

TEST(RunProgress, RecoveriesAreAddedToTheSummaryAndKeepItsKeys) {
  testing::TempDir dir;
  write(dir.file("summary.json"), "{\"steps\": 7, \"final_loss\": 0.5}\n");
  const Recovery recovery{.time = "2026-11-29T23:00:00Z",
                          .failure = "exit status 205: mpirun lost a host's daemon",
                          .lost_hosts = {"h2"},
                          .old_hosts = "h1:1,h2:1,h3:1",
                          .new_hosts = "h1:1,h3:1",
                          .old_layout = {.stages = 3, .replicas = 1, .micro_batches = 4},
                          .new_layout = {.stages = 2, .replicas = 1, .micro_batches = 4},
                          .bit_identical = true,
                          .last_step = 6,
                          .resumed_from = 4,
                          .seconds_lost = 12.5};
  add_to_summary(dir.path().string(), nlohmann::ordered_json::array({recovery_json(recovery)}));
  std::ifstream in(dir.file("summary.json"));
  const auto summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary["steps"], 7);
  const auto& record = summary["recoveries"][0];
  EXPECT_EQ(record["lost_hosts"][0], "h2");
  EXPECT_EQ(record["old_layout"]["stages"], 3);
  EXPECT_EQ(record["new_layout"]["stages"], 2);
  EXPECT_EQ(record["steps_redone"], 2);
  EXPECT_EQ(record["seconds_lost"], 12.5);
  EXPECT_EQ(recovery_line(recovery, 1, 3),
            "supervise: restart 1 of at most 3: exit status 205: mpirun lost a host's daemon; h2 "
            "does not answer; relaunching on h1:1,h3:1 as 2 stages x 1 replica, 4 micro-batches "
            "each (was 3 stages x 1 replica, 4 micro-batches each on h1:1,h2:1,h3:1), resuming "
            "from step 4 (2 steps to redo), bit-identical");
  EXPECT_FALSE(record.contains("experiment"));
  Recovery served = recovery;  // under `mpipe serve`: the experiment the daemon was running
  served.experiment = "mlp-1";
  EXPECT_EQ(recovery_json(served)["experiment"], "mlp-1");
  EXPECT_TRUE(recovery_line(served, 1, 3)
                  .find("relaunching on h1:1,h3:1, experiment mlp-1 as 2 "
                        "stages") != std::string::npos);
}

TEST(RunProgress, ASummaryThatCannotBeReadIsAnErrorNamingIt) {
  testing::TempDir dir;
  EXPECT_THROW(add_to_summary(dir.path().string(), nlohmann::ordered_json::array()), Error);
  write(dir.file("summary.json"), "[1]");
  try {
    add_to_summary(dir.path().string(), nlohmann::ordered_json::array());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir.file("summary.json") + ": not a JSON object");
  }
}

}  // namespace
}  // namespace mpipe::supervise
