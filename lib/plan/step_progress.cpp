// Whether one step's programs run to their end under the executor's blocking rules.
#include "plan/step_progress.h"

#include <fmt/format.h>

#include <cstddef>
#include <utility>

#include "core/error.h"
#include "plan/memory_model.h"
#include "plan/receive_posting.h"
#include "plan/send_release.h"

namespace mpipe::plan {

struct StepProgress::Rank {
  const Program* program = nullptr;
  std::vector<int> released_at;    // send_releases
  std::vector<size_t> ordinal;     // per op: its index among the rank's receives, or sends
  std::vector<int> sends_before;   // per op: the sends issued before it
  std::vector<int> send_peer;      // per send: the receiving rank
  std::vector<size_t> send_match;  // per send: the receive's ordinal on that rank
  std::vector<int> recv_peer;      // per receive: the sending rank
  std::vector<size_t> recv_match;  // per receive: the send's ordinal on that rank
  int receives = 0;
};

namespace {

// Where one rank's walk is: its receive posts, the next op (size(): the end), the sends issued
// and completed.
struct Walk {
  std::vector<int> posted_at;  // receives_posted
  size_t pc = 0;
  int issued = 0;
  int completed = 0;
  std::string waiting;  // what it waits for, when it cannot go on
};

}  // namespace

StepProgress::StepProgress(const std::vector<Program>& programs, const Placement& placement)
    : ranks_(programs.size()) {
  const size_t num_ranks = programs.size();
  // Each op's ordinal among its rank's receives or sends.
  for (size_t r = 0; r < num_ranks; ++r) {
    Rank& w = ranks_[r];
    w.program = &programs[r];
    w.released_at = send_releases(programs, static_cast<int>(r), placement);
    int sends = 0;
    for (const Op& op : programs[r]) {
      w.sends_before.push_back(sends);
      if (is_receive(op.kind))
        w.ordinal.push_back(static_cast<size_t>(w.receives++));
      else if (is_send(op.kind))
        w.ordinal.push_back(static_cast<size_t>(sends++));
      else
        w.ordinal.push_back(0);
    }
  }
  // Each message's two ends.
  for (size_t r = 0; r < num_ranks; ++r) {
    Rank& w = ranks_[r];
    for (const Op& op : programs[r]) {
      if (!is_receive(op.kind) && !is_send(op.kind)) continue;
      const Peer peer = peer_of(op, static_cast<int>(r), placement);
      const bool receiving = is_receive(op.kind);
      const size_t at = find_op(programs.at(static_cast<size_t>(peer.rank)), other_end(op.kind),
                                peer.chunk, op.micro_batch);
      const size_t match = ranks_[static_cast<size_t>(peer.rank)].ordinal[at];
      (receiving ? w.recv_peer : w.send_peer).push_back(peer.rank);
      (receiving ? w.recv_match : w.send_match).push_back(match);
    }
  }
}

StepProgress::~StepProgress() = default;

const std::vector<int>& StepProgress::sends_released(int rank) const {
  return ranks_.at(static_cast<size_t>(rank)).released_at;
}

std::optional<std::string> StepProgress::deadlock(int receives_ahead) const {
  const size_t num_ranks = ranks_.size();
  std::vector<Walk> walks(num_ranks);
  for (size_t r = 0; r < num_ranks; ++r) {
    walks[r].posted_at = receives_posted(*ranks_[r].program, receives_ahead);
  }
  // The receives rank r has posted where it is now.
  const auto posted = [&](size_t r) {
    const Walk& w = walks[r];
    return w.pc < ranks_[r].program->size() ? w.posted_at[w.pc] : ranks_[r].receives;
  };
  // Completes rank r's oldest sends until `count` are complete; false at the first that cannot.
  const auto complete = [&](size_t r, int count) {
    const Rank& rank = ranks_[r];
    Walk& w = walks[r];
    for (; w.completed < count; ++w.completed) {
      const auto send = static_cast<size_t>(w.completed);
      const auto peer = static_cast<size_t>(rank.send_peer[send]);
      if (std::cmp_less_equal(posted(peer), rank.send_match[send])) {
        w.waiting = fmt::format("for rank {} to post the receive of its send {} of the step", peer,
                                send + 1);
        return false;
      }
    }
    return true;
  };
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t r = 0; r < num_ranks; ++r) {
      const Rank& rank = ranks_[r];
      const Program& program = *rank.program;
      Walk& w = walks[r];
      while (w.pc <= program.size()) {
        if (w.pc == program.size()) {  // the step's end: Link::wait_sends
          if (!complete(r, w.issued)) break;
          ++w.pc;
          moved = true;
          break;
        }
        const Op& op = program[w.pc];
        if (is_receive(op.kind)) {
          const size_t receive = rank.ordinal[w.pc];
          const Walk& peer = walks[static_cast<size_t>(rank.recv_peer[receive])];
          if (std::cmp_less_equal(peer.issued, rank.recv_match[receive])) {
            w.waiting = fmt::format("for rank {} to send", rank.recv_peer[receive]);
            break;
          }
        } else if (is_send(op.kind)) {
          if (w.issued == rank.sends_before[w.pc]) {
            ++w.issued;
            moved = true;
          }
          if (!complete(r, w.issued - kSendsInFlight)) break;
        } else if (op.kind == OpKind::kWeightGradsBatched && op.micro_batch < 0) {
          if (!complete(r, w.issued)) break;
        }
        if (!complete(r, rank.released_at[w.pc])) break;
        ++w.pc;
        moved = true;
      }
    }
  }
  std::string stalled;
  for (size_t r = 0; r < num_ranks; ++r) {
    const Program& program = *ranks_[r].program;
    const Walk& w = walks[r];
    if (w.pc > program.size()) continue;
    const std::string at = w.pc < program.size()
                               ? fmt::format("at {}", to_string(program[w.pc], true))
                               : std::string("at the step's end");
    stalled += fmt::format("{}rank {} waits {} {}", stalled.empty() ? "" : "; ", r, at, w.waiting);
  }
  if (stalled.empty()) return std::nullopt;
  return stalled;
}

std::optional<std::string> step_deadlock(const std::vector<Program>& programs,
                                         const Placement& placement, int receives_ahead) {
  return StepProgress(programs, placement).deadlock(receives_ahead);
}

}  // namespace mpipe::plan
