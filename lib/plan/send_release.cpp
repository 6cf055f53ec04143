// When a rank's Link frees each send of a step: the ops of its program that release them.
#include "plan/send_release.h"

#include <algorithm>
#include <optional>

#include "plan/memory_model.h"

namespace mpipe::plan {

std::vector<int> send_releases(const std::vector<Program>& programs, int rank,
                               const Placement& placement) {
  const Program& program = programs.at(static_cast<size_t>(rank));
  std::vector<int> released(program.size(), 0);
  // Per issued send: its peer's rank and the peer's op that receives it.
  struct Sent {
    int peer;
    size_t received_at;
  };
  std::vector<Sent> sent;
  // Per peer rank: the latest op of that peer known done (its send of a message consumed here).
  std::vector<std::optional<size_t>> peer_done(programs.size());
  size_t retired = 0;
  for (size_t i = 0; i < program.size(); ++i) {
    const Op& op = program[i];
    if (is_receive(op.kind)) {
      const Peer from = peer_of(op, rank, placement);
      const size_t sent_at = find_op(programs.at(static_cast<size_t>(from.rank)),
                                     other_end(op.kind), from.chunk, op.micro_batch);
      std::optional<size_t>& done = peer_done[static_cast<size_t>(from.rank)];
      done = std::max(done.value_or(0), sent_at);
      // In order: each known delivered (its peer's receive done before a send of that peer
      // consumed here), up to the first that is not known to be.
      while (retired < sent.size()) {
        const std::optional<size_t>& peer = peer_done[static_cast<size_t>(sent[retired].peer)];
        if (!peer || *peer <= sent[retired].received_at) break;
        ++retired;
      }
    } else if (is_send(op.kind)) {
      const Peer to = peer_of(op, rank, placement);
      sent.push_back({.peer = to.rank,
                      .received_at = find_op(programs.at(static_cast<size_t>(to.rank)),
                                             other_end(op.kind), to.chunk, op.micro_batch)});
      retired = std::max(retired, sent.size() > static_cast<size_t>(plan::kSendsInFlight)
                                      ? sent.size() - plan::kSendsInFlight
                                      : 0);
    }
    released[i] = static_cast<int>(retired);
  }
  return released;
}

}  // namespace mpipe::plan
