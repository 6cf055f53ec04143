// Sgd: stochastic gradient descent with optional (Nesterov) momentum and L2 weight decay,
// with PyTorch's torch.optim.SGD semantics (no dampening).
#pragma once

#include <vector>

#include "core/tensor.h"
#include "optim/optimizer.h"

namespace mpipe::optim {

class Sgd final : public Optimizer {
 public:
  Sgd(const OptimizerConfig& config, int64_t owned);

  std::vector<std::pair<std::string, std::span<float>>> state() override;

 private:
  void update(std::span<float> params, std::span<const float> grads, double lr, int64_t step_number,
              const DecaySegment& segment) override;

  float momentum_;
  bool nesterov_;
  float weight_decay_;
  Tensor momentum_buffer_;  // [owned]; empty when momentum is 0 (a Tensor: counted)
};

}  // namespace mpipe::optim
