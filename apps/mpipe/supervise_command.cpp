// `mpipe supervise`: runs `mpipe train` under mpirun over a host list (or srun inside a Slurm
// allocation) and, when a host or rank is lost, relaunches it on the hosts that still answer,
// re-planned, resuming its checkpoint. The decisions and the command lines are lib/supervise's;
// this file spawns, waits, probes and forwards signals.
#include "supervise_command.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <sstream>
#include <thread>

#include "config/experiment.h"
#include "core/error.h"
#include "core/host_clock.h"
#include "supervise/host_list.h"
#include "supervise/job_outcome.h"
#include "supervise/launcher.h"
#include "supervise/planner_check.h"
#include "supervise/recovery.h"
#include "supervise/replan.h"
#include "supervise/retry_policy.h"
#include "supervise/run_progress.h"
#include "supervise/slurm_allocation.h"
#include "supervise/train_command.h"
#include "train_command.h"

extern char** environ;

namespace mpipe::app {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::system_clock;

// The running mpirun or srun, for the signal handler, and whether a stop signal was passed on to
// it.
std::atomic<pid_t> g_job{0};
std::atomic<bool> g_stop_forwarded{false};

// The first stop signal goes to mpirun (or srun) as SIGUSR1, which it passes on to the ranks
// (mpirun cannot pass on SIGTERM or SIGINT: it kills the job after odls_base_sigkill_timeout,
// docs/signals.md): they checkpoint at the next step boundary and stop, and it exits 0. A second
// one goes as SIGTERM: it ends the job at once.
extern "C" void forward_stop(int) {
  const bool again = g_stop_forwarded.exchange(true);
  if (const pid_t job = g_job.load(); job > 0) ::kill(job, again ? SIGTERM : SIGUSR1);
}

// SIGTERM (a launcher's or Slurm's stop), SIGINT (Ctrl-C) and SIGUSR1 stop the job with a
// checkpoint; the supervisor then relaunches nothing.
void forward_stop_signals() {
  struct sigaction action = {};
  action.sa_handler = forward_stop;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGTERM, SIGINT, SIGUSR1}) ::sigaction(signal, &action, nullptr);
}

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// `args` as posix_spawn's argv (pointing into `args`, ended by a null pointer).
std::vector<char*> argv_of(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  return argv;
}

// Starts `args` (args[0] looked up on PATH) in a process group of its own, so a terminal's
// Ctrl-C reaches it once, through the supervisor; `quiet`: its output goes to /dev/null.
pid_t spawn(const std::vector<std::string>& args, bool quiet) {
  std::vector<char*> argv = argv_of(args);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  pid_t pid = 0;
  const int error = posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0)
    throw Error(fmt::format("supervise: cannot start {}: {}", args[0], strerror(error)));
  return pid;
}

// waitpid's status of `pid` if it has ended, else nullopt.
std::optional<int> ended(pid_t pid) {
  int status = 0;
  const pid_t done = ::waitpid(pid, &status, WNOHANG);
  if (done == pid) return status;
  if (done < 0 && errno != EINTR)
    throw Error(fmt::format("supervise: waitpid: {}", strerror(errno)));
  return std::nullopt;
}

constexpr auto kPoll = std::chrono::milliseconds(100);

// When the run last logged a step (metrics.jsonl written: a step, or the record of the recovery
// before, when the relaunched job logged none), or `otherwise`.
Clock::time_point last_progress(const std::string& run_dir, Clock::time_point otherwise) {
  std::error_code error;
  const auto written = fs::last_write_time(fs::path(run_dir) / "metrics.jsonl", error);
  if (error) return otherwise;
  return std::chrono::file_clock::to_sys(written);
}

// The value of environment variable `name`; InputError when it is not set.
std::string slurm_variable(const char* name) {
  const char* value = std::getenv(name);
  check_input(value != nullptr,
              "supervise --launcher srun: {} is not set: run it inside a Slurm allocation (a batch "
              "script), or give --hosts",
              name);
  return value;
}

