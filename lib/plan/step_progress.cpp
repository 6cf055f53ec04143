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
namespace {

// One rank's program with what the walk needs to know of its messages.
struct RankWalk {
  const Program* program = nullptr;
  std::vector<int> posted_at;      // receives_posted
  std::vector<int> released_at;    // send_releases
  std::vector<size_t> ordinal;     // per op: its index among the rank's receives, or sends
  std::vector<int> sends_before;   // per op: the sends issued before it
  std::vector<int> send_peer;      // per send: the receiving rank
  std::vector<size_t> send_match;  // per send: the receive's ordinal on that rank
  std::vector<int> recv_peer;      // per receive: the sending rank
  std::vector<size_t> recv_match;  // per receive: the send's ordinal on that rank
  int receives = 0;
  // Where the walk is: the next op (program->size(): the end), the sends issued and completed.
  size_t pc = 0;
  int issued = 0;
  int completed = 0;
  std::string waiting;  // what it waits for, when it cannot go on
};

}  // namespace

std::optional<std::string> step_deadlock(const std::vector<Program>& programs,
                                         const Placement& placement, int receives_ahead) {
  const size_t num_ranks = programs.size();
  std::vector<RankWalk> ranks(num_ranks);
  // Each op's ordinal among its rank's receives or sends.
  for (size_t r = 0; r < num_ranks; ++r) {
    RankWalk& w = ranks[r];
    w.program = &programs[r];
    w.posted_at = receives_posted(programs[r], receives_ahead);
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
    RankWalk& w = ranks[r];
    for (const Op& op : programs[r]) {
      if (!is_receive(op.kind) && !is_send(op.kind)) continue;
      const Peer peer = peer_of(op, static_cast<int>(r), placement);
      const bool receiving = is_receive(op.kind);
      const size_t at = find_op(programs.at(static_cast<size_t>(peer.rank)), other_end(op.kind),
                                peer.chunk, op.micro_batch);
      const size_t match = ranks[static_cast<size_t>(peer.rank)].ordinal[at];
      (receiving ? w.recv_peer : w.send_peer).push_back(peer.rank);
      (receiving ? w.recv_match : w.send_match).push_back(match);
    }
  }
  // The receives rank r has posted where it is now.
  const auto posted = [&](const RankWalk& w) {
    return w.pc < w.program->size() ? w.posted_at[w.pc] : w.receives;
  };
  // Completes rank r's oldest sends until `count` are complete; false at the first that cannot.
  const auto complete = [&](RankWalk& w, int count) {
    for (; w.completed < count; ++w.completed) {
      const auto send = static_cast<size_t>(w.completed);
      const RankWalk& peer = ranks[static_cast<size_t>(w.send_peer[send])];
      if (std::cmp_less_equal(posted(peer), w.send_match[send])) {
        w.waiting = fmt::format("for rank {} to post the receive of its send {} of the step",
                                w.send_peer[send], send + 1);
        return false;
      }
    }
    return true;
  };
  for (bool moved = true; moved;) {
    moved = false;
    for (RankWalk& w : ranks) {
      const Program& program = *w.program;
      while (w.pc <= program.size()) {
        if (w.pc == program.size()) {  // the step's end: Link::wait_sends
          if (!complete(w, w.issued)) break;
          ++w.pc;
          moved = true;
          break;
        }
        const Op& op = program[w.pc];
        if (is_receive(op.kind)) {
          const size_t receive = w.ordinal[w.pc];
          const RankWalk& peer = ranks[static_cast<size_t>(w.recv_peer[receive])];
          if (std::cmp_less_equal(peer.issued, w.recv_match[receive])) {
            w.waiting = fmt::format("for rank {} to send", w.recv_peer[receive]);
            break;
          }
        } else if (is_send(op.kind)) {
          if (w.issued == w.sends_before[w.pc]) {
            ++w.issued;
            moved = true;
          }
          if (!complete(w, w.issued - kSendsInFlight)) break;
        } else if (op.kind == OpKind::kWeightGradsBatched && op.micro_batch < 0) {
          if (!complete(w, w.issued)) break;
        }
        if (!complete(w, w.released_at[w.pc])) break;
        ++w.pc;
        moved = true;
      }
    }
  }
  std::string stalled;
  for (size_t r = 0; r < num_ranks; ++r) {
    const RankWalk& w = ranks[r];
    if (w.pc > w.program->size()) continue;
    const std::string at = w.pc < w.program->size()
                               ? fmt::format("at {}", to_string((*w.program)[w.pc], true))
                               : std::string("at the step's end");
    stalled += fmt::format("{}rank {} waits {} {}", stalled.empty() ? "" : "; ", r, at, w.waiting);
  }
  if (stalled.empty()) return std::nullopt;
  return stalled;
}

}  // namespace mpipe::plan
