// Tests for what a supervisor reads of a run directory and the recoveries it records.
#include "supervise/run_progress.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "supervise/recovery.h"
#include "supervise/widening.h"
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

TEST(RunProgress, AFileWrittenSinceALaunchIsOneThatExistsAndIsNotOlder) {
  testing::TempDir dir;
  const auto before = std::chrono::system_clock::now() - std::chrono::hours(1);
  EXPECT_FALSE(written_since(dir.file("summary.json"), before));  // none yet
  write(dir.file("summary.json"), "{}\n");
  EXPECT_TRUE(written_since(dir.file("summary.json"), before));
  EXPECT_FALSE(written_since(dir.file("summary.json"),
                             std::chrono::system_clock::now() + std::chrono::hours(1)));
}

TEST(RunProgress, ARecoveryGoesIntoMetricsAtItsResumedStepAndIsNotAStepLogged) {
  testing::TempDir dir;
  write(dir.file("metrics.jsonl"), "{\"step\":5,\"loss\":1.0}\n{\"step\":6,\"loss\":0.9}\n");
  const Recovery recovery{.change = {.time = "2026-11-29T23:00:00Z",
                                     .old_hosts = "h1:1,h2:1",
                                     .new_hosts = "h1:1",
                                     .old_layout = {.stages = 2, .replicas = 1, .micro_batches = 4},
                                     .new_layout = {.stages = 1, .replicas = 1, .micro_batches = 4},
                                     .bit_identical = true,
                                     .last_step = 6,
                                     .resumed_from = 4},
                          .failure = "exit status 3: the watchdog lost a peer",
                          .lost_hosts = {"h2"}};
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
  const Recovery recovery{.change = {.time = "2026-11-29T23:00:00Z",
                                     .old_hosts = "h1:1,h2:1,h3:1",
                                     .new_hosts = "h1:1,h3:1",
                                     .old_layout = {.stages = 3, .replicas = 1, .micro_batches = 4},
                                     .new_layout = {.stages = 2, .replicas = 1, .micro_batches = 4},
                                     .bit_identical = true,
                                     .last_step = 6,
                                     .resumed_from = 4,
                                     .seconds = 12.5},
                          .failure = "exit status 205: mpirun lost a host's daemon",
                          .lost_hosts = {"h2"}};
  add_to_summary(dir.path().string(),
                 {{"recoveries", nlohmann::ordered_json::array({recovery_json(recovery)})}});
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
  served.change.experiment = "mlp-1";
  EXPECT_EQ(recovery_json(served)["experiment"], "mlp-1");
  EXPECT_TRUE(recovery_line(served, 1, 3)
                  .find("relaunching on h1:1,h3:1, experiment mlp-1 as 2 "
                        "stages") != std::string::npos);
}

TEST(RunProgress, AWideningGoesIntoMetricsAndTheSummaryBesideTheRecoveries) {
  testing::TempDir dir;
  write(dir.file("metrics.jsonl"), "{\"step\":34,\"loss\":1.0}\n");
  Widening widening{.change = {.time = "2026-11-30T20:00:00Z",
                               .old_hosts = "h1:1,h3:1",
                               .new_hosts = "h1:1,h2:1,h3:1",
                               .old_layout = {.stages = 2, .replicas = 1, .micro_batches = 4},
                               .new_layout = {.stages = 3, .replicas = 1, .micro_batches = 4},
                               .bit_identical = true,
                               .last_step = 34,
                               .resumed_from = 34},
                    .returned_hosts = {"h2"}};
  EXPECT_EQ(widening_stop_line(widening),
            "supervise: h2 answers again; stopping the job at its next step boundary to relaunch "
            "it on h1:1,h2:1,h3:1 as 3 stages x 1 replica, 4 micro-batches each (now 2 stages x 1 "
            "replica, 4 micro-batches each on h1:1,h3:1), bit-identical");
  EXPECT_EQ(widening_line(widening, 1),
            "supervise: widening 1: relaunching on h1:1,h2:1,h3:1 as 3 stages x 1 replica, 4 "
            "micro-batches each, resuming from step 34 (0 steps to redo)");
  add_to_metrics(dir.path().string(), widening);
  EXPECT_EQ(last_logged_step(dir.path().string()), 34);
  std::ifstream in(dir.file("metrics.jsonl"));
  std::string line;
  for (int i = 0; i < 2; ++i) std::getline(in, line);
  const auto record = nlohmann::json::parse(line);
  EXPECT_EQ(record["step"], 34);
  EXPECT_EQ(record["event"], "widening");
  EXPECT_EQ(record["returned_hosts"][0], "h2");
  EXPECT_EQ(record["new_layout"]["stages"], 3);
  EXPECT_EQ(record["steps_redone"], 0);
  EXPECT_FALSE(record.contains("seconds"));  // known only once the relaunch gets past step 34

  write(dir.file("summary.json"), "{\"steps\": 60}\n");
  widening.change.seconds = 4.5;
  widening.change.experiment = "mlp-1";  // under `mpipe serve`
  add_to_summary(dir.path().string(),
                 {{"widenings", nlohmann::ordered_json::array({widening_json(widening)})}});
  std::ifstream summary_in(dir.file("summary.json"));
  const auto summary = nlohmann::json::parse(summary_in);
  EXPECT_EQ(summary["steps"], 60);
  EXPECT_FALSE(summary.contains("recoveries"));
  EXPECT_EQ(summary["widenings"][0]["seconds"], 4.5);
  EXPECT_EQ(summary["widenings"][0]["experiment"], "mlp-1");
  EXPECT_EQ(summary["widenings"][0]["old_hosts"], "h1:1,h3:1");
}

