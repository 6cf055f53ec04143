// Optimizer: one synchronous update of a stage's parameter buffer from its summed gradients.
// Updates are element-wise, so each parameter's trajectory is the same however the parameters
// are split across stages.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "optim/optimizer_config.h"

namespace mpipe::optim {

// Parameters [begin, end) of the flat buffer an optimizer steps.
struct ParamRange {
  int64_t begin = 0;
  int64_t end = 0;
};

// A run of parameters that weight decay applies to, or not.
struct DecaySegment {
  ParamRange range;
  bool decays = true;
  bool operator==(const DecaySegment& other) const {
    return range.begin == other.range.begin && range.end == other.range.end &&
           decays == other.decays;
  }
};

// [0, num_params) cut into alternating runs, in order: those in `exempt` (any order; they may
// touch or overlap) do not decay, the rest do. One segment when nothing is exempt.
std::vector<DecaySegment> decay_segments(int64_t num_params, std::vector<ParamRange> exempt);

class Optimizer {
 public:
  // An SGD, Adam or AdamW optimizer for `num_params` parameters, its state zeroed; the
  // parameters in `decay_exempt` are updated without weight decay (optimizer.decay_exempt).
  // With `owned` (optimizer.shard_across_replicas: this replica's part, optim/replica_shard.h)
  // it updates and holds state for those parameters alone; else for all of them.
  static std::unique_ptr<Optimizer> make(const OptimizerConfig& config, int64_t num_params,
                                         const std::vector<ParamRange>& decay_exempt = {},
                                         std::optional<ParamRange> owned = std::nullopt);

  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update with learning rate `lr` of the owned parameters, segment by segment; counts the
  // step (Adam's bias correction uses it). Element-wise, so cutting it into segments (or
  // shards) changes no value; the other parameters are left as they are.
  // params, grads: [num_params]
  void step(std::span<float> params, std::span<const float> grads, double lr);

  // Named state slots ("momentum" for SGD, "exp_avg" and "exp_avg_sq" for Adam and AdamW),
  // each of the owned parameters ([owned().end - owned().begin]), writable so a checkpoint can
  // restore them.
  virtual std::vector<std::pair<std::string, std::span<float>>> state() = 0;

  int64_t num_params() const { return num_params_; }
  // The parameters it updates and holds state for: [0, num_params) unless made with `owned`.
  ParamRange owned() const { return owned_; }
  int64_t steps_taken() const { return steps_taken_; }
  void set_steps_taken(int64_t steps);

 protected:
  // `owned`: the number of parameters it holds state for.
  explicit Optimizer(int64_t owned) : num_params_(owned), owned_{0, owned} {}
  // Applies update number `step_number` (1-based) to the parameters of `segment`, with weight
  // decay when it decays and as if optimizer.weight_decay were 0 otherwise. params, grads and
  // the segment count from the first owned parameter.
  virtual void update(std::span<float> params, std::span<const float> grads, double lr,
                      int64_t step_number, const DecaySegment& segment) = 0;

 private:
  int64_t num_params_;
  ParamRange owned_;
  int64_t steps_taken_ = 0;
  std::vector<DecaySegment> segments_;  // cover owned_, counted from owned_.begin
};

}  // namespace mpipe::optim
