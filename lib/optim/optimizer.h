// Optimizer: one synchronous update of a stage's parameter buffer from its summed gradients.
// Updates are element-wise, so each parameter's trajectory is the same however the parameters
// are split across stages.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "optim/optimizer_config.h"

namespace mpipe::optim {

class Optimizer {
 public:
  // An SGD, Adam or AdamW optimizer for `num_params` parameters, its state zeroed.
  static std::unique_ptr<Optimizer> make(const OptimizerConfig& config, int64_t num_params);

  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update with learning rate `lr`; counts the step (Adam's bias correction uses it).
  // params, grads: [num_params]
  void step(std::span<float> params, std::span<const float> grads, double lr);

  // Named state slots ("momentum" for SGD, "exp_avg" and "exp_avg_sq" for Adam and AdamW),
  // each [num_params], writable so a checkpoint can restore them.
  virtual std::vector<std::pair<std::string, std::span<float>>> state() = 0;

  int64_t num_params() const { return num_params_; }
  int64_t steps_taken() const { return steps_taken_; }
  void set_steps_taken(int64_t steps);

 protected:
  explicit Optimizer(int64_t num_params) : num_params_(num_params) {}
  // Applies update number `step_number` (1-based).
  virtual void update(std::span<float> params, std::span<const float> grads, double lr,
                      int64_t step_number) = 0;

 private:
  int64_t num_params_;
  int64_t steps_taken_ = 0;
};

}  // namespace mpipe::optim
