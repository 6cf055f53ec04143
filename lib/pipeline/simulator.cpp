// Timeline simulator: dataflow execution of all stage programs in simulated time.
#include "pipeline/simulator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "pipeline/schedule.h"

namespace mpipe::pipeline {

namespace {

// Messages waiting at one stage from one neighbour: micro-batch -> arrival times.
using Mailbox = std::multimap<int, double>;

// Everything the simulation tracks for one stage.
struct StageState {
  std::size_t next_op = 0;
  double clock = 0.0;
  double link_free = 0.0;  // when the stage's outgoing link has sent its earlier messages
  Mailbox activations_in;  // from stage s-1
  Mailbox grads_in;        // from stage s+1
  std::vector<int> sent_activations, received_activations;
  std::vector<int> sent_grads, received_grads;
  std::set<int> in_flight;
  std::set<int> pending_weights;  // past I, before W
};

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
    default:
      throw Error(fmt::format("simulate: {} is not a compute op", to_string(Op{kind, 0})));
  }
}

bool is_receive(OpKind kind) {
  return kind == OpKind::kRecvActivation || kind == OpKind::kRecvGrad;
}

// The stage an op talks to, checked to exist.
int peer_of(const Op& op, int stage, int num_stages, std::size_t op_index) {
  const bool towards_next = op.kind == OpKind::kSendActivation || op.kind == OpKind::kRecvGrad;
  const int peer = towards_next ? stage + 1 : stage - 1;
  check(peer >= 0 && peer < num_stages, "simulate: stage {} op {} ({}) has no stage {} to talk to",
        stage, op_index, to_string(op), peer);
  return peer;
}

// Runs ops of `stage` until it finishes or waits on a message not yet sent. Returns true if it
// ran at least one op.
bool advance(int stage, const Program& program, std::vector<StageState>& states,
             StageTimeline& timeline, const SimulationOptions& options) {
  StageState& self = states[stage];
  const int num_stages = static_cast<int>(states.size());
  bool progressed = false;
  while (self.next_op < program.size()) {
    const Op& op = program[self.next_op];
    switch (op.kind) {
      case OpKind::kForward:
      case OpKind::kBackward:
      case OpKind::kBackwardInput:
      case OpKind::kBackwardWeight: {
        const double duration = compute_time(op.kind, stage, options);
        timeline.compute.push_back({op, self.clock, self.clock + duration});
        timeline.busy_time += duration;
        self.clock += duration;
        if (op.kind == OpKind::kForward) {
          self.in_flight.insert(op.micro_batch);
        } else if (op.kind == OpKind::kBackwardWeight) {
          self.pending_weights.erase(op.micro_batch);
        } else {
          self.in_flight.erase(op.micro_batch);
          if (op.kind == OpKind::kBackwardInput) self.pending_weights.insert(op.micro_batch);
        }
        timeline.peak_in_flight =
            std::max(timeline.peak_in_flight, static_cast<int>(self.in_flight.size()));
        timeline.peak_pending_weights =
            std::max(timeline.peak_pending_weights, static_cast<int>(self.pending_weights.size()));
        break;
      }
      case OpKind::kSendActivation:
      case OpKind::kSendGrad: {
        StageState& peer = states[peer_of(op, stage, num_stages, self.next_op)];
        self.link_free = std::max(self.clock, self.link_free) + options.send_transfer;
        const double arrival = self.link_free + options.send_latency;
        if (op.kind == OpKind::kSendActivation) {
          peer.activations_in.emplace(op.micro_batch, arrival);
          self.sent_activations.push_back(op.micro_batch);
        } else {
          peer.grads_in.emplace(op.micro_batch, arrival);
          self.sent_grads.push_back(op.micro_batch);
        }
        break;
      }
      case OpKind::kRecvActivation:
      case OpKind::kRecvGrad: {
        peer_of(op, stage, num_stages, self.next_op);
        const bool activation = op.kind == OpKind::kRecvActivation;
        Mailbox& mailbox = activation ? self.activations_in : self.grads_in;
        auto message = mailbox.find(op.micro_batch);
        if (message == mailbox.end()) return progressed;
        self.clock = std::max(self.clock, message->second);
        mailbox.erase(message);
        (activation ? self.received_activations : self.received_grads).push_back(op.micro_batch);
        break;
      }
    }
    ++self.next_op;
    progressed = true;
  }
  return progressed;
}

