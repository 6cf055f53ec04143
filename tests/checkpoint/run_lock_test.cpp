// Tests for RunLock: one holder per run directory, its description, stale takeover, cleanup.
#include "checkpoint/run_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/error.h"
#include "support/temp_dir.h"

namespace mpipe::checkpoint {
namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string lock_error(const std::string& run_dir) {
  try {
    RunLock second(run_dir);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(RunLock, LockFileNamesThisProcessHostAndStartTime) {
  testing::TempDir dir;
  const RunLock lock(dir.file("run"));
  const auto holder = nlohmann::json::parse(read_text(RunLock::lock_path(dir.file("run"))));
  EXPECT_EQ(holder["pid"], ::getpid());
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  EXPECT_EQ(holder["host"], std::string(host));
  EXPECT_TRUE(std::regex_match(holder["since"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
}

TEST(RunLock, SecondLockOnTheSameDirectoryIsRefusedNamingTheHolder) {
  testing::TempDir dir;
  const std::string run = dir.file("run");
  const RunLock lock(run);
  const auto holder = nlohmann::json::parse(read_text(RunLock::lock_path(run)));
  EXPECT_EQ(lock_error(run),
            fmt::format("{}: in use by pid {} on host {} since {} (lock {}); wait for it or use "
                        "another --run-dir",
                        run, ::getpid(), holder["host"].get<std::string>(),
                        holder["since"].get<std::string>(), RunLock::lock_path(run)));
  EXPECT_TRUE(fs::exists(RunLock::lock_path(run)));  // the refused one removes nothing
}

TEST(RunLock, HolderThatHasNotWrittenItselfYetIsAnotherJob) {
  testing::TempDir dir;
  const std::string run = dir.file("run");
  const RunLock lock(run);
  std::ofstream(RunLock::lock_path(run), std::ios::trunc).close();
  EXPECT_EQ(lock_error(run), fmt::format("{}: in use by another job (lock {}); wait for it or use "
                                         "another --run-dir",
                                         run, RunLock::lock_path(run)));
}

TEST(RunLock, ReleasedLockCanBeTakenAgain) {
  testing::TempDir dir;
  { const RunLock first(dir.file("run")); }
  EXPECT_NO_THROW(RunLock second(dir.file("run")));
}

TEST(RunLock, StaleLockFileOfADeadHolderIsTakenOver) {
  testing::TempDir dir;
  const std::string run = dir.file("run");
  fs::create_directories(run);
  std::ofstream(RunLock::lock_path(run))
      << R"({"pid": 999999, "host": "gone", "since": "2026-01-01T00:00:00Z"})";
  const RunLock lock(run);  // nobody holds the flock: the holder died
  EXPECT_EQ(nlohmann::json::parse(read_text(RunLock::lock_path(run)))["pid"], ::getpid());
}

TEST(RunLock, ReleaseRemovesTheLockFileAndTheFoldersItCreatedIfEmpty) {
  testing::TempDir dir;
  { const RunLock lock(dir.file("runs/new/run")); }
  EXPECT_FALSE(fs::exists(dir.file("runs")));
  EXPECT_TRUE(fs::exists(dir.path()));
}

TEST(RunLock, ReleaseKeepsARunDirectoryWithAnythingInIt) {
  testing::TempDir dir;
  {
    const RunLock lock(dir.file("runs/run"));
    std::ofstream(dir.file("runs/run/metrics.jsonl")) << "{}\n";
  }
  EXPECT_TRUE(fs::exists(dir.file("runs/run/metrics.jsonl")));
  EXPECT_FALSE(fs::exists(dir.file("runs/run/.lock")));
}

TEST(RunLock, ReleaseKeepsADirectoryThatExistedBefore) {
  testing::TempDir dir;
  fs::create_directories(dir.file("run"));
  { const RunLock lock(dir.file("run")); }
  EXPECT_TRUE(fs::is_directory(dir.file("run")));
  EXPECT_TRUE(fs::is_empty(dir.file("run")));
}

TEST(RunLock, RunDirectoryThatCannotBeCreatedIsAnError) {
  testing::TempDir dir;
  std::ofstream(dir.file("file")) << "x";
  EXPECT_THROW(RunLock(dir.file("file/run")), Error);
}

}  // namespace
}  // namespace mpipe::checkpoint