// Refuses a value `valid` rejects: "must be <what>, got X". Unnamed, so that --help shows
// "--max-restarts INT=3", not a CLI11 validator's name.
CLI::Validator number_check(const std::string& what, bool (*valid)(double)) {
  return CLI::Validator(
      [what, valid](const std::string& text) {
        double value = 0;
        return CLI::detail::lexical_cast(text, value) && valid(value)
                   ? std::string()
                   : "must be " + what + ", got " + text;
      },
      "");
}

}  // namespace

SuperviseCommand::SuperviseCommand(CLI::App& app) {
  app_ = app.add_subcommand(
      "supervise",
      "Run `train` under mpirun over a host list, or srun inside a Slurm allocation; when a host "
      "or rank is lost, relaunch it on the hosts that still answer, re-planned, from its newest "
      "checkpoint (a shared run directory, or checkpoint.peer_copy on node-local ones): mpipe "
      "supervise --hosts h1:2,h2:2 -- train EXP.yaml [--set ...]");
  app_->add_option("--hosts", hosts_,
                   "Hosts and their slots, as mpirun's --host: h1:2,h2:2 (required with mpirun; "
                   "with srun, the allocation's nodes and tasks by default)");
  app_->add_option("--launcher", launcher_,
                   "mpirun, or srun: run the job as a step of the Slurm allocation it is in")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](const std::string& text) {
            return text == "mpirun" || text == "srun" ? std::string()
                                                      : "must be mpirun or srun, got " + text;
          },
          ""));
  app_->add_option("--max-restarts", max_restarts_, "Relaunch at most this many times")
      ->capture_default_str()
      ->check(number_check("an integer >= 0", [](double value) { return value >= 0; }));
  app_->add_option("--mpirun", mpirun_, "The mpirun to run (looked up on the PATH)")
      ->capture_default_str();
  app_->add_option("--mpirun-args", mpirun_args_,
                   "Options for every mpirun, the job's and the host probes', split at spaces: "
                   "\"--bind-to none --mca btl tcp,self -x OMP_NUM_THREADS\"");
  app_->add_option("--probe-timeout", probe_timeout_s_,
                   "Seconds a host has to run `true` under the launcher before a relaunch")
      ->capture_default_str()
      ->check(number_check("a number > 0", [](double value) { return value > 0; }));
  app_->add_option("--srun-args", srun_args_,
                   "Options for every srun (--launcher srun), the job's and the host probes', "
                   "split at spaces: \"--mpi=pmix --cpus-per-task=4\"");
  app_->add_option("command", command_, "-- train CONFIG [train's options]")->required();
}

supervise::Launcher SuperviseCommand::launcher() const {
  if (launcher_ == "srun") {
    check_input(mpirun_args_.empty(),
                "supervise: --mpirun-args is for --launcher mpirun; give srun's with --srun-args");
    return {
        .kind = supervise::LauncherKind::kSrun, .program = "srun", .args = split_words(srun_args_)};
  }
  check_input(srun_args_.empty(), "supervise: --srun-args needs --launcher srun");
  return {.kind = supervise::LauncherKind::kMpirun,
          .program = mpirun_,
          .args = split_words(mpirun_args_)};
}

