// Tests for status.json: its JSON form, the merge with the spool's folders, the status table and
// the daemon's StatusBoard.
#include "serve/status_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "core/error.h"
#include "core/host_clock.h"
#include "serve/spool.h"
#include "serve/status_board.h"
#include "support/temp_dir.h"

namespace mpipe::serve {
namespace {

namespace fs = std::filesystem;

ExperimentStatus experiment(const std::string& name, int64_t seq, ExperimentState state) {
  ExperimentStatus e;
  e.name = name;
  e.seq = seq;
  e.state = state;
  e.steps = 100;
  return e;
}

QueueEntry entry(const std::string& name) {
  return {.seq = 0,
          .name = name,
          .config = "/x/" + name + ".yaml",
          .yaml = "",
          .overrides = {},
          .steps = 50,
          .submitted = {}};
}

TEST(StatusFile, EveryStateHasANameThatParsesBack) {
  for (const auto state :
       {ExperimentState::kQueued, ExperimentState::kRunning, ExperimentState::kInterrupted,
        ExperimentState::kDone, ExperimentState::kFailed, ExperimentState::kCancelled}) {
    EXPECT_EQ(parse_state(state_name(state)), state);
  }
  EXPECT_EQ(state_name(ExperimentState::kInterrupted), "interrupted");
  EXPECT_THROW(parse_state("paused"), InputError);
  EXPECT_TRUE(has_ended(ExperimentState::kFailed));
  EXPECT_FALSE(has_ended(ExperimentState::kInterrupted));
}

TEST(StatusFile, WrittenFileReadsBackWithEveryField) {
  testing::TempDir dir;
  SpoolStatus status;
  status.daemon = DaemonStatus{.state = "serving",
                               .reason = "",
                               .pid = 12,
                               .host = "h",
                               .ranks = 4,
                               .since = "2026-01-01T00:00:00Z",
                               .updated = "2026-01-01T00:00:05Z"};
  ExperimentStatus running = experiment("a", 1, ExperimentState::kRunning);
  running.step = 40;
  running.loss = 0.25;
  running.samples_per_s = 1000;
  running.eta_s = 12;
  running.config = "/x/a.yaml";
  running.run_dir = "spool/runs/a";
  running.started = "2026-01-01T00:00:01Z";
  status.experiments.push_back(running);
  ExperimentStatus failed = experiment("b", 2, ExperimentState::kFailed);
  failed.error = "exp.yaml:3: train.steps: must be >= 1, got 0";
  failed.loss = std::numeric_limits<double>::quiet_NaN();  // a window without a finite step
  failed.lost_peer_resumes = 1;
  status.experiments.push_back(failed);
  write_status_file(dir.file("status.json"), status);

  const SpoolStatus read = read_status_file(dir.file("status.json"));
  ASSERT_TRUE(read.daemon);
  EXPECT_EQ(read.daemon->pid, 12);
  EXPECT_EQ(read.daemon->ranks, 4);
  ASSERT_EQ(read.experiments.size(), 2u);
  EXPECT_EQ(to_json(read), to_json(status));
  EXPECT_EQ(read.experiments[0].eta_s, 12);
  EXPECT_FALSE(read.experiments[1].loss);
  EXPECT_EQ(read.experiments[1].error, failed.error);
  EXPECT_EQ(read.experiments[1].lost_peer_resumes, 1);
}

TEST(StatusFile, MissingFileIsAnEmptyStatusAndADamagedOneIsNamed) {
  testing::TempDir dir;
  EXPECT_TRUE(read_status_file(dir.file("status.json")).experiments.empty());
  std::ofstream(dir.file("status.json")) << "{\"experiments\": [{\"name\": 1}]";
  try {
    read_status_file(dir.file("status.json"));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              dir.file("status.json") + ": not a status file: not valid JSON");
  }
  std::ofstream(dir.file("status.json")) << "{\"experiments\": [{\"name\": \"a\", \"seq\": 1, "
                                            "\"state\": \"paused\"}]}";
  EXPECT_THROW(read_status_file(dir.file("status.json")), InputError);
}

TEST(StatusFile, AFifoIsADamagedFileNotWaitedOn) {
  // Opening a FIFO for reading blocks until a writer comes: `mpipe status` and the daemon hung
  // (here: until ctest's timeout).
  testing::TempDir dir;
  const std::string fifo = dir.file("status.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    read_status_file(fifo);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), fifo + ": not a status file: not a regular file");
  }
}

TEST(StatusFile, UpsertKeepsSubmissionOrder) {
  SpoolStatus status;
  status.upsert("c", 3);
  status.upsert("a", 1);
  status.upsert("b", 2).state = ExperimentState::kDone;
  status.upsert("b", 2);
  ASSERT_EQ(status.experiments.size(), 3u);
  EXPECT_EQ(status.experiments[0].name, "a");
  EXPECT_EQ(status.experiments[1].name, "b");
  EXPECT_EQ(status.experiments[1].state, ExperimentState::kDone);
  EXPECT_EQ(status.experiments[2].name, "c");
}

TEST(StatusFile, MergeAddsWhatOnlyTheSpoolKnows) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  spool.submit(entry("running"), "x");
  spool.submit(entry("waiting"), "x");
  spool.submit(entry("dropped"), "x");
  spool.take_next();
  spool.cancel("dropped");
  spool.cancel("running");
  SpoolStatus status;
  status.upsert("running", 1).state = ExperimentState::kRunning;
  merge_spool(status, spool);
  ASSERT_EQ(status.experiments.size(), 3u);
  EXPECT_EQ(status.experiments[0].state, ExperimentState::kRunning);  // the daemon stops it
  EXPECT_EQ(status.experiments[1].name, "waiting");
  EXPECT_EQ(status.experiments[1].state, ExperimentState::kQueued);
  EXPECT_EQ(status.experiments[1].steps, 50);
  EXPECT_EQ(status.experiments[1].config, "/x/waiting.yaml");
  EXPECT_EQ(status.experiments[2].name, "dropped");
  EXPECT_EQ(status.experiments[2].state, ExperimentState::kCancelled);
}

