// Adam and AdamW with PyTorch's torch.optim.Adam / AdamW semantics: Adam adds L2 weight decay
// to the gradient, AdamW decays the parameters directly (decoupled weight decay).
#pragma once

#include <vector>

#include "core/tensor.h"
#include "optim/optimizer.h"

namespace mpipe::optim {

class Adam final : public Optimizer {
 public:
  Adam(const OptimizerConfig& config, int64_t owned, bool decoupled_weight_decay);

  std::vector<std::pair<std::string, std::span<float>>> state() override;

 private:
  void update(std::span<float> params, std::span<const float> grads, double lr, int64_t step_number,
              const DecaySegment& segment) override;

  double beta1_;
  double beta2_;
  double eps_;
  double weight_decay_;
  bool decoupled_weight_decay_;
  // Tensors, so that the memory account counts them.
  Tensor exp_avg_;     // [owned]: first moment
  Tensor exp_avg_sq_;  // [owned]: second moment
};

}  // namespace mpipe::optim
