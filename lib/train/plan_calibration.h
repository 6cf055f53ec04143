// The rates `mpipe plan --calibrate` predicts with: this machine's GEMM rates, measured at the
// shape of the model's main fully connected products and the micro-batch's rows, and its memory
// traffic, measured on the step's passes over a rank's parameters.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/context.h"
#include "model/model_builder.h"
#include "optim/optimizer_config.h"

namespace mpipe::train {

struct CalibratedRate {
  // On this process's OpenMP threads (plan::MachineRates' fields, not per thread): forwards
  // (and every FLOP not below), input gradients, weight gradients accumulated per micro-batch and
  // batched over the step's micro-batches.
  double flops_per_s = 0.0;
  double input_gradient_flops_per_s = 0.0;
  double weight_flops_per_s = 0.0;
  double batched_weight_flops_per_s = 0.0;
  std::string measured;  // what was timed: "linear 32 x 1024 -> 1024" or "1024^3 GEMM"
};

// The linear layers' shape that carries most of their FLOPs (m = `micro_batch_rows` x the
// positions of an example, k = in, n = out), each product timed by kernels::measure_linear_rates,
// the batched weight gradient at `num_micro_batches` times the rows; a model with no linear
// layer, by the 1024³ GEMM peak (every rate the same).
CalibratedRate calibrate_gemm_rate(const model::ModelPlan& model, int64_t micro_batch_rows,
                                   int num_micro_batches, kernels::KernelContext& kernels);

// The memory traffic per second (plan::MachineRates::bytes_per_s, on this process's OpenMP
// threads) at which a rank holding `num_params` parameters zeroes its gradients, checks them and
// takes an `optimizer` step, each as a run's step does it: plan::optimizer_passes over the
// parameters' bytes in the median of a few timed repetitions, so that the plan's optimizer time
// is the time measured. Clipping is not timed; the plan charges its passes at this rate.
double calibrate_memory_rate(const optim::OptimizerConfig& optimizer, int64_t num_params);

}  // namespace mpipe::train
