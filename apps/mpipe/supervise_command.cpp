// `mpipe supervise`: runs `mpipe train` (or the `mpipe serve` daemon) under mpirun over a host
// list (or srun inside a Slurm allocation) and, when a host or rank is lost, relaunches it on the
// hosts that still answer, re-planned, resuming its checkpoint; and widens it again when lost
// hosts (or spares) answer again. The decisions and the command lines are lib/supervise's, what
// differs between train and serve is in supervised_train.cpp and supervised_serve.cpp; this file
// spawns, waits, probes and forwards signals.
#include "supervise_command.h"

#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>

#include "child_process.h"
#include "core/error.h"
#include "host_probes.h"
#include "option_checks.h"
#include "supervise/grow_back.h"
#include "supervise/host_list.h"
#include "supervise/job_outcome.h"
#include "supervise/launcher.h"
#include "supervise/retry_policy.h"
#include "supervise/slurm_allocation.h"
#include "supervise/user_stop.h"
#include "supervised_serve.h"
#include "supervised_train.h"

extern char** environ;

namespace mpipe::app {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::system_clock;

// The user's stop signals, counted by the handler; the loop passes them on to mpirun (or srun):
// the first as SIGUSR1, which it passes on to the ranks (mpirun cannot pass on SIGTERM or SIGINT:
// it kills the job after odls_base_sigkill_timeout, docs/signals.md), once the job is under way;
// a second one as SIGTERM (supervise::UserStop).
supervise::UserStop g_user_stop;

extern "C" void note_stop(int) { g_user_stop.received(); }

// SIGTERM (a launcher's or Slurm's stop), SIGINT (Ctrl-C) and SIGUSR1 stop the job with a
// checkpoint; the supervisor then launches nothing more.
void forward_stop_signals() {
  struct sigaction action = {};
  action.sa_handler = note_stop;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGTERM, SIGINT, SIGUSR1}) ::sigaction(signal, &action, nullptr);
}

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

constexpr auto kPoll = std::chrono::milliseconds(100);

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
      "Run `train`, or the `serve` daemon, under mpirun over a host list, or srun inside a Slurm "
      "allocation; when a host or rank is lost, relaunch it on the hosts that still answer, "
      "re-planned, from its newest checkpoint (a shared run directory, or checkpoint.peer_copy "
      "on node-local ones): mpipe supervise --hosts h1:2,h2:2 -- train EXP.yaml [--set ...], "
      "or -- serve --spool DIR [--idle-exit D]");
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
      ->check(non_negative_integer());
  app_->add_option("--mpirun", mpirun_, "The mpirun to run (looked up on the PATH)")
      ->capture_default_str();
  app_->add_option("--mpirun-args", mpirun_args_,
                   "Options for every mpirun, the job's and the host probes', split at spaces: "
                   "\"--bind-to none --mca btl tcp,self -x OMP_NUM_THREADS\"");
  app_->add_option("--probe-timeout", probe_timeout_s_,
                   "Seconds a host has to run `true` under the launcher before a relaunch")
      ->capture_default_str()
      ->check(number_check("a number > 0", [](double value) { return value > 0; }));
  app_->add_option("--regrow-interval", regrow_interval_s_,
                   "While the job runs on fewer slots than it started with (a host lost), probe "
                   "the missing hosts every this many seconds; when one answers, stop the job at "
                   "a step boundary with a checkpoint and relaunch it wider (0: never)")
      ->capture_default_str()
      ->check(number_check("a number of seconds >= 0 (0: never widen)",
                           [](double value) { return value >= 0; }));
  app_->add_option("--spare", spares_,
                   "Hosts the job does not start on, as --hosts (s1:2,s2:2): after a lost host it "
                   "is relaunched on the hosts that answer and these, up to the slots it started "
                   "with");
  app_->add_option("--srun-args", srun_args_,
                   "Options for every srun (--launcher srun), the job's and the host probes', "
                   "split at spaces: \"--mpi=pmix --cpus-per-task=4\"");
  app_->add_option("command", command_,
                   "-- train CONFIG [train's options], or -- serve --spool DIR [--idle-exit D]")
      ->required();
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

std::unique_ptr<SupervisedJob> SuperviseCommand::job(int slots) const {
  if (!command_.empty() && command_.front() == "serve") {
    return std::make_unique<SupervisedServe>(command_);
  }
  return std::make_unique<SupervisedTrain>(command_, slots);
}

