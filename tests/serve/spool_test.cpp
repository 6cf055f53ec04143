// Tests for Spool: submission order, unique names, the active experiment, cancel requests.
#include "serve/spool.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "core/error.h"
#include "serve/status_file.h"
#include "support/temp_dir.h"

namespace mpipe::serve {
namespace {

namespace fs = std::filesystem;

QueueEntry entry(const std::string& name = "", const std::string& yaml = "train: {steps: 3}\n") {
  return {.seq = 0,
          .name = name,
          .config = "/x/exp.yaml",
          .yaml = yaml,
          .overrides = {"train.steps=3"},
          .steps = 3,
          .submitted = {}};
}

std::vector<std::string> names(const std::vector<QueueEntry>& entries) {
  std::vector<std::string> result;
  for (const auto& e : entries) result.push_back(e.name);
  return result;
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Spool, SubmitGivesIncreasingSequenceNumbersAndNamesFromTheConfigStem) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  const QueueEntry first = spool.submit(entry(), "mlp");
  const QueueEntry second = spool.submit(entry(), "mlp");
  const QueueEntry named = spool.submit(entry("mine"), "mlp");
  EXPECT_EQ(first.name, "mlp-1");
  EXPECT_EQ(second.name, "mlp-2");
  EXPECT_EQ(named.name, "mine");
  EXPECT_EQ(first.seq, 1);
  EXPECT_EQ(second.seq, 2);
  EXPECT_EQ(named.seq, 3);
  EXPECT_FALSE(first.submitted.empty());
  EXPECT_TRUE(fs::exists(dir.path() / "spool/queue/000001-mlp-1.json"));
  EXPECT_EQ(names(spool.queued()), (std::vector<std::string>{"mlp-1", "mlp-2", "mine"}));
}

TEST(Spool, AStemThatIsNoNameIsMadeOne) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  EXPECT_EQ(spool.submit(entry(), "_my exp/1").name, "my_exp_1-1");
  EXPECT_EQ(spool.submit(entry(), "...").name, "exp-1");
}

TEST(Spool, QueueEntriesKeepEverythingSubmitted) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  spool.submit(entry("a", "model: {}\n# text kept as is\n"), "x");
  const QueueEntry read = spool.queued().at(0);
  EXPECT_EQ(read.name, "a");
  EXPECT_EQ(read.config, "/x/exp.yaml");
  EXPECT_EQ(read.yaml, "model: {}\n# text kept as is\n");
  EXPECT_EQ(read.overrides, std::vector<std::string>{"train.steps=3"});
  EXPECT_EQ(read.steps, 3);
}

TEST(Spool, TakeNextMakesTheOldestActiveAndOffersItAgainUntilFinished) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  spool.submit(entry("a"), "x");
  spool.submit(entry("b"), "x");
  EXPECT_FALSE(spool.active());
  EXPECT_EQ(spool.take_next()->name, "a");
  EXPECT_EQ(spool.active()->name, "a");
  EXPECT_EQ(names(spool.queued()), std::vector<std::string>{"b"});
  EXPECT_EQ(spool.take_next()->name, "a");  // a stopped daemon's experiment comes first
  spool.finish_active();
  EXPECT_FALSE(spool.active());
  EXPECT_EQ(spool.take_next()->name, "b");
  spool.finish_active();
  EXPECT_FALSE(spool.take_next());
}

TEST(Spool, SequenceNumbersKeepGrowingAfterTheQueueEmpties) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  spool.submit(entry("a"), "x");
  spool.take_next();
  spool.finish_active();
  EXPECT_EQ(spool.submit(entry("b"), "x").seq, 2);
}

