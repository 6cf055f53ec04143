// How a supervised job is started and a host checked (see launcher.h).
#include "supervise/launcher.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/error.h"

namespace mpipe::supervise {

namespace {

// srun's options for a step of `ranks` tasks on `nodes` (nodes of different slots: srun places
// the tasks within the allocation's CPUs). --overlap: until slurmctld sets the lost node DOWN
// (SlurmdTimeout), it counts the lost step as holding the CPUs of every node of it; without
// --overlap a probe of a surviving node waited there ("Requested nodes are busy"). `own`: options
// of this kind of step, before the launcher's (which may override them).
std::vector<std::string> srun_step(const Launcher& launcher, int ranks,
                                   const std::vector<HostSlots>& nodes,
                                   const std::vector<std::string>& own) {
  std::vector<std::string> names;
  for (const HostSlots& node : nodes) names.push_back(node.host);
  std::vector<std::string> args = {launcher.program, fmt::format("--nodes={}", nodes.size()),
                                   fmt::format("--ntasks={}", ranks)};
  if (std::ranges::all_of(nodes, [&](const HostSlots& n) { return n.slots == nodes[0].slots; })) {
    args.push_back(fmt::format("--ntasks-per-node={}", nodes[0].slots));
  }
  args.push_back(fmt::format("--nodelist={}", fmt::join(names, ",")));
  args.push_back("--overlap");
  args.insert(args.end(), own.begin(), own.end());
  args.insert(args.end(), launcher.args.begin(), launcher.args.end());
  return args;
}

}  // namespace

std::vector<std::string> job_command(const Launcher& launcher, int ranks,
                                     const std::vector<HostSlots>& hosts,
                                     const std::vector<std::string>& program) {
  check_input(ranks >= 1 && ranks <= total_slots(hosts), "supervise: {} ranks do not fit on {}",
              ranks, host_list_text(hosts));
  std::vector<std::string> args;
  if (launcher.kind == LauncherKind::kMpirun) {
    args = {launcher.program, "-n", std::to_string(ranks), "--host", host_list_text(hosts)};
    args.insert(args.end(), launcher.args.begin(), launcher.args.end());
  } else {
    std::vector<HostSlots> used;  // the hosts the ranks fill, in order
    for (int placed = 0; placed < ranks; placed += used.back().slots) {
      used.push_back(hosts[used.size()]);
    }
    // A task that fails ends the step at once, as mpirun ends its job: without it, a rank that
    // died without MPI_Abort (by a signal) left srun waiting for the step's other tasks, those of
    // a lost node until slurmctld set the node DOWN (SlurmdTimeout).
    args = srun_step(launcher, ranks, used, {"--kill-on-bad-exit=1"});
  }
  args.insert(args.end(), program.begin(), program.end());
  return args;
}

std::vector<std::string> probe_command(const Launcher& launcher, const std::string& host) {
  std::vector<std::string> args;
  if (launcher.kind == LauncherKind::kMpirun) {
    args = {launcher.program, "-n", "1", "--host", host + ":1"};
    args.insert(args.end(), launcher.args.begin(), launcher.args.end());
  } else {
    args = srun_step(launcher, 1, {{.host = host, .slots = 1}}, {});
  }
  args.push_back("true");
  return args;
}

}  // namespace mpipe::supervise
