// Timeline simulator: dataflow execution of all rank programs in simulated time.
#include "plan/simulator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "core/error.h"
#include "plan/placement.h"
#include "plan/schedule.h"

namespace mpipe::plan {

namespace {

// A message as its receiver knows it: (its chunk there, micro-batch).
using MessageKey = std::pair<int, int>;
// Messages waiting at one rank: key -> arrival times.
using Mailbox = std::multimap<MessageKey, double>;
// Per peer rank, the messages exchanged with it in order.
using MessageLog = std::map<int, std::vector<MessageKey>>;

// Everything the simulation tracks for one rank.
struct RankState {
  std::size_t next_op = 0;
  double clock = 0.0;
  double link_free = 0.0;  // when the rank's outgoing link has sent its earlier messages
  Mailbox activations_in;  // from the previous stages
  Mailbox grads_in;        // from the next stages
  MessageLog sent_activations, received_activations;
  MessageLog sent_grads, received_grads;
  std::set<MessageKey> in_flight;        // (chunk, micro-batch)
  std::set<MessageKey> pending_weights;  // past I, before W
  std::map<int, int> group_begin;        // per chunk: the first micro-batch of its next WB op
};

// The share of the deferred weight gradients of `micro_batches` a WB op runs: every one (-1), or
// the group from the chunk's previous WB op to `op`'s micro-batch (advancing `group_begin`).
double weight_group_share(const Op& op, int micro_batches, std::map<int, int>& group_begin) {
  if (op.micro_batch < 0) return 1.0;
  int& begin = group_begin[op.chunk];
  const int size = op.micro_batch + 1 - begin;
  check(size >= 1 && op.micro_batch < micro_batches,
        "simulate: WB{} after a group up to micro-batch {} of {}", op.micro_batch, begin - 1,
        micro_batches);
  begin = op.micro_batch + 1;
  return static_cast<double>(size) / micro_batches;
}

double compute_time(OpKind kind, int stage, const SimulationOptions& options) {
  switch (kind) {
    case OpKind::kForward:
      return options.forward(stage);
    case OpKind::kBackward:
      return options.backward(stage);
    case OpKind::kBackwardInput:
      check(options.weight(stage) <= options.backward(stage),
            "simulate: stage {}'s weight gradients take {}, more than its whole backward ({})",
            stage, options.weight(stage), options.backward(stage));
      return options.input_backward(stage);
    case OpKind::kBackwardWeight:
      return options.weight(stage);
    case OpKind::kWeightGradsBatched:
      return options.batched_weight(stage);
    default:
      throw Error(fmt::format("simulate: {} is not a compute op", to_string(Op{kind, 0})));
  }
}

// The rank and chunk an op talks to, checked to exist.
Peer checked_peer(const Op& op, int rank, const Placement& placement, std::size_t op_index) {
  try {
    return peer_of(op, rank, placement);
  } catch (const Error& e) {
    throw Error(fmt::format("simulate: rank {} op {}: {}", rank, op_index, e.what()));
  }
}

// Runs ops of rank `rank` until it finishes or waits on a message not yet sent. Returns true if
// it ran at least one op.
bool advance(int rank, const Program& program, const Placement& placement, int micro_batches,
             std::vector<RankState>& states, RankTimeline& timeline,
             const SimulationOptions& options) {
  RankState& self = states[rank];
  bool progressed = false;
  while (self.next_op < program.size()) {
    const Op& op = program[self.next_op];
    const MessageKey own{op.chunk, op.micro_batch};
    switch (op.kind) {
      case OpKind::kForward:
      case OpKind::kBackward:
      case OpKind::kBackwardInput:
      case OpKind::kBackwardWeight:
      case OpKind::kWeightGradsBatched: {
        double duration = compute_time(op.kind, placement.stage_of(rank, op.chunk), options);
        if (op.kind == OpKind::kWeightGradsBatched) {
          duration *= weight_group_share(op, micro_batches, self.group_begin);
        }
        timeline.compute.push_back({op, self.clock, self.clock + duration});
        timeline.busy_time += duration;
        self.clock += duration;
        if (op.kind == OpKind::kForward) {
          self.in_flight.insert(own);
        } else if (op.kind == OpKind::kBackwardWeight) {
          self.pending_weights.erase(own);
        } else if (is_input_backward(op.kind)) {
          self.in_flight.erase(own);
          if (op.kind == OpKind::kBackwardInput) self.pending_weights.insert(own);
        }
        timeline.peak_in_flight =
            std::max(timeline.peak_in_flight, static_cast<int>(self.in_flight.size()));
        timeline.peak_pending_weights =
            std::max(timeline.peak_pending_weights, static_cast<int>(self.pending_weights.size()));
        break;
      }
      case OpKind::kSendActivation:
      case OpKind::kSendGrad: {
        const Peer to = checked_peer(op, rank, placement, self.next_op);
        RankState& peer = states[to.rank];
        self.link_free = std::max(self.clock, self.link_free) + options.send_transfer;
        const double arrival = self.link_free + options.send_latency;
        const MessageKey key{to.chunk, op.micro_batch};
        if (op.kind == OpKind::kSendActivation) {
          peer.activations_in.emplace(key, arrival);
          self.sent_activations[to.rank].push_back(key);
        } else {
          peer.grads_in.emplace(key, arrival);
          self.sent_grads[to.rank].push_back(key);
        }
        break;
      }
      case OpKind::kRecvActivation:
      case OpKind::kRecvGrad: {
        const Peer from = checked_peer(op, rank, placement, self.next_op);
        const bool activation = op.kind == OpKind::kRecvActivation;
        Mailbox& mailbox = activation ? self.activations_in : self.grads_in;
        auto message = mailbox.find(own);
        if (message == mailbox.end()) return progressed;
        if (message->second > self.clock) {
          timeline.waits.push_back({op, self.clock, message->second});
        }
        self.clock = std::max(self.clock, message->second);
        mailbox.erase(message);
        (activation ? self.received_activations : self.received_grads)[from.rank].push_back(own);
        break;
      }
    }
    ++self.next_op;
    progressed = true;
  }
  return progressed;
}

// "[0 1]", or with chunks "[0.0 1.0 0.1]" (micro-batch.chunk at the receiver).
std::string message_list(const std::vector<MessageKey>& messages, bool with_chunk) {
  std::vector<std::string> names;
  for (const auto& [chunk, micro_batch] : messages) {
    names.push_back(with_chunk ? fmt::format("{}.{}", micro_batch, chunk)
                               : fmt::format("{}", micro_batch));
  }
  return fmt::format("[{}]", fmt::join(names, " "));
}

void check_orders(const std::vector<RankState>& states, bool with_chunk, SimulationResult& result) {
  static const std::vector<MessageKey> kNone;
  const auto compare = [&](int from, const MessageLog& sent, MessageLog RankState::*received,
                           const char* what) {
    for (const auto& [to, messages] : sent) {
      const MessageLog& log = states[static_cast<size_t>(to)].*received;
      const auto it = log.find(from);
      const std::vector<MessageKey>& got = it == log.end() ? kNone : it->second;
      if (messages != got) {
        result.order_mismatches.push_back(
            fmt::format("rank {} sends {} in order {} but rank {} receives {}", from, what,
                        message_list(messages, with_chunk), to, message_list(got, with_chunk)));
      }
    }
  };
  for (std::size_t r = 0; r < states.size(); ++r) {
    const int from = static_cast<int>(r);
    compare(from, states[r].sent_activations, &RankState::received_activations, "activations");
    compare(from, states[r].sent_grads, &RankState::received_grads, "gradients");
  }
}

// v: one more than the largest chunk any op names.
int chunks_of(const std::vector<Program>& programs) {
  int most = 0;
  for (const Program& program : programs) {
    for (const Op& op : program) {
      check(op.chunk >= 0, "simulate: chunk {} of {}", op.chunk, to_string(op));
      most = std::max(most, op.chunk);
    }
  }
  return most + 1;
}

}  // namespace

double SimulationOptions::forward(int stage) const {
  return stage_forward_times.empty() ? forward_time
                                     : stage_forward_times.at(static_cast<size_t>(stage));
}

double SimulationOptions::backward(int stage) const {
  return stage_backward_times.empty() ? backward_time
                                      : stage_backward_times.at(static_cast<size_t>(stage));
}

double SimulationOptions::weight(int stage) const {
  return stage_weight_times.empty() ? weight_time
                                    : stage_weight_times.at(static_cast<size_t>(stage));
}

double SimulationOptions::batched_weight(int stage) const {
  return stage_batched_weight_times.empty()
             ? batched_weight_time
             : stage_batched_weight_times.at(static_cast<size_t>(stage));
}

std::string SimulationResult::deadlock_report() const {
  if (stuck.empty()) return "";
  std::vector<std::string> parts;
  for (const StuckRank& s : stuck) {
    parts.push_back(fmt::format("rank {} waits at op {} ({})", s.rank, s.op_index,
                                to_string(s.op, virtual_stages > 1)));
  }
  return fmt::format("deadlock: {}", fmt::join(parts, "; "));
}

SimulationResult simulate(const std::vector<Program>& programs, const SimulationOptions& options) {
  check(!programs.empty(), "simulate: no rank programs");
  check(options.forward_time >= 0 && options.backward_time >= 0 && options.weight_time >= 0 &&
            options.batched_weight_time >= 0 && options.send_latency >= 0 &&
            options.send_transfer >= 0,
        "simulate: op times must be >= 0");
  const Placement placement{.num_ranks = static_cast<int>(programs.size()),
                            .virtual_stages = chunks_of(programs),
                            .kind = options.placement};
  for (const auto* times : {&options.stage_forward_times, &options.stage_backward_times,
                            &options.stage_weight_times, &options.stage_batched_weight_times}) {
    check(times->empty() || std::cmp_equal(times->size(), placement.num_stages()),
          "simulate: {} per-stage times for {} stages", times->size(), placement.num_stages());
    check(std::all_of(times->begin(), times->end(), [](double t) { return t >= 0; }),
          "simulate: op times must be >= 0");
  }
  const int num_ranks = static_cast<int>(programs.size());
  // M: every chunk of every rank forwards each micro-batch once.
  const auto micro_batches = static_cast<int>(std::ranges::count_if(
      programs.front(), [](const Op& op) { return op.kind == OpKind::kForward && op.chunk == 0; }));
  std::vector<RankState> states(programs.size());
  SimulationResult result;
  result.virtual_stages = placement.virtual_stages;
  result.ranks.resize(programs.size());

  // Sends never block, so each op's time is max(previous op on its rank, message arrival):
  // running ranks round-robin until none can move gives the exact dataflow timeline.
  bool progressed = true;
  while (progressed) {
    progressed = false;
    for (int r = 0; r < num_ranks; ++r) {
      progressed =
          advance(r, programs[r], placement, micro_batches, states, result.ranks[r], options) ||
          progressed;
    }
  }

  for (int r = 0; r < num_ranks; ++r) {
    result.makespan = std::max(result.makespan, states[r].clock);
    if (states[r].next_op < programs[r].size()) {
      const std::size_t index = states[r].next_op;
      result.stuck.push_back({r, index, programs[r][index]});
      check(is_receive(programs[r][index].kind), "simulate: rank {} stuck on a non-receive", r);
    }
  }
  double busy = 0.0;
  for (const RankTimeline& timeline : result.ranks) busy += timeline.busy_time;
  result.bubble_fraction = result.makespan > 0 ? 1.0 - busy / (num_ranks * result.makespan) : 0.0;
  check_orders(states, placement.virtual_stages > 1, result);
  return result;
}

BlockProjection project_blocks(const BlockCosts& costs, int num_blocks, int num_ranks,
                               int num_micro_batches, int64_t batch_size, ScheduleKind schedule,
                               int virtual_stages) {
  const Placement placement = placement_for(schedule, num_ranks, virtual_stages);
  check(num_ranks >= 1 && virtual_stages >= 1 && num_blocks >= placement.num_stages() &&
            num_micro_batches >= 1 && batch_size > 0,
        "project_blocks: {} blocks on {} ranks of {} chunks with {} micro-batches of a batch of "
        "{}",
        num_blocks, num_ranks, virtual_stages, num_micro_batches, batch_size);
  SimulationOptions options;
  options.placement = placement.kind;
  options.send_latency = costs.transfer_s;
  std::vector<int> rank_blocks(static_cast<size_t>(num_ranks), 0);
  const int stages = placement.num_stages();
  for (int s = 0; s < stages; ++s) {
    const int blocks = num_blocks / stages + (s < num_blocks % stages ? 1 : 0);
    rank_blocks[static_cast<size_t>(placement.rank_of(s))] += blocks;
    const bool last = s == stages - 1;
    options.stage_forward_times.push_back(blocks * costs.forward_s +
                                          (last ? costs.head_forward_s : 0.0));
    options.stage_backward_times.push_back(blocks * costs.backward_s +
                                           (last ? costs.head_backward_s : 0.0));
    options.stage_weight_times.push_back(blocks * costs.weight_s);
  }
  std::vector<Program> programs;
  for (int r = 0; r < num_ranks; ++r) {
    programs.push_back(make_program(schedule, num_ranks, num_micro_batches, r, virtual_stages));
  }
  const SimulationResult result = simulate(programs, options);
  check(!result.deadlocked(), "project_blocks: {}", result.deadlock_report());
  const int most_blocks = *std::ranges::max_element(rank_blocks);
  BlockProjection projection;
  projection.pipeline_s = result.makespan;
  projection.bubble_fraction = result.bubble_fraction;
  projection.step_s = result.makespan + most_blocks * costs.update_s + costs.step_overhead_s;
  projection.samples_per_s = static_cast<double>(batch_size) / projection.step_s;
  return projection;
}

}  // namespace mpipe::plan