TEST(Spool, NamesAreUniqueOverQueuedActiveRunAndCancelledExperiments) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  const std::string d = dir.file("spool");
  spool.submit(entry("queued"), "x");
  EXPECT_EQ(error_of([&] { spool.submit(entry("queued"), "x"); }),
            d + ": an experiment named 'queued' exists already (pick another --name)");
  spool.take_next();
  EXPECT_NE(error_of([&] { spool.submit(entry("queued"), "x"); }), "(no error)");  // active now
  fs::create_directories(dir.path() / "spool/runs/ran");
  EXPECT_NE(error_of([&] { spool.submit(entry("ran"), "x"); }), "(no error)");
  spool.submit(entry("gone"), "x");
  spool.cancel("gone");
  EXPECT_NE(error_of([&] { spool.submit(entry("gone"), "x"); }), "(no error)");
  fs::create_directories(dir.path() / "spool/runs/x-1");
  EXPECT_EQ(spool.submit(entry(), "x").name, "x-2");  // the default skips taken names
}

TEST(Spool, NamesThatAreNotPlainFileNamesAreRefused) {
  const std::string rule =
      "must start with a letter or digit and hold only letters, digits, '.', '_' and '-' (at most "
      "100 characters)";
  EXPECT_EQ(error_of([] { check_experiment_name("a/b"); }), "--name 'a/b': " + rule);
  EXPECT_EQ(error_of([] { check_experiment_name(".hidden"); }), "--name '.hidden': " + rule);
  EXPECT_EQ(error_of([] { check_experiment_name(""); }), "--name '': " + rule);
  EXPECT_NE(error_of([] { check_experiment_name(std::string(101, 'a')); }), "(no error)");
  EXPECT_EQ(error_of([] { check_experiment_name("mlp_v2.lr-0.1"); }), "(no error)");
}

TEST(Spool, CancelOfAQueuedExperimentRemovesItAndKeepsItsEntry) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  spool.submit(entry("a"), "x");
  spool.submit(entry("b"), "x");
  EXPECT_EQ(spool.cancel("b"), CancelResult::kRemovedFromQueue);
  EXPECT_EQ(names(spool.queued()), std::vector<std::string>{"a"});
  EXPECT_TRUE(spool.cancel_requested("b"));
  EXPECT_FALSE(spool.cancel_requested("a"));
  EXPECT_EQ(names(spool.cancelled()), std::vector<std::string>{"b"});
  EXPECT_EQ(spool.cancelled().at(0).seq, 2);
}

TEST(Spool, CancelOfTheActiveExperimentAsksForAStopAndLeavesItActive) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  spool.submit(entry("a"), "x");
  spool.take_next();
  EXPECT_EQ(spool.cancel("a"), CancelResult::kStopRequested);
  EXPECT_EQ(spool.active()->name, "a");
  EXPECT_TRUE(spool.cancel_requested("a"));
}

TEST(Spool, CancelOfAnUnknownOrEndedExperimentSaysSo) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  const std::string d = dir.file("spool");
  EXPECT_EQ(error_of([&] { spool.cancel("a"); }), d + ": not a spool (no queue/ folder)");
  spool.create();
  EXPECT_EQ(error_of([&] { spool.cancel("a"); }), d + ": no experiment named 'a'");
  fs::create_directories(dir.path() / "spool/runs/a");
  EXPECT_EQ(error_of([&] { spool.cancel("a"); }),
            d + ": 'a' is neither queued nor running (it has ended)");
}

TEST(Spool, ExperimentFileIsTheSubmittedTextUntilOneIsWritten) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  const QueueEntry a = spool.submit(entry("a", "train: {steps: 7}\n"), "x");
  EXPECT_EQ(spool.experiment_text(a), "train: {steps: 7}\n");
  const std::string path = spool.write_experiment_file("a", spool.experiment_text(a));
  EXPECT_EQ(path, dir.file("spool/runs/a/experiment.yaml"));
  std::ofstream(path) << "started with";
  EXPECT_EQ(spool.experiment_text(a), "started with");  // a resumed experiment keeps its file
  const auto modified = std::filesystem::last_write_time(path);
  spool.write_experiment_file("a", "started with");  // the same text: not written again
  EXPECT_EQ(std::filesystem::last_write_time(path), modified);
  spool.write_experiment_file("a", "broadcast text");  // another rank's own folder
  std::ifstream in(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "broadcast text");
}

