// Tests for MetricsWriter: JSON lines read back, lazy run directory, appends, atomic summary.
#include "log/metrics_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "file_size_limit.h"
#include "support/temp_dir.h"

namespace mpipe::log {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(MetricsWriter, NothingIsCreatedBeforeTheFirstRecord) {
  testing::TempDir dir;
  const MetricsWriter writer(dir.file("run"));
  EXPECT_FALSE(fs::exists(dir.file("run")));
}

TEST(MetricsWriter, EachRecordIsOneJsonLineWithTheDocumentedKeys) {
  testing::TempDir dir;
  MetricsWriter writer(dir.file("run"));
  writer.train(10, 0.5, 1e-3, 100.0);
  writer.eval(10, "test", 0.75, 0.875);
  writer.eval(20, "valid", 1.25, 0.5, 1.8);

  const std::vector<std::string> lines = read_lines(writer.metrics_path());  // still open
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], R"({"step":10,"loss":0.5,"lr":0.001,"samples_per_s":100.0})");
  EXPECT_EQ(lines[1], R"({"step":10,"split":"test","loss":0.75,"accuracy":0.875})");
  const auto eval = nlohmann::json::parse(lines[2]);
  EXPECT_EQ(eval, (nlohmann::json{{"step", 20},
                                  {"split", "valid"},
                                  {"loss", 1.25},
                                  {"accuracy", 0.5},
                                  {"bits_per_char", 1.8}}));
}

TEST(MetricsWriter, ARegressionsEvaluationHasNoAccuracyKey) {
  testing::TempDir dir;
  MetricsWriter writer(dir.file("run"));
  writer.eval(10, "test", 7.75, std::nullopt);
  EXPECT_EQ(read_lines(writer.metrics_path()),
            std::vector<std::string>{R"({"step":10,"split":"test","loss":7.75})"});
}

TEST(MetricsWriter, TrainRecordsCarryEachRanksComputeWaitingBubbleMemoryAndTheMfu) {
  testing::TempDir dir;
  MetricsWriter writer(dir.file("run"));
  writer.train(10, 0.5, 1e-3, 100.0, 0,
               {.compute_ms = {3.0, 2.5},
                .waiting_ms = {1.0, 1.5},
                .bubble = {0.25, 0.5},
                .peak_tensor_bytes = {1024.0, 2048.0}},
               {.mfu = 0.125, .hfu = 0.25});
  writer.train(20, 0.5, 1e-3, 100.0);  // unknown MFU: not written
  const std::vector<std::string> lines = read_lines(writer.metrics_path());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            R"({"step":10,"loss":0.5,"lr":0.001,"samples_per_s":100.0,)"
            R"("compute_ms_per_rank":[3.0,2.5],"waiting_ms_per_rank":[1.0,1.5],)"
            R"("bubble_per_rank":[0.25,0.5],"bubble":0.375,)"
            R"("peak_tensor_bytes_per_rank":[1024.0,2048.0],"mfu":0.125,"hfu":0.25,)"
            R"("compute_ms_per_stage":[3.0,2.5],"waiting_ms_per_stage":[1.0,1.5],)"
            R"("bubble_per_stage":[0.25,0.5],"peak_tensor_bytes_per_stage":[1024.0,2048.0]})");
  EXPECT_EQ(lines[1], R"({"step":20,"loss":0.5,"lr":0.001,"samples_per_s":100.0})");
}

TEST(DeprecatedStageKeys, EveryPerRankListOfTheSummaryAlsoHasItsOldName) {
  nlohmann::json summary = {{"steps", 4},
                            {"stages", 2},
                            {"bubble_per_rank", {0.25, 0.5}},
                            {"peak_rss_bytes_per_rank", {10.0, 20.0}},
                            {"predicted_sent_bytes_per_step_per_rank", {64.0, 32.0}}};
  nlohmann::json expected = summary;
  expected["bubble_per_stage"] = {0.25, 0.5};
  expected["peak_rss_bytes_per_stage"] = {10.0, 20.0};
  expected["predicted_sent_bytes_per_step_per_stage"] = {64.0, 32.0};
  add_deprecated_stage_keys(summary);
  EXPECT_EQ(summary, expected);  // the new names kept, nothing else renamed
}

TEST(DeprecatedStageKeys, ListsTheSummaryOfARunHasAllGetTheirOldName) {
  nlohmann::ordered_json record;
  RankTimes{.compute_ms = {3.0},
            .waiting_ms = {1.0},
            .bubble = {0.25},
            .peak_tensor_bytes = {1024.0},
            .sent_bytes = {64.0}}
      .write_into(record);
  nlohmann::json summary(record);
  for (const char* key :
       {"peak_activation_bytes_per_rank", "predicted_kept_activation_bytes_per_rank",
        "peak_rss_bytes_per_rank", "predicted_peak_bytes_per_rank",
        "predicted_sent_bytes_per_step_per_rank"}) {
    summary[key] = {1.0};
  }
  add_deprecated_stage_keys(summary);
  int renamed_lists = 0;
  for (const auto& [key, value] : summary.items()) {
    const std::string rank = "_per_rank";
    if (!key.ends_with(rank)) continue;
    const std::string old = key.substr(0, key.size() - rank.size()) + "_per_stage";
    EXPECT_EQ(summary.value(old, nlohmann::json()), value) << old;
    ++renamed_lists;
  }
  EXPECT_EQ(renamed_lists, 10);
}