TEST(StatusFile, TableShowsProgressAndTheEtaOrTheError) {
  SpoolStatus status;
  ExperimentStatus running = experiment("long-name", 1, ExperimentState::kRunning);
  running.step = 40;
  running.loss = 0.25;
  running.samples_per_s = 1234.4;
  running.eta_s = 83;
  running.stages = 2;
  running.replicas = 4;
  running.micro_batches = 1;
  status.experiments.push_back(running);
  ExperimentStatus failed = experiment("b", 2, ExperimentState::kFailed);
  failed.error = "exp.yaml: bad";
  status.experiments.push_back(failed);
  status.experiments.push_back(experiment("c", 3, ExperimentState::kQueued));
  ExperimentStatus lost = experiment("d", 4, ExperimentState::kInterrupted);
  lost.error = "watchdog: lost";  // it ended the job; the next daemon resumes it
  status.experiments.push_back(lost);
  status.experiments.push_back(experiment("e", 5, ExperimentState::kInterrupted));
  ExperimentStatus slow = experiment("f", 6, ExperimentState::kRunning);
  slow.samples_per_s = 0.42;  // not 0
  status.experiments.push_back(slow);
  EXPECT_EQ(format_status_table(status),
            "daemon: none has served this spool yet\n"
            "NAME       STATE        LAYOUT    STEP    LOSS  SAMPLES/S  ETA / ERROR\n"
            "long-name  running         2x4  40/100  0.2500       1234  1m23s\n"
            "b          failed            -   0/100       -          -  exp.yaml: bad\n"
            "c          queued            -   0/100       -          -  -\n"
            "d          interrupted       -   0/100       -          -  watchdog: lost\n"
            "e          interrupted       -   0/100       -          -  -\n"
            "f          running           -   0/100       -       0.42  -\n");
  status.daemon = DaemonStatus{.state = "stopped",
                               .reason = "signal",
                               .pid = 7,
                               .host = "h",
                               .ranks = 2,
                               .since = "T0",
                               .updated = "T1"};
  EXPECT_TRUE(format_status_table(status).starts_with(
      "daemon: stopped (signal) at T1 (pid 7 on host h)\n"));
}