// An entry file's text, as Spool::submit writes it.
std::string entry_text(int64_t seq, const std::string& name) {
  return fmt::format(
      R"({{"seq": {}, "name": "{}", "config": "c", "yaml": "", "overrides": [], "steps": 1, )"
      R"("submitted": "T"}})",
      seq, name);
}

TEST(Spool, DamagedEntriesAreLeftOutAndListedWithWhyEach) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  spool.submit(entry("good"), "x");
  const std::string queue = dir.file("spool/queue/");
  std::ofstream(queue + "000002-junk.json") << "\x01garbage";
  std::ofstream(queue + "000003-empty.json") << "{}";
  fs::create_directories(queue + "000004-folder.json");
  std::ofstream(queue + "000005-a.json") << entry_text(5, "b");
  std::ofstream(queue + "000006-escape.json") << entry_text(6, "../escape");
  std::ofstream(queue + "notes.txt") << entry_text(7, "notes");
  std::ofstream(queue + "000008-x.json.tmp-12") << "being written";
  std::ofstream(queue + ".hidden") << "an editor's";
  EXPECT_EQ(names(spool.queued()), std::vector<std::string>{"good"});
  EXPECT_EQ(spool.take_next()->name, "good");
  const std::vector<DamagedEntry> damaged = spool.damaged_entries();
  ASSERT_EQ(damaged.size(), 6U);
  EXPECT_EQ(damaged[0].path, queue + "000002-junk.json");
  EXPECT_EQ(damaged[0].seq, 2);
  EXPECT_TRUE(damaged[0].error.starts_with(queue + "000002-junk.json: not a queue entry: "))
      << damaged[0].error;
  EXPECT_TRUE(damaged[1].error.starts_with(queue + "000003-empty.json: not a queue entry: "))
      << damaged[1].error;
  EXPECT_EQ(damaged[2].error, queue + "000004-folder.json: not a queue entry: not a regular file");
  EXPECT_EQ(damaged[3].error, queue +
                                  "000005-a.json: not a queue entry: it holds #5 'b', whose "
                                  "file name is 000005-b.json");
  EXPECT_EQ(damaged[4].error,
            queue +
                "000006-escape.json: not a queue entry: its name '../escape' is not an "
                "experiment name");
  EXPECT_EQ(damaged[5].error, queue +
                                  "notes.txt: not a queue entry: it holds #7 'notes', whose "
                                  "file name is 000007-notes.json");
  EXPECT_EQ(damaged[5].seq, 0);
}

TEST(Spool, QuarantineMovesDamagedEntriesAsideAndTheQueueGoesOn) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  spool.create();
  std::ofstream(dir.file("spool/queue/000001-junk.json")) << "garbage";
  std::ofstream(dir.file("spool/active/000002-a.json")) << entry_text(2, "b");
  fs::create_directories(dir.file("spool/quarantine/000001-junk.json"));  // taken
  spool.submit(entry("next"), "x");
  const std::vector<QuarantinedEntry> moved = spool.quarantine_damaged_entries();
  ASSERT_EQ(moved.size(), 2U);
  EXPECT_EQ(moved[0].name, "000001-junk.json.2");
  EXPECT_EQ(moved[0].seq, 1);
  EXPECT_TRUE(moved[0].error.starts_with(dir.file("spool/queue/000001-junk.json") +
                                         ": not a queue entry: "));
  EXPECT_TRUE(
      moved[0].error.ends_with("; moved to " + dir.file("spool/quarantine/000001-junk.json.2")));
  EXPECT_EQ(moved[1].name, "000002-a.json");
  EXPECT_TRUE(fs::is_regular_file(dir.file("spool/quarantine/000002-a.json")));
  EXPECT_TRUE(spool.damaged_entries().empty());
  EXPECT_FALSE(fs::exists(dir.file("spool/active/000002-a.json")));
  EXPECT_EQ(spool.take_next()->name, "next");
  EXPECT_TRUE(spool.quarantine_damaged_entries().empty());
}

