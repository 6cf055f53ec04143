// The rates `mpipe plan` predicts with: this machine's GEMM rates, measured at the shape of the
// model's main fully connected products and the micro-batch's rows, its element-wise traffic over
// that product's output, and its memory traffic on the step's passes over a rank's parameters
// (briefly by default, longer with --calibrate).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/context.h"
#include "model/model_builder.h"
#include "optim/optimizer_config.h"
#include "plan/planner.h"

namespace mpipe::train {

// How long a measurement takes. Both run the main linear shape's forward untimed for 0.2 s first
// (a core that was idle computes slower until it has run a while) and time the deferred weight
// gradient (weight_grads: batched or grouped) at its own rows. kQuick, `mpipe plan`'s default: each
// product timed for at least 20 ms and once through its weight copies, the optimizer step over
// at most 4 Mi parameters (0.3-0.55 s for scaling_mlp at K = 2, 0.65 s with 24 blocks, whose
// weight copies are three times as many: kernels::weight_copies). kFull, `--calibrate`: 0.1 s a
// product and three times through the copies, a rank's whole share of the parameters (seconds on a
// large model).
enum class Calibration { kQuick, kFull };

struct CalibratedRate {
  // On this process's OpenMP threads (plan::MachineRates' fields, not per thread): forwards
  // (and every FLOP not below), input gradients, weight gradients accumulated per micro-batch and
  // deferred to one product over a group's micro-batches (weight_grads: grouped; all M: batched).
  double flops_per_s = 0.0;
  double input_gradient_flops_per_s = 0.0;
  double weight_flops_per_s = 0.0;
  double batched_weight_flops_per_s = 0.0;
  int64_t batched_rows = 0;  // the rows that product was timed at (0: the square GEMM stands in)
  // The shape (m = a micro-batch's rows, k, n; 0: the square GEMM stands in).
  int64_t rows = 0;
  int64_t in = 0;
  int64_t out = 0;
  // The copies of the shape's weight and gradient the products cycled through
  // (kernels::weight_copies; 0: the square GEMM stands in).
  int64_t weight_copies = 0;
  // What was timed: "linear 32 x 1024 -> 1024, weight gradient over 256 rows" or "1024^3 GEMM".
  std::string measured;
};

// The linear layers' shape that carries most of their FLOPs (m = `micro_batch_rows` x the
// positions of an example, k = in, n = out), each product timed by kernels::measure_linear_rates,
// the batched weight gradient at `num_micro_batches` times the rows (the micro-batches of one
// deferred product: M under weight_grads: batched, a group's under grouped; 1: none, the
// accumulating rate stands for it); a model with no linear layer, or whose convolutions (conv2d,
// residual_block, separable_cell) carry more FLOPs than its linear layers, by the 1024³ GEMM peak
// (every rate the same). The products cycle through copies of the shape's weight and gradient as
// large as the model's parameters and their gradients (kernels::weight_copies): a stage's layers
// take turns in the caches, which the ranks on one host share.
CalibratedRate calibrate_gemm_rate(const model::ModelPlan& model, int64_t micro_batch_rows,
                                   int num_micro_batches, kernels::KernelContext& kernels,
                                   Calibration length = Calibration::kFull);

// The memory traffic per second (plan::MachineRates::optimizer_bytes_per_s, on this process's
// OpenMP threads) at which a rank holding `num_params` parameters zeroes its gradients, checks them
// and takes an `optimizer` step, each as a run's step does it: plan::optimizer_passes over the
// parameters' bytes in the median of a few timed repetitions, so that the plan's optimizer time
// is the time measured. Clipping is not timed; the plan charges its passes at this rate.
double calibrate_memory_rate(const optim::OptimizerConfig& optimizer, int64_t num_params);

// The memory traffic per second (plan::MachineRates::bytes_per_s, on this process's OpenMP
// threads) of element-wise work on `rows` x `width` floats: a ReLU layer's forward, handed its
// input, and backward, as a stage runs them (its output and input gradient in blocks malloc hands
// out, each pass after a read of `weight_floats`: a product's weight between two activations),
// over the bytes the time model charges them (nn::LayerNeeds::forward_traffic_bytes and
// backward_traffic_bytes), in the median of repetitions timed for at least `min_seconds`. Its one
// compare per element is the whole of its work: the time is the traffic's.
double calibrate_elementwise_rate(int64_t rows, int64_t width, int64_t weight_floats,
                                  double min_seconds, kernels::KernelContext& kernels);

// The measurements for one rank of a plan of `num_ranks` ranks (its share of the parameters)
// and `num_micro_batches` micro-batches of `micro_batch_rows`, on `base.threads` OpenMP threads:
// `rates` is `base` (its threads and links) with the measured rates per thread: the optimizer
// step's traffic and, where linear layers carry at least half the model's FLOPs, the GEMMs' and
// the element-wise traffic over the main linear shape's output (else base's: a Transformer
// block's attention and norms, a convolution, say little of those).
struct MachineCalibration {
  plan::MachineRates rates;
  CalibratedRate gemm;              // per rank
  double memory_bytes_per_s = 0.0;  // per rank
  // Per rank, and what was timed ("relu over 32 x 1024"); 0 and empty where assumed.
  double elementwise_bytes_per_s = 0.0;
  std::string elementwise_measured;
  double seconds = 0.0;  // what the measurements took
};
MachineCalibration calibrate_machine(const model::ModelPlan& model,
                                     const optim::OptimizerConfig& optimizer,
                                     int64_t micro_batch_rows, int num_micro_batches, int num_ranks,
                                     const plan::MachineRates& base, Calibration length);

}  // namespace mpipe::train