TEST(StatusFile, ADaemonWhoseProcessEndedWithoutStoppingIsGone) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);  // its pid now names no process
  SpoolStatus status;
  status.daemon = DaemonStatus{.state = "serving",
                               .reason = "",
                               .pid = child,
                               .host = this_host(),
                               .ranks = 2,
                               .since = "T0",
                               .updated = "T1"};
  SpoolStatus elsewhere = status;
  elsewhere.daemon->host = "another-host";
  SpoolStatus alive = status;
  alive.daemon->pid = this_pid();
  note_dead_daemon(status);
  note_dead_daemon(elsewhere);
  note_dead_daemon(alive);
  EXPECT_EQ(status.daemon->state, "gone");
  EXPECT_EQ(elsewhere.daemon->state, "serving");
  EXPECT_EQ(alive.daemon->state, "serving");
  EXPECT_TRUE(format_status_table(status).starts_with(fmt::format(
      "daemon: gone (pid {} on host {} ended without stopping; last update T1): start it again "
      "to resume\n",
      child, this_host())));
}

FailureNote note(const std::string& name, JobFailure failure) {
  return {.name = name, .failure = failure, .error = "rank 1: it ended", .rank = 1, .time = "T9"};
}

TEST(StatusFile, AFailureNoteFailsAMemoryLimitAndResumesAFirstLostPeer) {
  ExperimentStatus e = experiment("a", 1, ExperimentState::kRunning);
  e.eta_s = 5;
  apply_failure_note(e, note("a", JobFailure::kMemoryLimit));
  EXPECT_EQ(e.state, ExperimentState::kFailed);
  EXPECT_EQ(e.error, "rank 1: it ended");
  EXPECT_EQ(e.ended, "T9");
  EXPECT_FALSE(e.eta_s);

  ExperimentStatus lost = experiment("b", 2, ExperimentState::kRunning);
  apply_failure_note(lost, note("b", JobFailure::kLostPeer));
  EXPECT_EQ(lost.state, ExperimentState::kInterrupted);
  EXPECT_EQ(lost.error, "rank 1: it ended");
  EXPECT_EQ(lost.ended, "");
  EXPECT_EQ(lost.lost_peer_resumes, 0);  // counted by the daemon that resumes it

  lost.lost_peer_resumes = kLostPeerResumes;  // lost a peer again after being resumed
  ExperimentStatus supervised = lost;
  apply_failure_note(lost, note("b", JobFailure::kLostPeer));
  EXPECT_EQ(lost.state, ExperimentState::kFailed);
  EXPECT_EQ(lost.ended, "T9");
  // Relaunched by mpipe supervise (serve --resume-lost-peer): resumed again, however often.
  apply_failure_note(supervised, note("b", JobFailure::kLostPeer), true);
  EXPECT_EQ(supervised.state, ExperimentState::kInterrupted);
  EXPECT_EQ(supervised.ended, "");
  // A memory limit fails it all the same.
  apply_failure_note(supervised, note("b", JobFailure::kMemoryLimit), true);
  EXPECT_EQ(supervised.state, ExperimentState::kFailed);
}

TEST(StatusFile, StatusShowsTheFailureNoteOfTheActiveExperimentOnly) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  spool.submit(entry("a"), "x");
  spool.submit(entry("b"), "x");
  spool.write_failure_note(note("b", JobFailure::kMemoryLimit));  // not active: ignored
  SpoolStatus status;
  merge_spool(status, spool);
  note_job_failure(status, spool);  // nothing active
  EXPECT_EQ(status.find("b")->state, ExperimentState::kQueued);

  ASSERT_EQ(spool.take_next()->name, "a");
  spool.write_failure_note(note("a", JobFailure::kMemoryLimit));
  SpoolStatus fresh;  // status.json not written yet: the note alone
  note_job_failure(fresh, spool);
  ASSERT_TRUE(fresh.find("a"));
  EXPECT_EQ(fresh.find("a")->state, ExperimentState::kFailed);
  EXPECT_EQ(fresh.find("a")->error, "rank 1: it ended");
  EXPECT_EQ(fresh.find("a")->steps, 50);
  merge_spool(status, spool);
  note_job_failure(status, spool);
  EXPECT_EQ(status.find("a")->state, ExperimentState::kFailed);
  EXPECT_EQ(status.find("b")->state, ExperimentState::kQueued);
}

