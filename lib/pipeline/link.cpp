// Point-to-point transfers between neighbouring stages, each to the rank and chunk that holds it.
#include "pipeline/link.h"

#include <fmt/format.h>

#include <memory>

#include "core/error.h"
#include "plan/memory_model.h"

namespace mpipe::pipeline {
namespace {

// What a message carries, for watchdog messages: "the gradient of micro-batch 3" ("... of chunk
// 1" when ranks hold several).
std::string message_label(Direction direction, int micro_batch, int chunk, bool chunked) {
  const char* what = direction == Direction::kActivation ? "activations"
                     : direction == Direction::kGradient ? "gradient"
                                                         : "evaluation activations";
  return chunked ? fmt::format("the {} of micro-batch {} of chunk {}", what, micro_batch, chunk)
                 : fmt::format("the {} of micro-batch {}", what, micro_batch);
}

// The communication op that moves a message in `direction` (an evaluation's activations move as
// training activations do).
plan::OpKind message_op(Direction direction, bool receiving) {
  if (direction == Direction::kGradient)
    return receiving ? plan::OpKind::kRecvGrad : plan::OpKind::kSendGrad;
  return receiving ? plan::OpKind::kRecvActivation : plan::OpKind::kSendActivation;
}

}  // namespace

Link::Link(const comm::Communicator& pipeline, int rank, plan::Placement placement,
           comm::TagSpace tags)
    : pipeline_(pipeline), rank_(rank), placement_(placement), tags_(tags) {}

int Link::tag(Direction direction, int64_t round, int micro_batch, int receiving_chunk) const {
  return tags_.message({.round = round,
                        .chunk = receiving_chunk,
                        .micro_batch = micro_batch,
                        .kind = static_cast<int>(direction)});
}

plan::Peer Link::peer(Direction direction, int chunk, bool receiving) const {
  return plan::peer_of({.kind = message_op(direction, receiving), .micro_batch = 0, .chunk = chunk},
                       rank_, placement_);
}

void Link::post_recv(Direction direction, int64_t round, int micro_batch, int chunk, Shape shape) {
  const RecvKey key{.direction = direction, .chunk = chunk, .micro_batch = micro_batch};
  check(!receives_.contains(key), "receive of micro-batch {} of chunk {} posted twice", micro_batch,
        chunk);
  PendingRecv pending{.buffer = Tensor(std::move(shape)), .request = {}};
  pending.request =
      pipeline_.irecv(pending.buffer.span(), peer(direction, chunk, true).rank,
                      tag(direction, round, micro_batch, chunk),
                      message_label(direction, micro_batch, chunk, placement_.virtual_stages > 1));
  receives_.emplace(key, std::move(pending));
}

Tensor Link::wait_recv(Direction direction, int micro_batch, int chunk) {
  auto it = receives_.find({.direction = direction, .chunk = chunk, .micro_batch = micro_batch});
  check(it != receives_.end(), "waiting for micro-batch {} of chunk {} that was never posted",
        micro_batch, chunk);
  PendingRecv pending = std::move(it->second);
  receives_.erase(it);
  pending.request.wait();  // throws unless exactly the expected number of values arrived
  poll_sends();
  return std::move(pending.buffer);
}

void Link::send(Direction direction, int64_t round, int micro_batch, int chunk, Tensor tensor) {
  auto owned = std::make_shared<const Tensor>(std::move(tensor));
  const std::span<const float> data = owned->span();
  if (direction != Direction::kEvalActivation) {
    training_bytes_sent_ += static_cast<int64_t>(data.size_bytes());
  }
  // The tag carries the chunk that receives the message.
  const plan::Peer to = peer(direction, chunk, false);
  sends_.push_back(
      {.request = pipeline_.isend(
           data, owned, to.rank, tag(direction, round, micro_batch, to.chunk),
           message_label(direction, micro_batch, chunk, placement_.virtual_stages > 1)),
       .tensor = owned,
       .direction = direction,
       .micro_batch = micro_batch,
       .chunk = chunk,
       .bytes = static_cast<int64_t>(data.size_bytes())});
  poll_sends();
  // Bounded, so a fast stage does not pile up sent tensors for a slow neighbour.
  while (sends_.size() > static_cast<size_t>(plan::kSendsInFlight)) release_oldest();
}

void Link::release_oldest() {
  PendingSend& send = sends_.front();
  if (!send.completed) {
    send.request.wait();
    sent(send);
  }
  sends_.pop_front();
  ++released_;
}

void Link::release_sends(int count) {
  while (released_ < count && !sends_.empty()) release_oldest();
}

void Link::sent(PendingSend& send) {
  if (trace_ == nullptr || !trace_->recording() || send.direction == Direction::kEvalActivation) {
    return;
  }
  trace_->instant(send.direction == Direction::kGradient ? log::TraceKind::kSendGradientDone
                                                         : log::TraceKind::kSendActivationDone,
                  send.micro_batch, log::TraceRecorder::Clock::now(), send.chunk, send.bytes);
}

void Link::poll_sends() {
  for (PendingSend& send : sends_) {
    if (send.completed) continue;
    if (!send.request.test()) break;
    send.completed = true;
    sent(send);
  }
}

void Link::progress() {
  for (auto& [key, pending] : receives_) {
    if (!pending.request.test()) break;  // one MPI_Test drives the progress of every transfer
  }
  poll_sends();
}

void Link::wait_sends() {
  while (!sends_.empty()) release_oldest();
  released_ = 0;
}

}  // namespace mpipe::pipeline
