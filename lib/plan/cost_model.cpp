// Per-layer FLOPs and bytes, assembled from what each layer reports it needs (nn::LayerNeeds,
// stated beside its forward and backward in lib/nn; tests/model/cost_model_test.cpp runs every
// kind and checks the prediction against the real forward).
#include "plan/cost_model.h"

#include <cmath>
#include <numeric>

namespace mpipe::plan {
namespace {

constexpr double kFloat = sizeof(float);

}  // namespace

double LayerCost::kept_bytes(int64_t rows) const {
  const auto r = static_cast<double>(rows);
  const double packed = std::ceil(r * saved_packed_bytes / kFloat) * kFloat;
  return r * saved_bytes + saved_fixed_bytes + packed;
}

double LayerCost::kept_block_bytes(int64_t rows, const AllocatorModel& allocator) const {
  const auto r = static_cast<double>(rows);
  double bytes = allocator.block_bytes(std::ceil(r * saved_packed_bytes / kFloat) * kFloat);
  // (A cost made by hand may give the sums alone: each is then one tensor.)
  const auto or_sum = [](const std::vector<double>& tensors, double sum) {
    return tensors.empty() && sum > 0.0 ? std::vector<double>{sum} : tensors;
  };
  for (double t : or_sum(saved_tensor_bytes, saved_bytes)) bytes += allocator.block_bytes(r * t);
  for (double t : or_sum(saved_fixed_tensor_bytes, saved_fixed_bytes)) {
    bytes += allocator.block_bytes(t);
  }
  return bytes;
}

double LayerCost::forward_block_bytes(int64_t rows, bool consumed,
                                      const AllocatorModel& allocator) const {
  const auto r = static_cast<double>(rows);
  const double input = consumed && keeps_consumed_input ? 0.0 : input_bytes;
  return allocator.block_bytes(r * input) + allocator.block_bytes(r * output_bytes) +
         allocator.blocks_bytes(r * forward_workspace_bytes, r * smallest_temporary_bytes);
}

double LayerCost::evaluation_block_bytes(int64_t rows, const AllocatorModel& allocator) const {
  const auto r = static_cast<double>(rows);
  return allocator.block_bytes(r * input_bytes) + allocator.block_bytes(r * output_bytes) +
         allocator.blocks_bytes(r * evaluation_workspace_bytes, r * smallest_temporary_bytes);
}

double LayerCost::backward_block_bytes(int64_t rows, const AllocatorModel& allocator) const {
  return gradient_block_bytes(rows, workspace_bytes, workspace_fixed_tensor_bytes, allocator);
}

double LayerCost::backward_input_block_bytes(int64_t rows, const AllocatorModel& allocator) const {
  if (!splits_backward) return backward_block_bytes(rows, allocator);
  return gradient_block_bytes(rows, input_workspace_bytes, input_workspace_fixed_tensor_bytes,
                              allocator);
}

double LayerCost::gradient_block_bytes(int64_t rows, double workspace,
                                       const std::vector<double>& fixed,
                                       const AllocatorModel& allocator) const {
  const auto r = static_cast<double>(rows);
  const double input_gradient = has_input_gradient ? input_bytes : 0.0;
  double bytes = allocator.block_bytes(r * input_gradient) +
                 allocator.block_bytes(r * output_bytes) +
                 allocator.blocks_bytes(r * workspace, r * smallest_temporary_bytes);
  for (double t : fixed) bytes += allocator.block_bytes(t);
  return bytes;
}

double LayerCost::forward_bytes(int64_t rows, bool consumed) const {
  const double input = consumed && keeps_consumed_input ? 0.0 : input_bytes;
  return static_cast<double>(rows) * (input + output_bytes + forward_workspace_bytes);
}

double LayerCost::backward_bytes(int64_t rows) const {
  const double input_gradient = has_input_gradient ? input_bytes : 0.0;
  const double fixed = std::accumulate(workspace_fixed_tensor_bytes.begin(),
                                       workspace_fixed_tensor_bytes.end(), 0.0);
  return static_cast<double>(rows) * (input_gradient + output_bytes + workspace_bytes) + fixed;
}

double LayerCost::weight_work_block_bytes(int64_t rows, const AllocatorModel& allocator) const {
  if (!splits_backward) return 0.0;
  const auto r = static_cast<double>(rows);
  double blocks = allocator.block_bytes(r * output_bytes);
  for (double bytes : weight_work_tensor_bytes) blocks += allocator.block_bytes(r * bytes);
  for (double bytes : weight_work_fixed_tensor_bytes) blocks += allocator.block_bytes(bytes);
  return blocks;
}

double LayerCost::forward_traffic_bytes() const {
  return stated_forward_traffic_bytes.value_or(input_bytes + output_bytes + saved_bytes +
                                               saved_packed_bytes);
}

double LayerCost::backward_traffic_bytes() const {
  // Reads what was saved and the output gradient, writes the input gradient.
  return stated_backward_traffic_bytes.value_or(saved_bytes + saved_packed_bytes + output_bytes +
                                                (index == 0 ? 0.0 : input_bytes));
}

LayerCost cost_of(const model::LayerPlan& plan) {
  const nn::LayerNeeds& needs = plan.needs;
  return LayerCost{
      .index = plan.index,
      .kind = plan.kind,
      .forward_flops = plan.forward_flops,
      .backward_flops = needs.backward_flops,
      .num_params = plan.num_params,
      .param_bytes = static_cast<double>(plan.param_bytes),
      .buffer_bytes = static_cast<double>(plan.buffer_bytes),
      .input_bytes = static_cast<double>(plan.input.numel()) * kFloat,
      .output_bytes = static_cast<double>(plan.output_bytes),
      .saved_bytes = needs.kept_bytes_per_example(),
      .saved_fixed_bytes = std::accumulate(needs.kept_fixed_tensor_bytes.begin(),
                                           needs.kept_fixed_tensor_bytes.end(), 0.0),
      .saved_packed_bytes = needs.kept_packed_bytes,
      .saved_tensor_bytes = needs.kept_tensor_bytes,
      .saved_fixed_tensor_bytes = needs.kept_fixed_tensor_bytes,
      .workspace_bytes = needs.backward_temporary_bytes,
      .forward_workspace_bytes = needs.forward_temporary_bytes,
      .evaluation_workspace_bytes =
          needs.evaluation_temporary_bytes.value_or(needs.forward_temporary_bytes),
      .smallest_temporary_bytes = needs.smallest_temporary_bytes,
      .workspace_fixed_tensor_bytes = needs.backward_fixed_tensor_bytes,
      .keeps_consumed_input = needs.keeps_consumed_input,
      .has_input_gradient = needs.has_input_gradient,
      .weight_grad_operand_bytes = needs.weight_grad_operand_bytes,
      .splits_backward = needs.splits_backward,
      .weight_grad_flops = needs.weight_grad_flops,
      .weight_work_tensor_bytes = needs.weight_work_tensor_bytes,
      .weight_work_fixed_tensor_bytes = needs.weight_work_fixed_tensor_bytes,
      .input_workspace_bytes =
          needs.backward_input_temporary_bytes.value_or(needs.backward_temporary_bytes),
      .input_workspace_fixed_tensor_bytes =
          needs.backward_input_fixed_tensor_bytes.value_or(needs.backward_fixed_tensor_bytes),
      .loss_tensor_bytes = {},
      .stated_forward_traffic_bytes = needs.forward_traffic_bytes,
      .stated_backward_traffic_bytes = needs.backward_traffic_bytes};
}

std::vector<LayerCost> layer_costs(const model::ModelPlan& plan) {
  std::vector<LayerCost> costs;
  costs.reserve(plan.layers.size());
  for (const model::LayerPlan& layer : plan.layers) costs.push_back(cost_of(layer));
  if (!costs.empty()) costs.back().loss_tensor_bytes = plan.loss_tensor_bytes;
  return costs;
}

}  // namespace mpipe::plan