TEST(StatusBoard, AJobFailureIsWrittenAndALostPeerResumeCountedOnlyWhenResumed) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  const QueueEntry a = spool.submit(entry("a"), "x");
  const QueueEntry b = spool.submit(entry("b"), "x");
  StatusBoard board(spool, 2, /*min_interval_s=*/0.0);
  board.started(a);
  // Rank 0 itself lost a peer, before the job ends: interrupted with the line, nothing counted.
  EXPECT_EQ(board.job_failed("a", note("a", JobFailure::kLostPeer), false),
            ExperimentState::kInterrupted);
  SpoolStatus written = read_status_file(spool.status_path());
  EXPECT_EQ(written.find("a")->state, ExperimentState::kInterrupted);
  EXPECT_EQ(written.find("a")->error, "rank 1: it ended");
  EXPECT_EQ(written.find("a")->lost_peer_resumes, 0);
  // The next daemon resumes it once; when it loses a peer again, it has failed.
  EXPECT_EQ(board.job_failed("a", note("a", JobFailure::kLostPeer), true),
            ExperimentState::kInterrupted);
  EXPECT_EQ(read_status_file(spool.status_path()).find("a")->lost_peer_resumes, 1);
  board.started(a);
  EXPECT_EQ(read_status_file(spool.status_path()).find("a")->error, "");
  EXPECT_EQ(board.job_failed("a", note("a", JobFailure::kLostPeer), true),
            ExperimentState::kFailed);
  written = read_status_file(spool.status_path());
  EXPECT_EQ(written.find("a")->state, ExperimentState::kFailed);
  EXPECT_EQ(written.find("a")->lost_peer_resumes, 1);
  // A memory limit fails at once.
  board.started(b);
  EXPECT_EQ(board.job_failed("b", note("b", JobFailure::kMemoryLimit), false),
            ExperimentState::kFailed);
  EXPECT_EQ(read_status_file(spool.status_path()).find("b")->state, ExperimentState::kFailed);
}

TEST(StatusBoard, ARunningExperimentOfADeadDaemonBecomesInterrupted) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  spool.create();
  SpoolStatus before;
  before.upsert("a", 1).state = ExperimentState::kRunning;
  write_status_file(spool.status_path(), before);
  const StatusBoard board(spool, 2);
  EXPECT_EQ(board.status().experiments.at(0).state, ExperimentState::kInterrupted);
  const SpoolStatus written = read_status_file(spool.status_path());
  EXPECT_EQ(written.experiments.at(0).state, ExperimentState::kInterrupted);
  EXPECT_EQ(written.daemon->state, "serving");
  EXPECT_EQ(written.daemon->ranks, 2);
}

TEST(StatusFile, StatusIsShownWhateverTheSpoolHolds) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  spool.submit(entry("a"), "x");
  std::ofstream(spool.status_path()) << "\x01garbage";
  std::ofstream(dir.file("spool/queue/000007-junk.json")) << "{}";
  fs::create_directories(spool.run_dir("a"));
  std::vector<std::string> problems;
  SpoolStatus status = spool_status_for_display(spool, problems);
  ASSERT_EQ(problems.size(), 1U);
  EXPECT_EQ(problems[0], spool.status_path() +
                             ": not a status file: not valid JSON; showing what the spool's "
                             "folders hold");
  ASSERT_EQ(status.experiments.size(), 2U);
  EXPECT_EQ(status.experiments[0].name, "a");
  EXPECT_EQ(status.experiments[0].state, ExperimentState::kQueued);
  EXPECT_EQ(status.experiments[1].name, "000007-junk.json");
  EXPECT_EQ(status.experiments[1].seq, 7);
  EXPECT_EQ(status.experiments[1].state, ExperimentState::kFailed);
  EXPECT_TRUE(status.experiments[1].error.starts_with(dir.file("spool/queue/000007-junk.json") +
                                                      ": not a queue entry: "));
  spool.take_next();  // a is active, with a damaged failure note
  std::ofstream(spool.failure_note_path("a")) << "garbage";
  problems.clear();
  status = spool_status_for_display(spool, problems);
  ASSERT_EQ(problems.size(), 2U);
  EXPECT_TRUE(problems[1].starts_with(spool.failure_note_path("a") + ": not a failure note: "));
}

