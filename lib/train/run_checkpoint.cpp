// Run checkpoints: non-finite guard, shard writes, peer copies, the agreed commit, and the gather
// and checks of a resume.
#include "train/run_checkpoint.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <filesystem>
#include <limits>
#include <span>

#include "checkpoint/shard_copies.h"
#include "comm/agree.h"
#include "comm/rank_placement.h"
#include "comm/watchdog.h"
#include "core/error.h"
#include "core/host_clock.h"
#include "core/test_stop.h"
#include "log/metrics_writer.h"
#include "optim/lr_schedule.h"
#include "train/checkpoint_model.h"
#include "train/file_transfer.h"
#include "train/gathered_shard.h"
#include "train/resumed_weight_grads.h"
#include "train/stage_tensors.h"

namespace mpipe::train {
namespace {

namespace fs = std::filesystem;

constexpr size_t kReportSize = 4;  // rank, stage, crc32, size: exact in doubles (sizes below 2^53)
constexpr const char* kOptimizerStepsKey = "optimizer_steps";  // in meta.json and every shard
constexpr const char* kScheduleStepsKey = "optimizer.schedule.total_steps";

checkpoint::Settings saved_settings(const nlohmann::json& meta, const std::string& path) {
  const nlohmann::json& saved = checkpoint::required_key(meta, path, "settings");
  check_input(saved.is_object(), "{}: settings: must be an object of strings", path);
  checkpoint::Settings settings;
  for (const auto& [key, value] : saved.items()) {
    check_input(value.is_string(), "{}: settings.{}: must be a string", path, key);
    settings[key] = value.get<std::string>();
  }
  return settings;
}

// A count among the saved settings; nullopt when it is missing or not a number.
std::optional<int64_t> saved_count(const checkpoint::Settings& saved, const std::string& key) {
  const auto found = saved.find(key);
  int64_t count = 0;
  if (found == saved.end()) return std::nullopt;
  const std::string& text = found->second;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return count;
}

int64_t optimizer_steps(const nlohmann::json& meta, const std::string& path) {
  const nlohmann::json& steps = checkpoint::required_key(meta, path, kOptimizerStepsKey);
  check_input(steps.is_number_integer() && steps.get<int64_t>() >= 0,
              "{}: {} must be an integer >= 0", path, kOptimizerStepsKey);
  return steps.get<int64_t>();
}

}  // namespace

std::optional<StoredSettings> newest_stored_settings(const std::string& run_dir) {
  std::error_code ec;
  const checkpoint::CheckpointStore store(run_dir, 1);
  if (!fs::is_directory(store.checkpoints_dir(), ec)) return std::nullopt;
  const std::optional<int64_t> step = store.latest_committed();
  if (!step) return std::nullopt;
  return StoredSettings{.step = *step,
                        .settings = saved_settings(store.read_meta(*step), store.meta_path(*step))};
}

void require_committed_checkpoint(const std::string& run_dir, const std::string& option) {
  std::error_code ec;
  const fs::path checkpoints = fs::path(run_dir) / "checkpoints";
  std::string found;
  if (!fs::exists(run_dir, ec)) {
    found = "the directory does not exist";
  } else if (!fs::is_directory(run_dir, ec)) {
    found = "it is not a directory";
  } else if (!fs::is_directory(checkpoints, ec)) {
    found = "it has no checkpoints/ folder";
  } else if (!checkpoint::CheckpointStore(run_dir, 1).latest_committed()) {
    found = "checkpoints/ holds no committed step";
  } else {
    return;
  }
  throw InputError(fmt::format("{}: {}: no committed checkpoint ({})", run_dir, option, found));
}

RunCheckpoints::RunCheckpoints(Trainer& trainer, const config::Experiment& experiment,
                               const RunOptions& options, const comm::Communicator& world)
    : trainer_(trainer),
      experiment_(experiment),
      options_(options),
      world_(world),
      store_(options.run_dir, experiment.checkpoint.keep) {}

checkpoint::Settings RunCheckpoints::settings() const {
  checkpoint::Settings settings = options_.settings;
  settings[checkpoint::kGlobalMicroBatchesKey] = std::to_string(
      int64_t{experiment_.pipeline.micro_batches} * trainer_.topology().num_replicas);
  record_weight_grads(trainer_.pipeline_plan().weight_grads, trainer_.pipeline_plan().weight_group,
                      settings);
  return settings;
}

RunCheckpoints::~RunCheckpoints() = default;

void RunCheckpoints::save(int64_t steps_done, bool overlap) {
  wait_for_copies();  // at most one checkpoint's copies in flight
  const comm::WatchScope watch(world_, "checkpoint", comm::WaitPhase::kLong);
  const comm::Topology& topo = trainer_.topology();
  const bool writer = topo.replica == 0;  // the other replicas hold the same stages
  const std::vector<ChunkState> chunks = trainer_.chunk_states();
  // Views of the live state per chunk (a shard per global stage), written as it is; sharded
  // optimizer state (optimizer.shard_across_replicas) is gathered whole one tensor at a time as
  // it is written (train/gathered_shard.h) into the chunk's gradient buffer (free between steps:
  // the next step zeroes or overwrites it), so files hold whole tensors whatever the layout.
  std::vector<std::vector<HeldTensor>> tensors;
  for (const ChunkState& chunk : chunks) {
    tensors.push_back(
        held_stage_state(*chunk.stage, *chunk.optimizer, trainer_.tied(), trainer_.sharded()));
  }
  // The writer checks what it holds, every replica its parts of the sharded state.
  comm::agree(world_, [&] {
    for (size_t chunk = 0; chunk < tensors.size(); ++chunk) {
      std::vector<checkpoint::TensorView> checked;
      for (const HeldTensor& tensor : tensors[chunk]) {
        if (writer || tensor.sharded) checked.push_back(tensor.view);
      }
      if (auto name = checkpoint::first_non_finite(checked)) {
        throw Error(
            fmt::format("step {}: not saving a checkpoint: non-finite value in {} (stage {})",
                        steps_done, *name, trainer_.global_stage(static_cast<int>(chunk))));
      }
    }
  });
  const int64_t steps_taken = chunks.front().optimizer->steps_taken();
  std::vector<checkpoint::ShardRecord> mine;
  auto pending = std::make_unique<PendingCommit>();
  pending->step = steps_done;
  pending->committer = world_.rank() == 0;
  if (writer) {
    for (int chunk = 0; chunk < trainer_.num_chunks(); ++chunk) {
      pending->held.push_back(trainer_.global_stage(chunk));
    }
  }
  try {
    comm::agree(world_, [&] {
      // Every chunk's, even after a failure: the other replicas send their parts of each.
      std::exception_ptr failure;
      for (size_t chunk = 0; chunk < tensors.size(); ++chunk) {
        try {
          if (auto record = write_gathered_shard(
                  store_, steps_done, trainer_.global_stage(static_cast<int>(chunk)),
                  tensors[chunk], {{kOptimizerStepsKey, std::to_string(steps_taken)}},
                  chunks[chunk].stage->params().grads(), trainer_.shard_order())) {
            mine.push_back(*record);
          }
        } catch (...) {
          if (!failure) failure = std::current_exception();
        }
      }
      if (failure) std::rethrow_exception(failure);
    });
    pending->reported = gather_shard_records(mine, steps_done);
    for (const ReportedShard& shard : pending->reported) pending->shards.push_back(shard.record);
    std::vector<checkpoint::FileTransfer> copies;
    if (experiment_.checkpoint.peer_copy) {
      std::vector<checkpoint::WrittenShard> written;
      std::vector<int> holders;
      for (const ReportedShard& shard : pending->reported) {
        written.push_back({.rank = shard.rank, .stage = shard.record.stage});
        holders.push_back(shard.rank);
      }
      copies = checkpoint::plan_shard_copies(hosts(), written);
      for (const checkpoint::FileTransfer& copy : copies) holders.push_back(copy.to);
      const std::vector<int> committers = checkpoint::committing_ranks(hosts(), holders);
      pending->committer =
          std::find(committers.begin(), committers.end(), world_.rank()) != committers.end();
    }
    // Rank 0's manifest, the same bytes on every host that commits.
    if (world_.rank() == 0) {
      pending->meta = nlohmann::json{
          {"num_stages", topo.num_pipeline_ranks * trainer_.num_chunks()},
          {kOptimizerStepsKey, steps_taken},
          {"seed", experiment_.train.seed},
          {"config", experiment_.source},
          {"settings", settings()},
          {"inputs", inputs_record(trainer_.plan().inputs)},
          {"time",
           utc_now()}}.dump();
    }
    if (experiment_.checkpoint.peer_copy) world_.broadcast(pending->meta, 0);
    if (!copies.empty()) {
      if (overlap && can_overlap()) {
        if (!copy_comm_) {
          copy_comm_.emplace(world_.split(0, world_.rank(), "the peer copies"));
          copy_comm_->set_watchdog(nullptr);  // the copy thread bounds its own waits
        }
        // The deadline of a wait of this checkpoint (its activity's, as the watchdog gives it).
        const comm::Watchdog* watchdog = world_.watchdog();
        const double timeout_s =
            watchdog ? watchdog->policy().timeout(comm::WaitPhase::kLong, "checkpoint")
                     : std::numeric_limits<double>::infinity();
        PendingCommit& travelling = *pending;
        pending->copy = std::make_unique<BackgroundCopy>(
            [this, &travelling, copies](const TransferWait& wait) {
              copy_shards(*copy_comm_, travelling, copies, wait);
            },
            timeout_s);
        pending_ = std::move(pending);
        return;
      }
      comm::agree(world_, [&] { copy_shards(world_, *pending, copies, {}); });
    }
  } catch (const AgreedError&) {
    for (int stage : pending->held) store_.discard_shard(steps_done, stage);  // not committed
    throw;
  }
  commit(*pending);
}

void RunCheckpoints::poll_copies() {
  if (!pending_) return;
  if (!world_.all_true(pending_->copy->done())) return;
  // The commit's waits (a committer's fsync) get a checkpoint's deadline, not the step's.
  const comm::WatchScope watch(world_, "checkpoint", comm::WaitPhase::kLong);
  commit_pending();
}

void RunCheckpoints::wait_for_copies() {
  if (!pending_) return;
  const comm::WatchScope watch(world_, "checkpoint", comm::WaitPhase::kLong);
  commit_pending();
}

void RunCheckpoints::commit_pending() {
  const std::unique_ptr<PendingCommit> pending = std::move(pending_);
  try {
    comm::agree(world_, [&] { pending->copy->finish(); });
  } catch (const AgreedError&) {
    for (int stage : pending->held) store_.discard_shard(pending->step, stage);
    throw;
  }
  commit(*pending);
}

void RunCheckpoints::commit(PendingCommit& pending) {
  const int64_t step = pending.step;
  bool wrote_commit = false;
  try {
    comm::agree(world_, [&] {
      if (!pending.committer) return;
      wrote_commit = true;
      store_.write_commit(step, nlohmann::json::parse(pending.meta), pending.shards);
    });
  } catch (const AgreedError&) {
    if (wrote_commit) store_.uncommit(step);  // another host could not commit it
    for (int stage : pending.held) store_.discard_shard(step, stage);  // the step is not committed
    throw;
  }
  // Only after every host's commit is in place: the newest checkpoint.keep stay on this disk. The
  // other ranks drop their files of the same old steps (a no-op where they share a committer's
  // disk).
  if (pending.committer) store_.prune(step);
  committed_.emplace_back(step, pending.held);
  while (committed_.size() > static_cast<size_t>(experiment_.checkpoint.keep)) {
    if (world_.rank() != 0) {
      for (int stage : committed_.front().second) {
        store_.discard_shard(committed_.front().first, stage);
      }
    }
    committed_.pop_front();
  }
}

bool RunCheckpoints::can_overlap() {
  if (!can_overlap_) {
    const comm::ThreadLevel level = comm::thread_level();
    can_overlap_ = level == comm::ThreadLevel::kMultiple;
    if (!*can_overlap_ && world_.rank() == 0) {
      spdlog::info(
          "checkpoint.peer_copy: MPI provides {}, not MPI_THREAD_MULTIPLE, so the peer copies are "
          "made between two steps instead of beside the steps that follow",
          comm::to_string(level));
    }
  }
  return *can_overlap_;
}

std::vector<RunCheckpoints::ReportedShard> RunCheckpoints::gather_shard_records(
    const std::vector<checkpoint::ShardRecord>& mine, int64_t step) const {
  std::vector<double> report;
  for (const checkpoint::ShardRecord& shard : mine) {
    report.insert(
        report.end(),
        {static_cast<double>(world_.rank()), static_cast<double>(shard.stage),
         static_cast<double>(shard.digest.crc32), static_cast<double>(shard.digest.size)});
  }
  const std::vector<double> all = world_.allgatherv(report);
  std::vector<ReportedShard> records;
  for (size_t i = 0; i + kReportSize <= all.size(); i += kReportSize) {
    records.push_back({.rank = static_cast<int>(all[i]),
                       .record = {.stage = static_cast<int>(all[i + 1]),
                                  .step = step,
                                  .digest = {.size = static_cast<uint64_t>(all[i + 3]),
                                             .crc32 = static_cast<uint32_t>(all[i + 2])}}});
  }
  return records;
}

void RunCheckpoints::copy_shards(const comm::Communicator& comm, PendingCommit& pending,
                                 const std::vector<checkpoint::FileTransfer>& copies,
                                 const TransferWait& wait) {
  const int me = comm.rank();
  const int64_t step = pending.step;
  const int tag = trainer_.tags().tensor(0);
  test_stop_at(TestMoment::kPeerCopy, step);
  // Every copy in the same order on every rank, each a send and a receive between two ranks:
  // the first unfinished one always has both ranks at it. A failed one still moves every
  // block, so no rank is left waiting; the first failure is thrown after the last.
  std::exception_ptr failure;
  for (const checkpoint::FileTransfer& copy : copies) {
    if (copy.from != me && copy.to != me) continue;
    const std::string path = store_.shard_path(step, copy.file);
    try {
      if (copy.from == me) {
        send_file(comm, path, copy.to, tag, wait);
        continue;
      }
      pending.held.push_back(copy.file);
      std::exception_ptr no_folder;
      try {
        store_.prepare_step(step);
      } catch (...) {
        no_folder = std::current_exception();
      }
      const checkpoint::FileDigest digest = receive_file(comm, path, copy.from, tag, wait);
      if (no_folder) std::rethrow_exception(no_folder);
      const auto expected =
          std::find_if(pending.reported.begin(), pending.reported.end(), [&](const auto& shard) {
            return shard.rank == copy.from && shard.record.stage == copy.file;
          });
      check(digest == expected->record.digest,
            "{}: the copy from rank {} (host {}) does not match its shard: {} bytes, crc32 {}; "
            "the shard has {} bytes, crc32 {}",
            path, copy.from, hosts()[static_cast<size_t>(copy.from)], digest.size,
            checkpoint::crc32_hex(digest.crc32), expected->record.digest.size,
            checkpoint::crc32_hex(expected->record.digest.crc32));
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

const std::vector<std::string>& RunCheckpoints::hosts() const {
  if (hosts_.empty()) {
    for (const comm::RankPlacement& placement :
         comm::exchange_placements(world_, comm::own_placement())) {
      hosts_.push_back(placement.host);
    }
  }
  return hosts_;
}

void RunCheckpoints::gather(int64_t step, const std::vector<int>& mine, int num_files,
                            const std::function<std::string(int)>& path) {
  // Each rank's list after its length: [n, file...].
  std::vector<double> report = {static_cast<double>(mine.size())};
  report.insert(report.end(), mine.begin(), mine.end());
  const std::vector<double> all = world_.allgatherv(report);
  std::vector<std::vector<int>> held;
  for (size_t i = 0; i < all.size(); i += static_cast<size_t>(all[i]) + 1) {
    std::vector<int>& files = held.emplace_back();
    for (size_t j = 1; j <= static_cast<size_t>(all[i]); ++j) {
      files.push_back(static_cast<int>(all[i + j]));
    }
  }
  const checkpoint::GatherPlan plan = checkpoint::plan_gather(held, num_files);
  const int me = world_.rank();
  const int tag = trainer_.tags().tensor(0);
  comm::agree(world_, [&] {
    if (!plan.unheld.empty()) {
      std::vector<std::string> asked;
      for (const std::string& host : hosts()) {
        if (std::find(asked.begin(), asked.end(), host) == asked.end()) asked.push_back(host);
      }
      throw InputError(fmt::format(
          "{}: no host of this job holds it (asked {}), so step {} cannot be resumed here",
          path(plan.unheld.front()), fmt::join(asked, ", "), step));
    }
    std::exception_ptr failure;  // as in copy_shards: every transfer moves every block
    for (const checkpoint::FileTransfer& transfer : plan.transfers) {
      if (transfer.from != me && transfer.to != me) continue;
      try {
        if (transfer.from == me) {
          send_file(world_, path(transfer.file), transfer.to, tag);
          continue;
        }
        std::error_code ec;
        fs::create_directories(store_.step_dir(step), ec);
        receive_file(world_, path(transfer.file), transfer.from, tag);
        check(!ec, "{}: cannot create checkpoint folder: {}", store_.step_dir(step), ec.message());
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
    }
    if (failure) std::rethrow_exception(failure);
  });
}

ResumePoint RunCheckpoints::resume() {
  if (options_.resume == ResumeMode::kNever) return {};
  const bool is_root = world_.rank() == 0;
  const bool peer_copy = experiment_.checkpoint.peer_copy;
  // Rank 0 picks the step, so every rank loads the same one; with peer copies, the newest any
  // rank committed (rank 0's disk may have missed it: a host lost while the step was committed).
  double latest = -1;
  comm::agree(world_, [&] {
    if (!is_root && !peer_copy) return;
    if (auto step = store_.latest_committed()) latest = static_cast<double>(*step);
  });
  if (peer_copy) {
    const std::vector<double> all = world_.allgatherv(std::span<const double>(&latest, 1));
    latest = *std::max_element(all.begin(), all.end());
  } else {
    world_.broadcast(std::span<double>(&latest, 1), 0);
  }
  comm::agree(world_, [&] {
    if (is_root && latest < 0 && options_.resume == ResumeMode::kRequired) {
      require_committed_checkpoint(options_.run_dir);
    }
  });
  if (latest < 0) {
    if (is_root) {
      spdlog::info("{}: no committed checkpoint; starting a new run from step 0", options_.run_dir);
    }
    drop_metrics_after(0);
    return {};
  }

  const auto step = static_cast<int64_t>(latest);
  const nlohmann::json meta = gathered_meta(step, /*resuming=*/true);
  if (step >= experiment_.train.steps) return {.step = step, .finished = true};
  load(step, meta);
  drop_metrics_after(step);
  if (is_root) spdlog::info("resumed from step {} ({})", step, store_.step_dir(step));
  return {.step = step};
}

nlohmann::json RunCheckpoints::gathered_meta(int64_t step, bool resuming) {
  const bool peer_copy = experiment_.checkpoint.peer_copy;
  if (peer_copy) {  // meta.json first: it says which shards there are
    const bool has_meta = fs::is_regular_file(store_.meta_path(step));
    gather(step, has_meta ? std::vector<int>{0} : std::vector<int>{}, 1,
           [&](int) { return store_.meta_path(step); });
  }
  nlohmann::json meta;
  std::vector<int> intact;
  comm::agree(world_, [&] {
    meta = store_.read_meta(step);
    if (resuming) check_settings(meta, step);
    if (peer_copy) intact = store_.intact_shards(step, meta);
  });
  if (peer_copy) {
    gather(step, intact, static_cast<int>(meta["num_stages"].get<int64_t>()),
           [&](int stage) { return store_.shard_path(step, stage); });
  }
  return meta;
}

void RunCheckpoints::load(int64_t step) { load(step, gathered_meta(step, /*resuming=*/false)); }

void RunCheckpoints::load(int64_t step, const nlohmann::json& meta) {
  comm::agree(world_, [&] {
    const int64_t optimizer_steps_done = optimizer_steps(meta, store_.meta_path(step));
    std::vector<std::unique_ptr<optim::Optimizer>> whole = trainer_.whole_optimizers(false);
    try {
      load_rank_state(
          trainer_.chunk_states(whole),
          [&](const checkpoint::TensorDestination& into) { store_.read_into(step, into); },
          store_.step_dir(step), trainer_.tied());
    } catch (...) {
      trainer_.keep_shards(std::move(whole));
      throw;
    }
    trainer_.keep_shards(std::move(whole));
    for (int chunk = 0; chunk < trainer_.num_chunks(); ++chunk) {
      trainer_.optimizer(chunk).set_steps_taken(optimizer_steps_done);
    }
  });
}

void RunCheckpoints::check_settings(const nlohmann::json& meta, int64_t step) const {
  const bool is_root = world_.rank() == 0;
  const std::string path = store_.meta_path(step);
  const checkpoint::Settings saved = saved_settings(meta, path);
  const checkpoint::SettingChanges changes = checkpoint::compare_settings(saved, settings());
  check_input(changes.refused.empty(),
              "{}: cannot resume step {} with other settings: {} (a resumed run may change only "
              "train.steps, optimizer.schedule.total_steps, train.eval_*, log.*, checkpoint.* and "
              "the pipeline layout, keeping pipeline.micro_batches × data_parallel; start a new "
              "run with another --run-dir)",
              options_.run_dir, step, fmt::join(changes.refused, "; "));
  if (!is_root || changes.allowed.empty()) return;
  spdlog::info("{}: resuming with changed settings: {}", options_.run_dir,
               fmt::join(changes.allowed, "; "));
  describe_schedule(saved, step);
}

void RunCheckpoints::describe_schedule(const checkpoint::Settings& saved, int64_t step) const {
  const int64_t steps = experiment_.train.steps;
  if (step >= steps) return;  // finished: no step is run
  const optim::OptimizerConfig& optimizer = experiment_.optimizer;
  const int64_t length = optim::schedule_steps(optimizer, steps);
  const std::optional<int64_t> saved_steps = saved_count(saved, "train.steps");
  // A run saved before optimizer.schedule.total_steps existed: its schedule ended at train.steps.
  const std::optional<int64_t> saved_length =
      saved.contains(kScheduleStepsKey) ? saved_count(saved, kScheduleStepsKey) : saved_steps;
  if (!saved_steps || !saved_length) return;
  const double next = optim::learning_rate(optimizer, step, length);
  if (*saved_length != length) {
    spdlog::warn(
        "{}: {} changed from {} to {}: the learning-rate schedule is stretched to end at step {}, "
        "so the next step's rate is {:.4g} instead of {:.4g}",
        options_.run_dir, kScheduleStepsKey, *saved_length, length, length, next,
        optim::learning_rate(optimizer, step, *saved_length));
  } else if (*saved_steps != steps) {
    spdlog::info(
        "{}: train.steps changed from {} to {}; the learning-rate schedule keeps its length of {} "
        "steps ({}): the next step's rate is {:.4g} and the last step's {:.4g} (--set {}={} "
        "stretches it to the new end)",
        options_.run_dir, *saved_steps, steps, length, kScheduleStepsKey, next,
        optim::learning_rate(optimizer, steps - 1, length), kScheduleStepsKey, steps);
  }
}

void RunCheckpoints::drop_metrics_after(int64_t step) const {
  int64_t dropped = 0;
  log::MetricsWriter metrics(options_.run_dir);
  comm::agree(world_, [&] {
    if (world_.rank() == 0) dropped = metrics.keep_records_through(step);
  });
  if (dropped > 0) {
    spdlog::info("{}: dropped {} records after step {} (those steps are run again)",
                 metrics.metrics_path(), dropped, step);
  }
}

}  // namespace mpipe::train
