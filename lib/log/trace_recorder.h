// TraceRecorder: one rank's timeline of the traced steps (log.trace_steps), kept in memory until
// the run gathers it into trace.json; while no step is traced it records nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mpipe::log {

// What an event shows. The first group is the compute track, the rest the communication track.
enum class TraceKind {
  kForward,             // F<m>
  kBackward,            // B<m> (with its recompute, which also has its own nested events)
  kRecompute,           // R<m>: a recomputed forward inside B<m>
  kWeightGrad,          // W: the step's batched weight gradients, or a W<m> op (zb_h1, zbv)
  kWeightGroup,         // WB<m>: the product of a group ending at micro-batch m (grouped)
  kOptimizer,           // the gradient norm, clipping and the optimizer update
  kEvaluation,          // an evaluation after the step
  kCheckpoint,          // a checkpoint written after the step
  kSendActivation,      // SA<m>: posting the send of micro-batch m's output
  kSendGradient,        // SG<m>: posting the send of micro-batch m's input gradient
  kSendActivationDone,  // SA<m> done: the send was seen complete (an instant)
  kSendGradientDone,    // SG<m> done
  kRecvActivation,      // RA<m>: waiting for micro-batch m's input
  kRecvGradient,        // RG<m>: waiting for micro-batch m's output gradient
  kAllreduce,           // waiting for the data-parallel gradient allreduce
  kLossAllreduce,       // the world allreduce of the step's loss and finiteness
};

// True for the kinds drawn on the compute track.
bool is_compute(TraceKind kind);
// True for the kinds that mark a moment (no duration).
bool is_instant(TraceKind kind);
// "F3", "SA3 done", "optimizer" (micro_batch < 0: an event of the whole step); with a chunk
// (>= 0), after a dot as the programs print it: "F3.1", "SA3.1 done", "W.1" (chunk 1's batched
// weight gradients).
std::string trace_name(TraceKind kind, int micro_batch, int chunk = -1);

struct TraceEvent {
  TraceKind kind = TraceKind::kForward;
  int micro_batch = -1;  // -1: not of one micro-batch
  int64_t step = 0;      // the traced step, counted from 1
  double start_s = 0.0;  // steady-clock seconds (TraceRecorder::seconds)
  double end_s = 0.0;    // == start_s for an instant
  int chunk = -1;     // the rank's model chunk the op ran for (pipeline.virtual_stages); -1: none
  int64_t bytes = 0;  // a message's payload (SA, SG, RA, RG and the sends' ends); 0: none
};

class TraceRecorder {
 public:
  using Clock = std::chrono::steady_clock;
  // A time point as the events hold it: seconds of the steady clock.
  static double seconds(Clock::time_point time) {
    return std::chrono::duration<double>(time.time_since_epoch()).count();
  }

  // Records the events that follow as step `step`'s (counted from 1); 0 stops recording.
  void record_step(int64_t step) { step_ = step; }
  // The one test callers make before taking a time or recording: false outside traced steps.
  bool recording() const { return step_ > 0; }

  // `chunk` and `bytes` as TraceEvent has them.
  void span(TraceKind kind, int micro_batch, Clock::time_point start, Clock::time_point end,
            int chunk = -1, int64_t bytes = 0);
  void instant(TraceKind kind, int micro_batch, Clock::time_point at, int chunk = -1,
               int64_t bytes = 0);

  // Recomputes inside a backward op: call backward_began at the op's start, layer_ended after
  // each layer's recomputed forward (recompute_forward) or backward, and backward_ended at the
  // op's end, which records B<m>. The time from the previous layer's end (or the op's start) to
  // a recomputed forward's end is a recompute; consecutive recomputed layers make one R<m>.
  // layer_ended outside a backward op does nothing.
  void backward_began(int micro_batch, Clock::time_point start, int chunk = -1);
  void layer_ended(bool recompute_forward, Clock::time_point now);
  void backward_ended(Clock::time_point end);

  const std::vector<TraceEvent>& events() const { return events_; }
  void clear() { events_.clear(); }

 private:
  int64_t step_ = 0;
  std::vector<TraceEvent> events_;
  // The backward op in progress (-1: none): its micro-batch, its start, where its last layer
  // ended, and the recompute event a following recomputed layer extends (none: kNoEvent).
  static constexpr size_t kNoEvent = static_cast<size_t>(-1);
  int backward_micro_batch_ = -1;
  int backward_chunk_ = -1;
  Clock::time_point backward_start_;
  double last_layer_end_s_ = 0.0;
  size_t open_recompute_ = kNoEvent;
};

// While it lives, the time from its construction to its end is one `kind` event of the whole
// step, if the recorder was recording when it began.
class TraceScope {
 public:
  TraceScope(TraceRecorder& recorder, TraceKind kind);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  TraceRecorder& recorder_;
  TraceKind kind_;
  bool active_;
  TraceRecorder::Clock::time_point start_;
};

}  // namespace mpipe::log
