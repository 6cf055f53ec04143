// Tests for the TensorBoard event file: read back record by record (lengths and CRCs checked,
// Events parsed with the generated code), its scalars equal to metrics.jsonl's numbers, each
// record on disk as soon as it is written.
#include "log/tensorboard_writer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "file_size_limit.h"
#include "log/metrics_writer.h"
#include "support/temp_dir.h"
#include "support/tensorboard_events.h"

namespace mpipe::log {
namespace {

namespace fs = std::filesystem;

// Every record MetricsWriter writes: stage times, the MFU, a non-finite loss, evaluations.
void write_records(MetricsWriter& writer) {
  writer.train(10, 0.5, 1e-3, 1234.5, 0,
               {.compute_ms = {3.0, 2.5},
                .waiting_ms = {1.0, 1.5},
                .bubble = {0.25, 0.5},
                .peak_tensor_bytes = {1024.0, 3.0e9}},
               {.mfu = 0.125, .hfu = 0.1875});
  writer.eval(10, "test", 0.75, 0.875, 1.8);
  writer.train(20, std::nan(""), 1e-4, 99.0, 2);  // the loss is null: no scalar
  writer.eval(20, "test", 0.7, 0.9, std::nullopt, 1.25);
}

TEST(TensorBoardWriter, EventFileReadsBackWithGoodCrcsAndTheMetricsValues) {
  testing::TempDir dir;
  MetricsWriter writer(dir.file("run"), /*tensorboard=*/true);
  write_records(writer);
  const std::string path = writer.tensorboard_path();
  EXPECT_EQ(path, testing::event_file_in(dir.file("run")));
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  EXPECT_TRUE(fs::path(path).filename().string().starts_with("events.out.tfevents."));
  EXPECT_NE(path.find(fmt::format(".{}.{}.", host, ::getpid())), std::string::npos) << path;

  // Read while the writer is still open: each record is flushed as it is written, so a killed
  // run leaves whole records.
  const testing::EventFile file = testing::read_event_file(path);
  ASSERT_EQ(file.events.size(), 5u);
  EXPECT_EQ(testing::compare_with_metrics(file, writer.metrics_path()), std::vector<std::string>{});
  const tensorboard::Event& first = file.events[1];
  EXPECT_EQ(first.step(), 10);
  EXPECT_GT(first.wall_time(), 1.7e9);  // seconds since the epoch (after 2023)
  std::map<std::string, float> scalars;
  for (const auto& value : first.summary().value()) scalars[value.tag()] = value.simple_value();
  EXPECT_EQ(scalars.at("train/loss"), 0.5f);
  EXPECT_EQ(scalars.at("train/lr"), 1e-3f);
  EXPECT_EQ(scalars.at("train/samples_per_s"), 1234.5f);
  EXPECT_EQ(scalars.at("train/bubble"), 0.375f);
  EXPECT_EQ(scalars.at("train/bubble_per_rank/1"), 0.5f);
  EXPECT_EQ(scalars.at("train/peak_tensor_bytes_per_rank/1"), 3.0e9f);
  EXPECT_EQ(scalars.at("train/bubble_per_stage/1"), 0.5f);  // the deprecated name, for now
  EXPECT_EQ(scalars.at("train/mfu"), 0.125f);
  std::map<std::string, float> eval;
  for (const auto& value : file.events[2].summary().value())
    eval[value.tag()] = value.simple_value();
  EXPECT_EQ(eval, (std::map<std::string, float>{{"eval/test/loss", 0.75f},
                                                {"eval/test/accuracy", 0.875f},
                                                {"eval/test/bits_per_char", 1.8f}}));
  for (const auto& value : file.events[3].summary().value()) EXPECT_NE(value.tag(), "train/loss");
}

// A run resumed within the second its first part started (a short run is) writes a second event
// file, not into the first part's: the names were <seconds>.<host> and the two parts' were equal.
TEST(TensorBoardWriter, TwoWritersOfOneRunDirectoryWithinASecondWriteTwoFiles) {
  testing::TempDir dir;
  std::string first, second;
  {
    MetricsWriter writer(dir.file("run"), /*tensorboard=*/true);
    write_records(writer);
    first = writer.tensorboard_path();
  }
  MetricsWriter resumed(dir.file("run"), /*tensorboard=*/true);
  write_records(resumed);
  second = resumed.tensorboard_path();
  EXPECT_NE(first, second);
  EXPECT_EQ(testing::read_event_file(first).events.size(), 5u);
  EXPECT_EQ(testing::read_event_file(second).events.size(), 5u);
}

TEST(TensorBoardWriter, ADamagedRecordIsFound) {
  testing::TempDir dir;
  std::string path;
  {
    MetricsWriter writer(dir.file("run"), /*tensorboard=*/true);
    write_records(writer);
    path = writer.tensorboard_path();
  }
  const auto size = fs::file_size(path);
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(size) - 10);  // inside the last record's data
    file.put('\x7f');
  }
  EXPECT_EQ(testing::read_event_file(path).problems,
            std::vector<std::string>{"record 4: bad data CRC"});
  fs::resize_file(path, size - 3);  // a torn last record
  EXPECT_EQ(testing::read_event_file(path).problems,
            std::vector<std::string>{"record 4: torn data"});
}

// The lines of metrics.jsonl at `path`.
size_t count_lines(const std::string& path) {
  std::ifstream in(path);
  size_t lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  return lines;
}

TEST(TensorBoardWriter, AnEventFileThatCannotBeOpenedIsAWarningAndMetricsGoOn) {
  testing::TempDir dir;
  MetricsWriter writer(dir.file("run"), /*tensorboard=*/true);
  fs::create_directories(writer.tensorboard_path());  // a folder in its place
  write_records(writer);
  EXPECT_FALSE(writer.writes_tensorboard());
  EXPECT_EQ(count_lines(writer.metrics_path()), 4u);
}

TEST(TensorBoardWriter, AFailedWriteStopsTheEventsAndLeavesWholeRecords) {
  testing::TempDir dir;
  MetricsWriter writer(dir.file("run"), /*tensorboard=*/true);
  writer.train(1, 0.5, 1e-3, 100.0);
  const auto events = fs::file_size(writer.tensorboard_path());
  const auto metrics = fs::file_size(writer.metrics_path());
  ASSERT_LT(2 * metrics, events + 10);  // metrics.jsonl's next line fits, the next event does not
  {
    const FileSizeLimit full(events + 10);
    writer.train(2, 0.5, 1e-3, 100.0);
  }
  writer.train(3, 0.5, 1e-3, 100.0);  // room again, but the events stopped at the failure
  EXPECT_FALSE(writer.writes_tensorboard());
  EXPECT_EQ(fs::file_size(writer.tensorboard_path()), events);
  const testing::EventFile file = testing::read_event_file(writer.tensorboard_path());
  EXPECT_EQ(file.problems, std::vector<std::string>{});
  EXPECT_EQ(file.events.size(), 2u);  // the version and step 1
  EXPECT_EQ(count_lines(writer.metrics_path()), 3u);
}

TEST(TensorBoardWriter, NoEventFileWithoutTensorboard) {
  testing::TempDir dir;
  MetricsWriter writer(dir.file("run"));
  write_records(writer);
  EXPECT_EQ(writer.tensorboard_path(), "");
  EXPECT_EQ(testing::event_file_in(dir.file("run")), "");
}

}  // namespace
}  // namespace mpipe::log
