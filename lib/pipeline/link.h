// Link: a rank's nonblocking connections to the ranks that hold its chunks' neighbouring stages.
// Receives are posted before they are needed; a send's tensor is held until the link releases
// it, at fixed points (never merely because MPI completed it), so what it holds is known.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <utility>

#include "comm/communicator.h"
#include "comm/tag_space.h"
#include "core/tensor.h"
#include "log/trace_recorder.h"
#include "plan/placement.h"

namespace mpipe::pipeline {

// What a message carries: activations flow from stage s to s+1, gradients back to s-1.
enum class Direction { kActivation = 0, kGradient = 1, kEvalActivation = 2 };
inline constexpr int kDirections = 3;  // the kinds of message in a comm::TagSpace

class Link {
 public:
  // Rank `rank` of the pipeline group `pipeline`, holding chunk c's stage
  // placement.stage_of(rank, c).
  // Each message's tag is `tags`' for (round, the receiving chunk, micro-batch, direction); a round
  // is a training step or an evaluation batch.
  Link(const comm::Communicator& pipeline, int rank, plan::Placement placement,
       comm::TagSpace tags);

  // Posts chunk `chunk`'s receive of micro-batch `micro_batch` of `round`: activations come from
  // the stage before the chunk's, gradients from the stage after it (plan::peer_of). `shape`
  // is what must arrive.
  void post_recv(Direction direction, int64_t round, int micro_batch, int chunk, Shape shape);
  // Waits for a posted receive; throws if the message does not have the expected size
  // (the shape check on arrival: both sides derive the shape from the model plan). Like every
  // wait here, it has the watchdog's deadline (comm::WatchdogTimeout names the micro-batch,
  // the direction and the peer).
  Tensor wait_recv(Direction direction, int micro_batch, int chunk);
  // Sends chunk `chunk`'s `tensor` to the stage after it (activations) or before it (gradients)
  // without copying it: the link holds it until it releases the send, which it does here to the
  // oldest while more than plan::kSendsInFlight are held (waiting for it to complete).
  void send(Direction direction, int64_t round, int micro_batch, int chunk, Tensor tensor);
  // Releases the oldest sends until `count` of those issued since the last wait_sends are
  // released: completes each (waiting, under the watchdog's deadline, for one not yet complete)
  // and frees its tensor. Executor::train_step calls it after each op with send_releases's count.
  void release_sends(int count);
  // Drives MPI's progress on the pending transfers without waiting (Open MPI moves a posted
  // message only while some call into MPI is made), noting the sends that completed (their
  // tensors stay held until released). Cheap: one MPI_Test per pending request at most.
  void progress();
  // Completes and releases every pending send (end of a step or an evaluation).
  void wait_sends();
  // Bytes of the training messages (activations and gradients) this link has sent so far.
  int64_t training_bytes_sent() const { return training_bytes_sent_; }
  // While `trace` (null: none) is recording, each training send's completion is an instant
  // event, at the moment this link saw it complete (an upper bound: it tests at each layer
  // boundary).
  void set_trace(log::TraceRecorder* trace) { trace_ = trace; }

 private:
  struct PendingRecv {
    Tensor buffer;
    comm::Request request;
  };
  // The other end of chunk `chunk`'s message in `direction`, received or sent.
  plan::Peer peer(Direction direction, int chunk, bool receiving) const;
  int tag(Direction direction, int64_t round, int micro_batch, int receiving_chunk) const;
  // Notes the sends that completed (in order, up to the first that has not), after every send and
  // completed receive: while tracing, each completion is recorded when first seen.
  void poll_sends();

  const comm::Communicator& pipeline_;
  int rank_;
  plan::Placement placement_;
  comm::TagSpace tags_;
  struct RecvKey {
    Direction direction;
    int chunk;
    int micro_batch;
    auto operator<=>(const RecvKey&) const = default;
  };
  std::map<RecvKey, PendingRecv> receives_;
  struct PendingSend {
    comm::Request request;
    std::shared_ptr<const Tensor> tensor;  // held until released (counted by the memory account)
    bool completed = false;
    Direction direction;
    int micro_batch;
    int chunk;      // the sending chunk
    int64_t bytes;  // the message's payload
  };
  // Records a send's completion while tracing.
  void sent(PendingSend& send);
  // Completes the oldest send and frees its tensor.
  void release_oldest();
  std::deque<PendingSend> sends_;
  int released_ = 0;  // sends released since the last wait_sends
  int64_t training_bytes_sent_ = 0;
  log::TraceRecorder* trace_ = nullptr;
};

}  // namespace mpipe::pipeline
