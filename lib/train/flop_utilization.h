// Model FLOPs utilization: the planner's FLOPs of a step over the ranks' peak FLOP/s, measured at
// start-up by a short GEMM on every rank or given by log.peak_flops.
#pragma once

#include <string>

#include "comm/communicator.h"
#include "kernels/context.h"
#include "log/log_config.h"
#include "log/metrics_writer.h"
#include "plan/planner.h"

namespace mpipe::train {

// A step's FLOPs over the whole world (every stage of every replica), from the planner's counts.
struct StepFlops {
  double model = 0.0;     // forwards and backwards (weight and input gradients)
  double hardware = 0.0;  // also the recomputed forwards the run does
};
StepFlops step_flops(const plan::PipelinePlan& plan, int num_replicas);

// The ranks' peak FLOP/s, and where it came from.
struct WorldPeak {
  double flops_per_s = 0.0;  // the sum over the ranks
  double slowest_rank = 0.0, fastest_rank = 0.0;
  int ranks = 0;
  bool measured = false;      // a GEMM on every rank; else log.peak_flops
  int64_t gemm_size = 0;      // measured: the product's m = k = n
  int threads = 0;            // measured: rank 0's OpenMP threads
  double gemm_seconds = 0.0;  // measured: rank 0's measurement time
};

// Collective over `world`: log.peak_flops for every rank when it is set, else each rank's GEMM
// peak (kernels::measure_gemm_peak at the context's precision and the rank's threads, every rank
// at once, so ranks sharing cores measure their share).
WorldPeak world_peak(const log::LogConfig& config, kernels::KernelContext& kernels,
                     const comm::Communicator& world);

// The start-up line: "peak 61.2 GFLOP/s per rank (measured: 1024^3 f32 GEMM, 1 thread, 0.16 s;
// ranks 60.8-61.5), 122 GFLOP/s over 2 ranks; a step is 1.92 GFLOP of the model (2.4 with
// recompute; MFU counts the model's, HFU also the recomputes)".
std::string describe_peak(const WorldPeak& peak, const StepFlops& flops,
                          const std::string& precision);

// MFU and HFU of `steps` steps that took `seconds`; unknown without a step or a peak.
log::FlopUtilization flop_utilization(const StepFlops& flops, const WorldPeak& peak, double steps,
                                      double seconds);

}  // namespace mpipe::train