TEST(MetricsWriter, TracesReplaceTraceJson) {
  testing::TempDir dir;
  MetricsWriter writer(dir.file("run"));
  writer.write_trace({{"traceEvents", nlohmann::json::array()}});
  writer.write_trace({{"traceEvents", nlohmann::json::array({1})}});
  EXPECT_EQ(read_lines(writer.trace_path()), std::vector<std::string>{R"({"traceEvents":[1]})"});
}

TEST(MetricsWriter, ATraceThatCannotBeWrittenIsAWarningNotAnError) {
  testing::TempDir dir;
  MetricsWriter writer(dir.path().string());
  fs::create_directory(writer.trace_path());  // the rename into place fails
  EXPECT_FALSE(writer.write_trace({{"traceEvents", nlohmann::json::array()}}));
  writer.train(1, 1.0, 0.1, 1.0);  // the run goes on
  EXPECT_EQ(read_lines(writer.metrics_path()).size(), 1u);
  EXPECT_TRUE(fs::is_empty(writer.trace_path()));
}

TEST(MetricsWriter, AFailedRecordGivesTheReasonAndLeavesNoTornLine) {
  testing::TempDir dir;
  MetricsWriter writer(dir.path().string());
  writer.train(1, 2.0, 0.1, 1.0);
  const auto whole = fs::file_size(writer.metrics_path());
  {
    const FileSizeLimit full(whole + 10);  // the next line fits only in part
    try {
      writer.train(2, 1.0, 0.1, 1.0);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), writer.metrics_path() + ": write failed: File too large");
    }
  }
  EXPECT_EQ(fs::file_size(writer.metrics_path()), whole);
  writer.train(2, 1.0, 0.1, 1.0);  // room again: the log goes on with whole lines
  EXPECT_EQ(read_lines(writer.metrics_path()).size(), 2u);
}

TEST(MetricsWriter, TokenizedTextEvaluationsCarryBitsPerByteAndPerplexity) {
  testing::TempDir dir;
  MetricsWriter writer(dir.file("run"));
  writer.eval(5, "val", 3.5, 0.25, std::nullopt, 1.5, 33.25);
  const std::vector<std::string> lines = read_lines(writer.metrics_path());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(
      lines[0],
      R"({"step":5,"split":"val","loss":3.5,"accuracy":0.25,"bits_per_byte":1.5,"perplexity":33.25})");
}

TEST(MetricsWriter, TranslationEvaluationsCarryBleuAndChrf) {
  testing::TempDir dir;
  MetricsWriter writer(dir.file("run"));
  writer.eval(5, "val", 3.5, 0.25, std::nullopt, std::nullopt, 33.25, 12.5, 40.25);
  const std::vector<std::string> lines = read_lines(writer.metrics_path());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(
      lines[0],
      R"({"step":5,"split":"val","loss":3.5,"accuracy":0.25,"perplexity":33.25,"bleu":12.5,"chrf":40.25})");
}

TEST(MetricsWriter, NonFiniteLossIsWrittenAsNull) {
  testing::TempDir dir;
  MetricsWriter writer(dir.path().string());
  writer.train(1, std::nan(""), 0.1, 1.0);
  EXPECT_TRUE(nlohmann::json::parse(read_lines(writer.metrics_path()).at(0))["loss"].is_null());
}

TEST(MetricsWriter, ANewWriterAppendsToTheExistingLog) {
  testing::TempDir dir;
  MetricsWriter(dir.path().string()).train(1, 2.0, 0.1, 1.0);
  MetricsWriter(dir.path().string()).train(2, 1.0, 0.1, 1.0);
  const std::vector<std::string> lines = read_lines(dir.file("metrics.jsonl"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(lines[1])["step"], 2);
}

TEST(MetricsWriter, SummaryIsReplacedWholeWithNoTemporaryLeft) {
  testing::TempDir dir;
  MetricsWriter writer(dir.file("run"));
  writer.write_summary({{"final_loss", 0.25}, {"steps", 100}});
  writer.write_summary({{"final_loss", 0.125}});
  std::ifstream in(writer.summary_path());
  EXPECT_EQ(nlohmann::json::parse(in), (nlohmann::json{{"final_loss", 0.125}}));
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir.file("run"))) {
    names.push_back(entry.path().filename());
  }
  EXPECT_EQ(names, std::vector<std::string>{"summary.json"});
}

TEST(MetricsWriter, RunDirectoryThatCannotBeCreatedThrows) {
  testing::TempDir dir;
  std::ofstream(dir.file("file")) << "x";
  MetricsWriter writer(dir.file("file/run"));
  EXPECT_THROW(writer.train(1, 1.0, 0.1, 1.0), Error);
  EXPECT_THROW(writer.write_summary({{"a", 1}}), Error);
}