TEST(StatusBoard, ADamagedStatusFileIsQuarantinedAndANewOneStarted) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  spool.submit(entry("a"), "x");
  std::ofstream(spool.status_path()) << "{}";
  const StatusBoard board(spool, 2);
  EXPECT_EQ(board.status().experiments.at(0).name, "a");
  EXPECT_EQ(read_status_file(spool.status_path()).experiments.at(0).name, "a");
  std::ifstream moved(dir.file("spool/quarantine/status.json"));
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(moved), {}), "{}");
}

TEST(StatusBoard, AQuarantinedEntryIsRecordedAsFailedAndALayoutAsPlanned) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  const QueueEntry a = spool.submit(entry("a"), "x");
  StatusBoard board(spool, 4);
  board.quarantined({.name = "000009-x.json", .seq = 9, .error = "bad; moved to q"});
  board.started(a);
  board.planned("a", 2, 2, 3);
  const SpoolStatus written = read_status_file(spool.status_path());
  ASSERT_EQ(written.experiments.size(), 2U);
  EXPECT_EQ(written.experiments[0].stages, 2);
  EXPECT_EQ(written.experiments[0].replicas, 2);
  EXPECT_EQ(written.experiments[0].micro_batches, 3);
  EXPECT_EQ(written.experiments[1].name, "000009-x.json");
  EXPECT_EQ(written.experiments[1].state, ExperimentState::kFailed);
  EXPECT_EQ(written.experiments[1].error, "bad; moved to q");
}

TEST(StatusBoard, RecordsAnExperimentFromStartToEnd) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  const QueueEntry a = spool.submit(entry("a"), "x");
  StatusBoard board(spool, 1, /*min_interval_s=*/0.0);
  EXPECT_EQ(read_status_file(spool.status_path()).experiments.at(0).state,
            ExperimentState::kQueued);
  board.started(a);
  board.progress("a", {.step = 10, .loss = 0.5, .lr = 0.1, .samples_per_s = 99, .elapsed_s = 1},
                 9.0);
  SpoolStatus written = read_status_file(spool.status_path());
  EXPECT_EQ(written.experiments.at(0).state, ExperimentState::kRunning);
  EXPECT_EQ(written.experiments.at(0).step, 10);
  EXPECT_EQ(written.experiments.at(0).eta_s, 9.0);
  board.ended("a", {.state = ExperimentState::kDone,
                    .step = 50,
                    .loss = 0.1,
                    .eval_loss = 0.2,
                    .eval_accuracy = 0.9});
  board.stopped("idle");
  written = read_status_file(spool.status_path());
  EXPECT_EQ(written.experiments.at(0).state, ExperimentState::kDone);
  EXPECT_EQ(written.experiments.at(0).step, 50);
  EXPECT_FALSE(written.experiments.at(0).eta_s);
  EXPECT_EQ(written.experiments.at(0).eval_accuracy, 0.9);
  EXPECT_FALSE(written.experiments.at(0).ended.empty());
  EXPECT_EQ(written.daemon->state, "stopped");
  EXPECT_EQ(written.daemon->reason, "idle");
}

TEST(StatusBoard, AFailedExperimentKeepsTheStepItReached) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  const QueueEntry a = spool.submit(entry("a"), "x");
  StatusBoard board(spool, 1, /*min_interval_s=*/0.0);
  board.started(a);
  board.progress("a", {.step = 10, .loss = 0.5, .lr = 0.1, .samples_per_s = 99, .elapsed_s = 1},
                 9.0);
  board.ended("a", {.state = ExperimentState::kFailed, .error = "step 12: the loss is NaN"});
  const SpoolStatus written = read_status_file(spool.status_path());
  EXPECT_EQ(written.experiments.at(0).state, ExperimentState::kFailed);
  EXPECT_EQ(written.experiments.at(0).step, 10);
}

TEST(StatusBoard, ProgressIsWrittenAtMostOncePerInterval) {
  testing::TempDir dir;
  const Spool spool(dir.file("spool"));
  const QueueEntry a = spool.submit(entry("a"), "x");
  StatusBoard board(spool, 1, /*min_interval_s=*/3600.0);
  board.started(a);
  board.progress("a", {.step = 10, .loss = 0.5, .lr = 0.1, .samples_per_s = 99, .elapsed_s = 1},
                 9.0);
  EXPECT_EQ(read_status_file(spool.status_path()).experiments.at(0).step, 0);
  EXPECT_EQ(board.status().experiments.at(0).step, 10);
}

}  // namespace
}  // namespace mpipe::serve