// The names `nodelist` (a Slurm host list: "h[2-3],gpu1") stands for, in Slurm's order, as
// `scontrol show hostnames` expands them; InputError with scontrol's own last line when it fails.
std::vector<std::string> slurm_hostnames(const std::string& nodelist) {
  int pipe_ends[2];
  if (::pipe(pipe_ends) != 0) throw Error(fmt::format("supervise: pipe: {}", strerror(errno)));
  const std::vector<std::string> args = {"scontrol", "show", "hostnames", nodelist};
  std::vector<char*> argv = argv_of(args);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_ends[0]);
  pid_t pid = 0;
  const int error = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_ends[1]);
  std::string output;
  if (error == 0) {
    char buffer[4096];
    for (ssize_t n; (n = ::read(pipe_ends[0], buffer, sizeof buffer)) != 0;) {
      if (n > 0) output.append(buffer, static_cast<size_t>(n));
      if (n < 0 && errno != EINTR) break;
    }
  }
  ::close(pipe_ends[0]);
  check_input(error == 0,
              "supervise --launcher srun: cannot run scontrol to expand "
              "SLURM_JOB_NODELIST '{}': {}",
              nodelist, strerror(error));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::vector<std::string> names = split_words(output);
  const bool expanded = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !names.empty();
  std::string said = output.substr(0, output.find_last_not_of('\n') + 1);
  said = said.substr(said.find_last_of('\n') + 1);  // its last line (npos + 1: all of it)
  check_input(expanded, "supervise --launcher srun: scontrol show hostnames '{}' failed: {}",
              nodelist, said.empty() ? "no output" : said);
  return names;
}

std::vector<supervise::HostSlots> SuperviseCommand::initial_hosts() const {
  if (!hosts_.empty() || launcher_ == "mpirun") {
    check_input(!hosts_.empty(), "supervise: --hosts is required with --launcher mpirun");
    return supervise::parse_host_list(hosts_, "--hosts");
  }
  const std::vector<std::string> nodes = slurm_hostnames(slurm_variable("SLURM_JOB_NODELIST"));
  return supervise::allocation_hosts(nodes, slurm_variable("SLURM_TASKS_PER_NODE"));
}