TEST(Spool, AnUnreadableCancelRequestStillCancels) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  spool.submit(entry("a"), "x");
  spool.submit(entry("b"), "x");
  spool.cancel("a");
  std::ofstream(dir.file("spool/cancel/b")) << "garbage";
  EXPECT_EQ(names(spool.cancelled()), std::vector<std::string>{"a"});
  EXPECT_TRUE(spool.cancel_requested("b"));
}

TEST(Spool, AGarbageSequenceFileDoesNotRestartTheNumbering) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  spool.submit(entry("a"), "x");
  spool.submit(entry("b"), "x");
  spool.cancel("b");
  spool.take_next();
  spool.finish_active();  // a ran: only status.json knows its number
  SpoolStatus status;
  status.upsert("a", 1);
  status.upsert("old", 7);
  write_status_file(spool.status_path(), status);
  std::ofstream(dir.file("spool/.sequence")) << "garbage\n";
  EXPECT_EQ(spool.submit(entry("c"), "x").seq, 8);
  std::ofstream(dir.file("spool/.sequence")) << "12abc\n";
  EXPECT_EQ(spool.submit(entry("d"), "x").seq, 9);
  fs::remove(spool.status_path());
  std::ofstream(dir.file("spool/.sequence")) << "";
  EXPECT_EQ(spool.submit(entry("e"), "x").seq, 10);  // c and d are queued
  std::ofstream(dir.file("spool/.sequence")) << "20\n";
  EXPECT_EQ(spool.submit(entry("f"), "x").seq, 21);
}

TEST(Spool, AFailureNoteIsWrittenReadAndRemoved) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  EXPECT_EQ(spool.failure_note_path("a"), dir.file("spool") + "/runs/a/failure.json");
  EXPECT_FALSE(spool.read_failure_note("a"));
  const FailureNote note{.name = "a",
                         .failure = JobFailure::kLostPeer,
                         .error = "watchdog: step 3: waited 30.0 s",
                         .rank = 2,
                         .time = "2026-01-01T00:00:00Z"};
  spool.write_failure_note(note);  // creates runs/a/ (a rank on a node-local spool)
  const std::optional<FailureNote> read = spool.read_failure_note("a");
  ASSERT_TRUE(read);
  EXPECT_EQ(read->name, "a");
  EXPECT_EQ(read->failure, JobFailure::kLostPeer);
  EXPECT_EQ(read->error, note.error);
  EXPECT_EQ(read->rank, 2);
  EXPECT_EQ(read->time, note.time);
  EXPECT_FALSE(spool.read_failure_note("b"));
  spool.remove_failure_note("a");
  EXPECT_FALSE(spool.read_failure_note("a"));
  spool.remove_failure_note("a");  // none is fine
  EXPECT_EQ(parse_job_failure(job_failure_name(JobFailure::kMemoryLimit)),
            JobFailure::kMemoryLimit);
  EXPECT_EQ(job_failure_name(JobFailure::kLostPeer), "lost_peer");
}

TEST(Spool, ADamagedFailureNoteIsNamed) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  fs::create_directories(spool.run_dir("a"));
  const auto write = [&](const std::string& text) {
    std::ofstream(spool.failure_note_path("a")) << text;
  };
  const std::string path = spool.failure_note_path("a");
  write(R"({"name": "a", "failure": "oom", "error": "e", "rank": 0, "time": "T"})");
  EXPECT_EQ(error_of([&] { spool.read_failure_note("a"); }),
            path + ": not a failure note: failure 'oom': unknown");
  write(R"({"name": "b", "failure": "lost_peer", "error": "e", "rank": 0, "time": "T"})");
  EXPECT_EQ(error_of([&] { spool.read_failure_note("a"); }),
            path + ": not a failure note: it is about 'b'");
  write(R"({"name": "a"})");
  EXPECT_TRUE(error_of([&] {
                spool.read_failure_note("a");
              }).starts_with(path + ": not a failure note: [json.exception"));
}

}  // namespace
}  // namespace mpipe::serve