void check_orders(const std::vector<StageState>& states, SimulationResult& result) {
  for (std::size_t s = 0; s + 1 < states.size(); ++s) {
    if (states[s].sent_activations != states[s + 1].received_activations) {
      result.order_mismatches.push_back(
          fmt::format("stage {} sends activations in order [{}] but stage {} receives [{}]", s,
                      fmt::join(states[s].sent_activations, " "), s + 1,
                      fmt::join(states[s + 1].received_activations, " ")));
    }
    if (states[s + 1].sent_grads != states[s].received_grads) {
      result.order_mismatches.push_back(fmt::format(
          "stage {} sends gradients in order [{}] but stage {} receives [{}]", s + 1,
          fmt::join(states[s + 1].sent_grads, " "), s, fmt::join(states[s].received_grads, " ")));
    }
  }
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

std::string SimulationResult::deadlock_report() const {
  if (stuck.empty()) return "";
  std::vector<std::string> parts;
  for (const StuckStage& s : stuck) {
    parts.push_back(
        fmt::format("stage {} waits at op {} ({})", s.stage, s.op_index, to_string(s.op)));
  }
  return fmt::format("deadlock: {}", fmt::join(parts, "; "));
}

SimulationResult simulate(const std::vector<Program>& programs, const SimulationOptions& options) {
  check(!programs.empty(), "simulate: no stage programs");
  check(options.forward_time >= 0 && options.backward_time >= 0 && options.weight_time >= 0 &&
            options.send_latency >= 0 && options.send_transfer >= 0,
        "simulate: op times must be >= 0");
  for (const auto* times :
       {&options.stage_forward_times, &options.stage_backward_times, &options.stage_weight_times}) {
    check(times->empty() || times->size() == programs.size(),
          "simulate: {} per-stage times for {} stages", times->size(), programs.size());
    check(std::all_of(times->begin(), times->end(), [](double t) { return t >= 0; }),
          "simulate: op times must be >= 0");
  }
  const int num_stages = static_cast<int>(programs.size());
  std::vector<StageState> states(programs.size());
  SimulationResult result;
  result.stages.resize(programs.size());

  // Sends never block, so each op's time is max(previous op on its stage, message arrival):
  // running stages round-robin until none can move gives the exact dataflow timeline.
  bool progressed = true;
  while (progressed) {
    progressed = false;
    for (int s = 0; s < num_stages; ++s) {
      progressed = advance(s, programs[s], states, result.stages[s], options) || progressed;
    }
  }

  for (int s = 0; s < num_stages; ++s) {
    result.makespan = std::max(result.makespan, states[s].clock);
    if (states[s].next_op < programs[s].size()) {
      const std::size_t index = states[s].next_op;
      result.stuck.push_back({s, index, programs[s][index]});
      check(is_receive(programs[s][index].kind), "simulate: stage {} stuck on a non-receive", s);
    }
  }
  double busy = 0.0;
  for (const StageTimeline& timeline : result.stages) busy += timeline.busy_time;
  result.bubble_fraction = result.makespan > 0 ? 1.0 - busy / (num_stages * result.makespan) : 0.0;
  check_orders(states, result);
  return result;
}

BlockProjection project_blocks(const BlockCosts& costs, int num_blocks, int num_stages,
                               int num_micro_batches, int64_t batch_size, ScheduleKind schedule) {
  check(num_stages >= 1 && num_blocks >= num_stages && num_micro_batches >= 1 && batch_size > 0,
        "project_blocks: {} blocks on {} stages with {} micro-batches of a batch of {}", num_blocks,
        num_stages, num_micro_batches, batch_size);
  SimulationOptions options;
  options.send_latency = costs.transfer_s;
  std::vector<Program> programs;
  int most_blocks = 0;
  for (int s = 0; s < num_stages; ++s) {
    const int blocks = num_blocks / num_stages + (s < num_blocks % num_stages ? 1 : 0);
    most_blocks = std::max(most_blocks, blocks);
    const bool last = s == num_stages - 1;
    options.stage_forward_times.push_back(blocks * costs.forward_s +
                                          (last ? costs.head_forward_s : 0.0));
    options.stage_backward_times.push_back(blocks * costs.backward_s +
                                           (last ? costs.head_backward_s : 0.0));
    options.stage_weight_times.push_back(blocks * costs.weight_s);
    programs.push_back(make_program(schedule, num_stages, num_micro_batches, s));
  }
  const SimulationResult result = simulate(programs, options);
  BlockProjection projection;
  projection.pipeline_s = result.makespan;
  projection.bubble_fraction = result.bubble_fraction;
  projection.step_s = result.makespan + most_blocks * costs.update_s + costs.step_overhead_s;
  projection.samples_per_s = static_cast<double>(batch_size) / projection.step_s;
  return projection;
}

}  // namespace mpipe::pipeline