int SuperviseCommand::run() {
  const supervise::Launcher launcher = this->launcher();
  const std::string launcher_name =
      launcher.kind == supervise::LauncherKind::kSrun ? "srun" : "mpirun";
  std::vector<supervise::HostSlots> hosts = initial_hosts();
  const supervise::TrainCommand train = supervise::parse_train_command(command_);
  const std::string run_dir =
      train.run_dir.empty() ? default_run_dir(train.config_path) : train.run_dir;
  const config::Experiment experiment = config::load_experiment(train.config_path, train.overrides);
  supervise::Layout layout = supervise::experiment_layout(experiment, total_slots(hosts));
  const supervise::PlannerCheck check(experiment);
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  forward_stop_signals();

  // The hosts of `from` where the launcher runs `true` within --probe-timeout, all probed at once.
  const auto answering = [&](const std::vector<supervise::HostSlots>& from) {
    std::vector<pid_t> probes;
    for (const auto& host : from) {
      probes.push_back(spawn(supervise::probe_command(launcher, host.host), /*quiet=*/true));
    }
    std::vector<std::optional<int>> statuses(probes.size());
    const auto deadline = Clock::now() + std::chrono::duration<double>(probe_timeout_s_);
    while (true) {
      bool running = false;
      for (size_t i = 0; i < probes.size(); ++i) {
        if (!statuses[i]) statuses[i] = ended(probes[i]);
        running = running || !statuses[i];
      }
      if (!running) break;
      if (Clock::now() > deadline) {
        for (size_t i = 0; i < probes.size(); ++i) {
          if (!statuses[i]) ::kill(probes[i], SIGKILL);
          while (!statuses[i]) statuses[i] = ended(probes[i]);
        }
        break;
      }
      std::this_thread::sleep_for(kPoll);
    }
    std::vector<supervise::HostSlots> alive;
    for (size_t i = 0; i < from.size(); ++i) {
      if (WIFEXITED(*statuses[i]) && WEXITSTATUS(*statuses[i]) == 0) alive.push_back(from[i]);
    }
    return alive;
  };

  std::vector<std::string> program = {self};
  program.insert(program.end(), command_.begin(), command_.end());
  std::vector<supervise::Recovery> recoveries;
  // The last recovery's seconds_lost are measured from the last step logged before its failure
  // to the first step past it that the relaunched job logs.
  Clock::time_point last_progress_before_failure;
  for (int restarts = 0;; ++restarts) {
    const pid_t job =
        spawn(supervise::job_command(launcher, layout.ranks(), hosts, program), false);
    g_job.store(job);
    if (g_stop_forwarded.load()) ::kill(job, SIGUSR1);  // a stop that came before the job
    std::optional<int> status;
    while (!(status = ended(job))) {
      supervise::Recovery* pending = recoveries.empty() ? nullptr : &recoveries.back();
      if (pending && pending->seconds_lost < 0 &&
          supervise::last_logged_step(run_dir) > pending->last_step) {
        pending->seconds_lost =
            std::chrono::duration<double>(Clock::now() - last_progress_before_failure).count();
      }
      std::this_thread::sleep_for(kPoll);
    }
    g_job.store(0);
    const supervise::JobEnd end =
        supervise::read_job_end(*status, g_stop_forwarded.load(), launcher.kind);
    if (end.outcome == supervise::JobOutcome::kDone) {
      // A run stopped by a signal ends with a checkpoint but no summary.json: its recoveries
      // are in the log only.
      if (!recoveries.empty() && !g_stop_forwarded.load()) {
        nlohmann::ordered_json records = nlohmann::ordered_json::array();
        for (const auto& recovery : recoveries) records.push_back(recovery_json(recovery));
        supervise::add_to_summary(run_dir, records);
      }
      return 0;
    }
    const std::string failure = fmt::format("exit status {}: {}", end.exit_code, end.meaning);
    if (end.outcome != supervise::JobOutcome::kLost) {
      spdlog::info("supervise: {} ended with exit status {}: {}", launcher_name, end.exit_code,
                   end.outcome == supervise::JobOutcome::kStopped
                       ? "stopped by a signal, not relaunched"
                       : "not retried (" + end.meaning + ")");
      return end.exit_code;
    }
    const auto failed_at = Clock::now();
    std::vector<supervise::HostSlots> alive = answering(hosts);
    std::optional<std::string> give_up = supervise::give_up_reason(restarts, max_restarts_, alive);
    if (!give_up) give_up = supervise::no_host_lost_reason(end, hosts, alive);
    supervise::Replan plan;
    if (!give_up) {
      try {
        plan = supervise::replan(layout, total_slots(alive),
                                 supervise::tree_weight_grads(experiment), check);
      } catch (const InputError& e) {
        give_up = e.what();
      }
    }
    if (give_up || g_stop_forwarded.load()) {
      spdlog::error("supervise: {} ended with {}; not relaunching: {}", launcher_name, failure,
                    give_up.value_or("stopped by a signal"));
      return end.exit_code;
    }
    supervise::Recovery recovery{.time = utc_now(),
                                 .failure = failure,
                                 .lost_hosts = {},
                                 .old_hosts = host_list_text(hosts),
                                 .new_hosts = host_list_text(alive),
                                 .old_layout = layout,
                                 .new_layout = plan.layout,
                                 .bit_identical = plan.bit_identical,
                                 .last_step = supervise::last_logged_step(run_dir),
                                 .resumed_from = supervise::newest_checkpoint_step(run_dir),
                                 .seconds_lost = -1.0};
    for (const auto& host : hosts) {
      if (std::ranges::none_of(alive, [&](const auto& a) { return a.host == host.host; })) {
        recovery.lost_hosts.push_back(host.host);
      }
    }
    spdlog::warn("{}", supervise::recovery_line(recovery, restarts + 1, max_restarts_));
    // (Before the record below writes the file.)
    last_progress_before_failure = last_progress(run_dir, failed_at);
    try {
      supervise::add_to_metrics(run_dir, recovery);
    } catch (const Error& e) {
      spdlog::warn("supervise: {}; the recovery is in summary.json only", e.what());
    }
    recoveries.push_back(recovery);
    hosts = alive;
    layout = plan.layout;
    program = {self};
    for (std::string& arg : supervise::relaunch_command(
             train, layout, supervise::needs_auto_partition(experiment, layout))) {
      program.push_back(std::move(arg));
    }
  }
}

}  // namespace mpipe::app