TEST(MetricsWriter, KeepRecordsThroughDropsLaterStepsAndTornLines) {
  testing::TempDir dir;
  MetricsWriter writer(dir.path().string());
  for (int64_t step = 1; step <= 6; ++step) writer.train(step, 1.0, 0.1, 1.0);
  writer.eval(4, "test", 0.5, 0.75);
  writer.eval(6, "test", 0.5, 0.75);
  std::ofstream(writer.metrics_path(), std::ios::app) << R"({"step":7,"lo)";  // killed mid-line

  MetricsWriter resumed(dir.path().string());
  EXPECT_EQ(resumed.keep_records_through(4), 4);  // steps 5 and 6, eval 6, the torn line
  resumed.train(5, 2.0, 0.1, 1.0);
  std::vector<int64_t> steps;
  for (const std::string& line : read_lines(writer.metrics_path())) {
    steps.push_back(nlohmann::json::parse(line)["step"].get<int64_t>());
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 2, 3, 4, 4, 5}));
}

TEST(MetricsWriter, ARecoveryIsARecordAtItsResumedStepThatTheResumeKeepsAndCounts) {
  testing::TempDir dir;
  MetricsWriter writer(dir.path().string());
  for (int64_t step = 1; step <= 6; ++step) writer.train(step, 1.0 / step, 0.1, 1.0);
  EXPECT_EQ(writer.recoveries(), 0);
  // The job died after step 6; the relaunch resumes the checkpoint of step 4.
  MetricsWriter(dir.path().string()).recovery(4, {{"lost_hosts", {"h2"}}, {"steps_redone", 2}});
  EXPECT_EQ(read_lines(writer.metrics_path()).back(),
            R"({"step":4,"event":"recovery","lost_hosts":["h2"],"steps_redone":2})");
  EXPECT_DOUBLE_EQ(writer.last_train_loss(), 1.0 / 6);  // not the recovery's

  MetricsWriter resumed(dir.path().string());
  EXPECT_EQ(resumed.keep_records_through(4), 2);  // steps 5 and 6, redone
  EXPECT_EQ(resumed.recoveries(), 1);
  EXPECT_DOUBLE_EQ(resumed.last_train_loss(), 1.0 / 4);
  resumed.recovery(4, {});
  EXPECT_EQ(resumed.recoveries(), 2);
  EXPECT_EQ(resumed.widenings(), 0);
}

TEST(MetricsWriter, AWideningIsARecordAtItsResumedStepThatTheResumeKeepsAndCounts) {
  testing::TempDir dir;
  MetricsWriter writer(dir.path().string());
  for (int64_t step = 1; step <= 5; ++step) writer.train(step, 1.0 / step, 0.1, 1.0);
  // The supervisor stopped the job at step 5 with a checkpoint; the wider relaunch resumes it.
  MetricsWriter(dir.path().string()).widening(5, {{"returned_hosts", {"h2"}}, {"steps_redone", 0}});
  EXPECT_EQ(read_lines(writer.metrics_path()).back(),
            R"({"step":5,"event":"widening","returned_hosts":["h2"],"steps_redone":0})");
  EXPECT_DOUBLE_EQ(writer.last_train_loss(), 1.0 / 5);  // not the widening's

  MetricsWriter resumed(dir.path().string());
  EXPECT_EQ(resumed.keep_records_through(5), 0);
  EXPECT_EQ(resumed.widenings(), 1);
  EXPECT_EQ(resumed.recoveries(), 0);
}

TEST(MetricsWriter, KeepRecordsThroughLeavesAnUntouchedLogAlone) {
  testing::TempDir dir;
  MetricsWriter writer(dir.path().string());
  writer.train(1, 1.0, 0.1, 1.0);
  const auto before = fs::last_write_time(writer.metrics_path());
  EXPECT_EQ(MetricsWriter(dir.path().string()).keep_records_through(1), 0);
  EXPECT_EQ(fs::last_write_time(writer.metrics_path()), before);
  EXPECT_EQ(read_lines(writer.metrics_path()).size(), 1u);
}

TEST(MetricsWriter, KeepRecordsThroughWithoutALogCreatesNothing) {
  testing::TempDir dir;
  EXPECT_EQ(MetricsWriter(dir.file("run")).keep_records_through(0), 0);
  EXPECT_FALSE(fs::exists(dir.file("run")));
}

TEST(MetricsWriter, KeepRecordsThroughZeroEmptiesTheLog) {
  testing::TempDir dir;
  MetricsWriter writer(dir.path().string());
  writer.train(1, 1.0, 0.1, 1.0);
  writer.train(2, 1.0, 0.1, 1.0);
  EXPECT_EQ(writer.keep_records_through(0), 2);
  EXPECT_TRUE(read_lines(writer.metrics_path()).empty());
  writer.train(1, 1.0, 0.1, 1.0);  // appends again after the rewrite
  EXPECT_EQ(read_lines(writer.metrics_path()).size(), 1u);
}

}  // namespace
}  // namespace mpipe::log
