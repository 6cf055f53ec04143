// The GEMM rate `mpipe plan --calibrate` predicts with: this machine's, measured at the shape of
// the model's main fully connected products and the micro-batch's rows.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/context.h"
#include "model/model_builder.h"

namespace mpipe::train {

struct CalibratedRate {
  double flops_per_s = 0.0;  // on this process's OpenMP threads
  std::string measured;      // what was timed: "linear 32 x 1024 -> 1024" or "1024^3 GEMM"
};

// The linear layers' shape that carries most of their FLOPs (m = `micro_batch_rows` x the
// positions of an example, k = in, n = out), timed by kernels::measure_linear_rate; a model with
// no linear layer, by the 1024³ GEMM peak.
CalibratedRate calibrate_gemm_rate(const model::ModelPlan& model, int64_t micro_batch_rows,
                                   kernels::KernelContext& kernels);

}  // namespace mpipe::train