int SuperviseCommand::run() {
  const supervise::Launcher launcher = this->launcher();
  const std::string launcher_name =
      launcher.kind == supervise::LauncherKind::kSrun ? "srun" : "mpirun";
  std::vector<supervise::HostSlots> hosts = initial_hosts();
  std::vector<supervise::HostSlots> spares;
  if (!spares_.empty()) {
    if (hosts_.empty()) {  // the allocation's nodes: those named spare wait, as spares
      const auto named = supervise::parse_host_list(spares_, "--spare");
      std::erase_if(hosts, [&](const supervise::HostSlots& host) {
        return std::ranges::any_of(named,
                                   [&](const auto& spare) { return spare.host == host.host; });
      });
      check_input(!hosts.empty(),
                  "--spare: every node of the allocation is a spare: none is left to start on");
    }
    spares = supervise::parse_spares(spares_, hosts);
  }
  const std::vector<supervise::HostSlots> pool = supervise::host_pool(hosts, spares);
  const int width = total_slots(hosts);
  const std::unique_ptr<SupervisedJob> job = this->job(width);
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  forward_stop_signals();
  const auto regrow_interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(regrow_interval_s_));

  int last_exit = 0;  // the exit status of the job's last mpirun or srun (0 before the first)
  for (int restarts = 0, launches = 0;; ++launches) {
    if (g_user_stop.requested()) {  // a stop that came before this launch
      spdlog::info("supervise: stopped by a signal; not {} the job",
                   launches == 0 ? "launching" : "relaunching");
      job->ended(false);
      return last_exit;
    }
    std::vector<std::string> program = {self};
    for (std::string& arg : job->command()) program.push_back(std::move(arg));
    const pid_t launched =
        spawn(supervise::job_command(launcher, job->ranks(hosts), hosts, program), false);
    const Clock::time_point launched_at = Clock::now();
    // Growing back: the missing hosts probed every --regrow-interval while the job runs narrow;
    // once one answers and the job plans a wider layout, the supervisor's own stop.
    std::optional<HostProbes> probes;
    Clock::time_point next_probe = launched_at + regrow_interval;
    std::optional<std::vector<supervise::HostSlots>> wider;  // set once the stop is sent
    Clock::time_point stop_sent_at;
    std::string declined;  // the last reason logged for staying narrow (said once)
    bool under_way = false;
    bool said_held = false;
    std::optional<int> status;
    while (!(status = ended(launched))) {
      job->watch();
      if (!under_way) under_way = job->under_way(launched_at);
      if (const int signal = g_user_stop.to_pass_on(under_way)) {
        ::kill(launched, signal);
      } else if (g_user_stop.held() && !said_held) {
        spdlog::info(
            "supervise: a stop signal before the job has logged a step: passing it on to {} once "
            "it has (a rank still starting would die of it); a second one ends the job at once",
            launcher_name);
        said_held = true;
      }
      if (!wider && under_way &&
          supervise::looks_for_hosts(hosts, width, regrow_interval_s_, g_user_stop.requested())) {
        if (!probes && Clock::now() >= next_probe) {
          probes.emplace(launcher, supervise::missing_hosts(pool, hosts), probe_timeout_s_);
        }
        const auto returned = probes ? probes->answering() : std::nullopt;
        if (returned) {
          probes.reset();
          next_probe = Clock::now() + regrow_interval;
          if (auto hosts_then = supervise::wider_hosts(pool, hosts, *returned, width)) {
            const std::optional<std::string> reason =
                job->plan_widening({.hosts = hosts, .returned = *returned, .wider = *hosts_then});
            if (!reason) {
              ::kill(launched, SIGUSR1);  // (mpirun or srun passes it on to the ranks)
              stop_sent_at = Clock::now();
              wider = std::move(hosts_then);
            } else if (*reason != declined) {
              spdlog::info("supervise: {}; staying on {}: {}",
                           supervise::answer_again_text(*returned), host_list_text(hosts), *reason);
              declined = *reason;
            }
          }
        }
      }
      std::this_thread::sleep_for(kPoll);
    }
    probes.reset();
    const supervise::JobEnd end =
        supervise::read_job_end(*status, g_user_stop.passed_on(), launcher.kind);
    last_exit = end.exit_code;
    if (wider) {
      const supervise::GrowStopEnd grow_end =
          supervise::read_grow_stop(end, g_user_stop.requested(), job->finished_since(launched_at));
      if (grow_end == supervise::GrowStopEnd::kWiden) {
        if (job->widen(stop_sent_at)) hosts = *wider;
        continue;  // (not a restart: nothing was lost)
      }
      if (grow_end == supervise::GrowStopEnd::kFinished) {
        spdlog::info("supervise: the job finished before it reached the stop; not widened");
      }
    }
    if (end.outcome == supervise::JobOutcome::kDone) {
      job->ended(!g_user_stop.requested());
      return 0;
    }
    const std::string failure = fmt::format("exit status {}: {}", end.exit_code, end.meaning);
    if (end.outcome != supervise::JobOutcome::kLost) {
      spdlog::info("supervise: {} ended with exit status {}: {}", launcher_name, end.exit_code,
                   end.outcome == supervise::JobOutcome::kStopped
                       ? "stopped by a signal, not relaunched"
                       : "not retried (" + end.meaning + ")");
      job->ended(false);
      return end.exit_code;
    }
    // Every host of the pool is probed: the job's, and those lost before or spare.
    const std::vector<supervise::HostSlots> answering =
        HostProbes(launcher, pool, probe_timeout_s_).wait(kPoll);
    LostHosts lost{.failure = failure,
                   .hosts = hosts,
                   .alive = supervise::chosen_hosts(pool, answering, width),
                   .lost_hosts = {},
                   .restart = restarts + 1,
                   .max_restarts = max_restarts_,
                   .failed_at = Clock::now()};
    std::vector<supervise::HostSlots> still_answering;  // of the job's hosts
    for (const auto& host : hosts) {
      if (std::ranges::none_of(answering, [&](const auto& a) { return a.host == host.host; })) {
        lost.lost_hosts.push_back(host.host);
      } else {
        still_answering.push_back(host);
      }
    }
    std::optional<std::string> give_up =
        supervise::give_up_reason(restarts, max_restarts_, lost.alive);
    if (!give_up) give_up = supervise::no_host_lost_reason(end, hosts, still_answering);
    if (!give_up && g_user_stop.requested()) give_up = "stopped by a signal";
    if (!give_up) give_up = job->prepare_relaunch(lost);
    if (give_up) {
      spdlog::error("supervise: {} ended with {}; not relaunching: {}", launcher_name, failure,
                    *give_up);
      job->ended(false);
      return end.exit_code;
    }
    hosts = lost.alive;
    ++restarts;
  }
}

}  // namespace mpipe::app
