// Point-to-point transfers between neighbouring stages.
#include "pipeline/link.h"

#include <fmt/format.h>

#include <memory>

#include "core/error.h"
#include "model/memory_model.h"

namespace mpipe::pipeline {
namespace {

// What a message carries, for watchdog messages: "the gradient of micro-batch 3".
std::string message_label(Direction direction, int micro_batch) {
  const char* what = direction == Direction::kActivation ? "activations"
                     : direction == Direction::kGradient ? "gradient"
                                                         : "evaluation activations";
  return fmt::format("the {} of micro-batch {}", what, micro_batch);
}

}  // namespace

Link::Link(const comm::Communicator& pipeline, int stage, int num_stages, comm::TagSpace tags)
    : pipeline_(pipeline), stage_(stage), num_stages_(num_stages), tags_(tags) {}

int Link::tag(Direction direction, int64_t round, int micro_batch) const {
  return tags_.message({.round = round,
                        .chunk = 0,
                        .micro_batch = micro_batch,
                        .kind = static_cast<int>(direction)});
}

int Link::peer(Direction direction, bool receiving) const {
  // Activations move forward (s-1 → s → s+1), gradients backward.
  bool from_previous = (direction != Direction::kGradient) == receiving;
  int peer = from_previous ? stage_ - 1 : stage_ + 1;
  check(peer >= 0 && peer < num_stages_, "stage {} has no neighbour {}", stage_, peer);
  return peer;
}

void Link::post_recv(Direction direction, int64_t round, int micro_batch, Shape shape) {
  auto key = std::make_pair(direction, micro_batch);
  check(!receives_.contains(key), "receive of micro-batch {} posted twice", micro_batch);
  PendingRecv pending{.buffer = Tensor(std::move(shape)), .request = {}};
  pending.request =
      pipeline_.irecv(pending.buffer.span(), peer(direction, true),
                      tag(direction, round, micro_batch), message_label(direction, micro_batch));
  receives_.emplace(key, std::move(pending));
}

Tensor Link::wait_recv(Direction direction, int micro_batch) {
  auto it = receives_.find({direction, micro_batch});
  check(it != receives_.end(), "waiting for micro-batch {} that was never posted", micro_batch);
  PendingRecv pending = std::move(it->second);
  receives_.erase(it);
  pending.request.wait();  // throws unless exactly the expected number of values arrived
  retire_sends();
  return std::move(pending.buffer);
}

void Link::send(Direction direction, int64_t round, int micro_batch, Tensor tensor) {
  auto owned = std::make_shared<const Tensor>(std::move(tensor));
  const std::span<const float> data = owned->span();
  sends_.push_back({.request = pipeline_.isend(data, std::move(owned), peer(direction, false),
                                               tag(direction, round, micro_batch),
                                               message_label(direction, micro_batch)),
                    .direction = direction,
                    .micro_batch = micro_batch});
  retire_sends();
  // Bounded, so a fast stage does not pile up sent tensors for a slow neighbour.
  while (sends_.size() > static_cast<size_t>(model::kSendsInFlight)) {
    sends_.front().request.wait();
    sent(sends_.front());
    sends_.pop_front();
  }
}

void Link::sent(PendingSend& send) {
  if (trace_ == nullptr || !trace_->recording() || send.direction == Direction::kEvalActivation) {
    return;
  }
  trace_->instant(send.direction == Direction::kGradient ? log::TraceKind::kSendGradientDone
                                                         : log::TraceKind::kSendActivationDone,
                  send.micro_batch, log::TraceRecorder::Clock::now());
}

void Link::retire_sends() {
  while (!sends_.empty() && sends_.front().request.test()) {
    sent(sends_.front());
    sends_.pop_front();
  }
}

void Link::progress() {
  for (auto& [key, pending] : receives_) {
    if (!pending.request.test()) break;  // one MPI_Test drives the progress of every transfer
  }
  retire_sends();
}

void Link::wait_sends() {
  for (PendingSend& send : sends_) {
    send.request.wait();
    sent(send);
  }
  sends_.clear();
}

}  // namespace mpipe::pipeline