// The records' keys in the order docs/multinode.md lists them (tests/multihost and
// scripts/bench/failure_matrix.sh read them): the seconds once measured, the experiment under
// serve.
TEST(RunProgress, RecordsKeepTheirKeysInTheirOrder) {
  const auto keys = [](const nlohmann::ordered_json& record) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : record.items()) keys.push_back(key);
    return keys;
  };
  const std::vector<std::string> common = {"old_hosts",    "new_hosts",     "old_layout",
                                           "new_layout",   "bit_identical", "last_step",
                                           "resumed_from", "steps_redone"};
  Recovery recovery{.change = {.time = "2026-11-29T23:00:00Z",
                               .old_hosts = "h1:1,h2:1",
                               .new_hosts = "h1:1",
                               .old_layout = {.stages = 2, .replicas = 1, .micro_batches = 4},
                               .new_layout = {.stages = 1, .replicas = 1, .micro_batches = 4},
                               .bit_identical = true,
                               .last_step = 6,
                               .resumed_from = 4},
                    .failure = "exit status 3: a rank lost a peer",
                    .lost_hosts = {"h2"}};
  std::vector<std::string> expected = {"time", "failure", "lost_hosts"};
  expected.insert(expected.end(), common.begin(), common.end());
  EXPECT_EQ(keys(recovery_json(recovery)), expected);
  recovery.change.seconds = 12.5;
  recovery.change.experiment = "mlp-1";
  expected.insert(expected.end(), {"seconds_lost", "experiment"});
  EXPECT_EQ(keys(recovery_json(recovery)), expected);

  Widening widening{.change = {.time = "2026-11-30T20:00:00Z",
                               .old_hosts = "h1:1",
                               .new_hosts = "h1:1,h2:1",
                               .old_layout = {.stages = 1, .replicas = 1, .micro_batches = 4},
                               .new_layout = {.stages = 2, .replicas = 1, .micro_batches = 4},
                               .bit_identical = true,
                               .last_step = 34,
                               .resumed_from = 34},
                    .returned_hosts = {"h2"}};
  expected = {"time", "returned_hosts"};
  expected.insert(expected.end(), common.begin(), common.end());
  EXPECT_EQ(keys(widening_json(widening)), expected);
  widening.change.seconds = 4.5;
  widening.change.experiment = "mlp-1";
  expected.insert(expected.end(), {"seconds", "experiment"});
  EXPECT_EQ(keys(widening_json(widening)), expected);
}

TEST(RunProgress, ASummaryThatCannotBeReadIsAnErrorNamingIt) {
  testing::TempDir dir;
  EXPECT_THROW(add_to_summary(dir.path().string(), nlohmann::ordered_json::object()), Error);
  write(dir.file("summary.json"), "[1]");
  try {
    add_to_summary(dir.path().string(), nlohmann::ordered_json::object());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir.file("summary.json") + ": not a JSON object");
  }
}

}  // namespace
}  // namespace mpipe::supervise
